// The `echo` and `floor` targets: a UA-TCP responder that answers every Read from a canned frame,
// with no decoding and no service work (canned-responder.ts), in its own process.
// - echo: plain `node`. Its figures are the ceiling that the load client and Node's socket I/O
//   allow on this machine; a server figure near it means the client, not the server, was the limit.
// - floor: the same responder run as the gateway runs (its node flags and environment, from
//   src/runtime-flags.ts). Its CPU per Read and its latency are what Node itself costs for a
//   Read on this path, so that a fieldgate figure beside it splits into "what Node costs" and
//   "what fieldgate adds" (`--peer floor` gives fieldgate / floor per figure).
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { GATEWAY_ENV, GATEWAY_NODE_FLAGS } from "../../src/runtime-flags.js";
import { spawnServer, type RunningServer, type ServerTarget, type TargetStartOptions } from "../harness/target.js";

export function echoServerPath(): string {
  return fileURLToPath(new URL("./echo-server.js", import.meta.url));
}

export interface EchoTargetOptions {
  /** The target's name in reports (default echo). */
  readonly name?: string;
  /** Node flags of the responder's process (default none). */
  readonly nodeFlags?: readonly string[];
  /** Environment beyond the bench's own (default none). */
  readonly env?: Readonly<Record<string, string>>;
}

/** The target name of the responder run with the gateway's flags. */
export const FLOOR_TARGET = "floor";

export class EchoTarget implements ServerTarget {
  readonly name: string;

  constructor(
    private readonly root: string,
    private readonly options: EchoTargetOptions = {},
  ) {
    this.name = options.name ?? "echo";
  }

  start(options: TargetStartOptions): Promise<RunningServer> {
    const entry = echoServerPath();
    if (!existsSync(entry)) return Promise.reject(new Error(`${entry} is missing: build first (npm run build)`));
    return spawnServer(
      {
        target: this.name,
        command: process.execPath,
        args: [...(this.options.nodeFlags ?? []), entry, "--port", "0"],
        cwd: this.root,
        env: this.options.env === undefined ? undefined : { ...process.env, ...this.options.env },
        listening: /echo: listening on (opc\.tcp:\/\/\S+)/,
      },
      options,
    );
  }
}

/** The floor: the canned responder with the gateway's node flags and environment. */
export function floorTarget(root: string): EchoTarget {
  return new EchoTarget(root, { name: FLOOR_TARGET, nodeFlags: GATEWAY_NODE_FLAGS, env: GATEWAY_ENV });
}
