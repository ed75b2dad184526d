// fieldgate as a server under test: the built CLI (`dist/src/cli.js run`) on a free port.
import { existsSync } from "node:fs";
import { join } from "node:path";
import { writeBenchConfig } from "./fieldgate-config.js";
import { spawnServer, type RunningServer, type ServerTarget, type TargetStartOptions } from "../harness/target.js";

export interface FieldgateTargetOptions {
  /** Repository root: where dist/src/cli.js and config/ are. */
  root: string;
  /** gateway.yaml to run with, as it is; default: one derived from config/gateway.yaml per case. */
  config?: string;
  /** dataDir of the derived configs (default $TMPDIR/fieldgate-bench-data, kept across runs). */
  dataDir?: string;
  /** Extra node flags for the server (e.g. --max-semi-space-size). */
  nodeFlags?: readonly string[];
  /** The target's name in reports (default fieldgate; `fieldgate@DIR` for another checkout). */
  name?: string;
}

export function fieldgateCli(root: string): string {
  return join(root, "dist", "src", "cli.js");
}

export function defaultFieldgateConfig(root: string): string | undefined {
  const path = join(root, "config", "gateway.yaml");
  return existsSync(path) ? path : undefined;
}

export class FieldgateTarget implements ServerTarget {
  readonly name: string;

  constructor(private readonly options: FieldgateTargetOptions) {
    this.name = options.name ?? "fieldgate";
  }

  start(options: TargetStartOptions): Promise<RunningServer> {
    // The flags the gateway ships with (src/cli.ts's shebang, npm start): measure what runs.
    const { root, nodeFlags = ["--optimize-for-size", "--no-concurrent-recompilation", "--harmony-rab-gsab-transfer"] } = this.options;
    const cli = fieldgateCli(root);
    if (!existsSync(cli)) {
      return Promise.reject(new Error(`${cli} is missing: build first (npm run build)`));
    }
    // A config given to the target or the case is used as it is; otherwise one derived from
    // config/gateway.yaml for this case (fieldgate-config.ts says how).
    let config = options.config ?? this.options.config;
    if (config === undefined) {
      const base = defaultFieldgateConfig(root);
      if (base === undefined) return Promise.reject(new Error(`${join(root, "config", "gateway.yaml")} is missing`));
      config = writeBenchConfig(base, options.nodes ?? {}, this.options.dataDir);
    }
    const args = [...nodeFlags, cli, "run", ...(config ? ["--config", config] : []), "--port", "0"];
    return spawnServer(
      {
        target: this.name,
        command: process.execPath,
        args,
        cwd: root,
        // The gateway's own heap and GC report (src/server/diagnostics-report.ts).
        // And glibc's mmap threshold, as src/cli.ts's shebang and npm start set it.
        env: { ...process.env, FIELDGATE_DIAGNOSTICS: "1", MALLOC_MMAP_THRESHOLD_: "65536" },
        diagnostics: true,
        listening: /fieldgate: listening on (opc\.tcp:\/\/\S+)/,
      },
      options,
    );
  }
}
