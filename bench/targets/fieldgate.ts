// fieldgate as a server under test: the built CLI (`dist/src/cli.js run`) on a free port.
import { existsSync, rmSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { GATEWAY_ENV, GATEWAY_NODE_FLAGS } from "../../src/runtime-flags.js";
import { writeBenchConfig } from "./fieldgate-config.js";
import { HISTORY_PRELOAD_ENV, type HistoryPreloadParams } from "./fieldgate-history.js";
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

/**
 * The preload that gives a case its stored history (ScenarioNodes.history), as built: the server
 * process runs plain node, so when this module runs from its source (vitest) it still hands over
 * dist/'s.
 */
function historyPreload(): string {
  const here = fileURLToPath(import.meta.url);
  const dir = here.endsWith(".ts") ? join(dirname(here), "..", "..", "dist", "bench", "targets") : dirname(here);
  return pathToFileURL(join(dir, "fieldgate-history.js")).href;
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
    const { root, nodeFlags = GATEWAY_NODE_FLAGS } = this.options;
    const cli = fieldgateCli(root);
    if (!existsSync(cli)) {
      return Promise.reject(new Error(`${cli} is missing: build first (npm run build)`));
    }
    // A config given to the target or the case is used as it is; otherwise one derived from
    // config/gateway.yaml for this case (fieldgate-config.ts says how).
    let config = options.config ?? this.options.config;
    const history = options.nodes?.history;
    if (history !== undefined && config !== undefined) {
      // The samples would go into that config's own database.
      return Promise.reject(new Error("a case with stored history runs on a config derived for it: leave out --config"));
    }
    if (config === undefined) {
      const base = defaultFieldgateConfig(root);
      if (base === undefined) return Promise.reject(new Error(`${join(root, "config", "gateway.yaml")} is missing`));
      config = writeBenchConfig(base, options.nodes ?? {}, this.options.dataDir);
    }
    // FIELDGATE_BENCH_NODE_FLAGS adds flags for one run (e.g. "--cpu-prof --cpu-prof-dir=/tmp/p").
    const extra = (process.env.FIELDGATE_BENCH_NODE_FLAGS ?? "").split(" ").filter((f) => f !== "");
    const preload = history !== undefined ? ["--import", historyPreload()] : [];
    const args = [...nodeFlags, ...extra, ...preload, cli, "run", "--config", config, "--port", "0"];
    const env: NodeJS.ProcessEnv = { ...process.env, ...GATEWAY_ENV, FIELDGATE_DIAGNOSTICS: "1" };
    if (history !== undefined) {
      const params: HistoryPreloadParams = { root, config, ...history };
      env[HISTORY_PRELOAD_ENV] = JSON.stringify(params);
    }
    const started = spawnServer(
      {
        target: this.name,
        command: process.execPath,
        args,
        cwd: root,
        // The gateway's own heap and GC report (src/server/diagnostics-report.ts).
        env,
        diagnostics: true,
        listening: /fieldgate: listening on (opc\.tcp:\/\/\S+)/,
      },
      options,
    );
    if (history === undefined) return started;
    // The case's history database goes with its config folder once the server has stopped.
    const dir = dirname(config);
    return started.then(
      (server) => {
        const stop = server.stop.bind(server);
        (server as { stop: RunningServer["stop"] }).stop = async () => {
          try {
            return await stop();
          } finally {
            rmSync(dir, { recursive: true, force: true });
          }
        };
        return server;
      },
      (err: unknown) => {
        rmSync(dir, { recursive: true, force: true });
        throw err;
      },
    );
  }
}
