// The `echo` target: a UA-TCP responder that answers every Read from a canned frame, with no
// decoding and no service work (canned-responder.ts). Its figures are the ceiling that the
// load client and Node's socket I/O allow on this machine; a server figure near it means the
// client, not the server, was the limit.
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { spawnServer, type RunningServer, type ServerTarget, type TargetStartOptions } from "../harness/target.js";

export function echoServerPath(): string {
  return fileURLToPath(new URL("./echo-server.js", import.meta.url));
}

export class EchoTarget implements ServerTarget {
  readonly name = "echo";

  constructor(private readonly root: string) {}

  start(options: TargetStartOptions): Promise<RunningServer> {
    const entry = echoServerPath();
    if (!existsSync(entry)) return Promise.reject(new Error(`${entry} is missing: build first (npm run build)`));
    return spawnServer(
      {
        target: this.name,
        command: process.execPath,
        args: [entry, "--port", "0"],
        cwd: this.root,
        listening: /echo: listening on (opc\.tcp:\/\/\S+)/,
      },
      options,
    );
  }
}
