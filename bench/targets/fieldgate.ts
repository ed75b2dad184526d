// fieldgate as a server under test: the built CLI (`dist/src/cli.js run`) on a free port.
import { existsSync, readFileSync, rmSync } from "node:fs";
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
  /** The server's node flags; default: this checkout's src/runtime-flags.ts. */
  nodeFlags?: readonly string[];
  /** The server's environment beyond the bench's own; default: this checkout's GATEWAY_ENV. */
  env?: Readonly<Record<string, string>>;
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

/**
 * The environment and node flags another checkout's build runs with, read from the shebang of
 * its dist/src/cli.js (`#!/usr/bin/env -S [NAME=value ...] node [flag ...]`): a fieldgate@DIR
 * target measures that build as it ships, not with this checkout's flags.
 */
export function shippedRuntime(root: string): { nodeFlags: string[]; env: Record<string, string> } {
  const first = readFileSync(fieldgateCli(root), "utf8").split("\n", 1)[0]!;
  const m = /^#!\S*env -S (.*)$/.exec(first);
  if (m === null) throw new Error(`${fieldgateCli(root)}: no \`#!/usr/bin/env -S ... node ...\` shebang to take the flags from`);
  const words = m[1]!.split(" ").filter((w) => w !== "");
  const node = words.indexOf("node");
  if (node < 0) throw new Error(`${fieldgateCli(root)}: the shebang does not run node`);
  const env: Record<string, string> = {};
  for (const w of words.slice(0, node)) {
    const eq = w.indexOf("=");
    if (eq <= 0) throw new Error(`${fieldgateCli(root)}: "${w}" in the shebang is not NAME=value`);
    env[w.slice(0, eq)] = w.slice(eq + 1);
  }
  return { nodeFlags: words.slice(node + 1), env };
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
    const { root, nodeFlags = GATEWAY_NODE_FLAGS, env: gatewayEnv = GATEWAY_ENV } = this.options;
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
    const env: NodeJS.ProcessEnv = { ...process.env, ...gatewayEnv, FIELDGATE_DIAGNOSTICS: "1" };
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
        // The gateway's environment (src/runtime-flags.ts) and its own heap and GC report
        // (src/server/diagnostics-report.ts).
        env,
        diagnostics: true,
        listening: /fieldgate: listening on (opc\.tcp:\/\/\S+)/,
      },
      options,
    );
    if (history === undefined && ((options.nodes?.historyTags ?? 0) === 0 || options.config !== undefined || this.options.config !== undefined)) return started;
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
