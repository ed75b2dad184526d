// The node-opcua peer as a server under test: node-opcua-server (devDependency, pinned) in its
// own process with the nodes the scenario asks for (node-opcua-server.ts), the diagnostics
// report preloaded, pinned and timed like fieldgate.
import { existsSync } from "node:fs";
import { fileURLToPath, pathToFileURL } from "node:url";
import { spawnServer, type RunningServer, type ServerTarget, type TargetStartOptions } from "../harness/target.js";

export const NODE_OPCUA_PEER = "node-opcua";

export function peerServerPath(): string {
  return fileURLToPath(new URL("./node-opcua-server.js", import.meta.url));
}

export function peerPreloadPath(): string {
  return fileURLToPath(new URL("./diagnostics-preload.js", import.meta.url));
}

export class NodeOpcuaTarget implements ServerTarget {
  readonly name = NODE_OPCUA_PEER;

  constructor(private readonly root: string) {}

  start(options: TargetStartOptions): Promise<RunningServer> {
    const entry = peerServerPath();
    if (!existsSync(entry)) return Promise.reject(new Error(`${entry} is missing: build first (npm run build)`));
    const nodes = options.nodes ?? {};
    const args = [
      "--import",
      pathToFileURL(peerPreloadPath()).href,
      entry,
      "--port",
      "0",
      "--bench-values",
      String(nodes.benchValues ?? 100),
      "--counters",
      String(nodes.counters ?? 0),
      "--tags",
      String(nodes.deviceTags ?? 0),
    ];
    return spawnServer(
      {
        target: this.name,
        command: process.execPath,
        args,
        cwd: this.root,
        diagnostics: true,
        listening: /node-opcua: listening on (opc\.tcp:\/\/\S+)/,
      },
      // node-opcua loads the whole namespace 0 (seconds on this machine, more with 10k tags).
      { ...options, startTimeoutMs: options.startTimeoutMs ?? 60_000 },
    );
  }
}
