// A server under test: something the harness starts in a child process, pinned to one core,
// and waits for until it says where it listens. fieldgate is the first target; the node-opcua
// peer of issue 7 (bench/peers/) is another implementation of the same interface.
import { appendFileSync } from "node:fs";
import { spawn, type ChildProcess } from "node:child_process";
import { parseDiagnosticsLine, type DiagnosticsSnapshot } from "../../src/server/diagnostics-report.js";
import { pinnedCommand } from "./proc.js";

/** Nodes a scenario needs beyond the test namespace; the node-opcua peer creates them, fieldgate's config must have them. */
export interface ScenarioNodes {
  /** Writable Int32 `BenchmarkValue<i>`, urn:fieldgate:bench i=1001.. (peer default 100). */
  benchValues?: number;
  /** UInt64 `Counter<k>` in urn:fieldgate:bench (i=k, k+100 past 1000) that count their samples. */
  counters?: number;
  /** Device-like UInt16 tags (`urn:fieldgate:devices`, `s=plc<d>.tag<t>`; fieldgate: simulator devices). */
  deviceTags?: number;
  /** The first N of deviceTags keep history (`history: true`), in a database of the case's own. fieldgate only. */
  historyTags?: number;
  /**
   * A Double node with stored history to read (BENCH_HISTORY_NODE_TEXT of
   * bench/scenarios/history-read-load.ts): `samples` values from `startTime`, one every
   * `intervalMs`, stored before the server starts. fieldgate only (bench/targets/fieldgate-history.ts).
   */
  history?: { samples: number; startTime: number; intervalMs: number };
}

export interface TargetStartOptions {
  /** CPU to pin the server to (taskset -c); undefined leaves it unpinned. */
  cpu?: number;
  /** Give up when the server has not said it listens within this time. */
  startTimeoutMs?: number;
  /** gateway.yaml for fieldgate (ignored by other targets): a scenario that needs its own config. */
  config?: string;
  /** Nodes the scenario needs (the peer builds them; fieldgate gets them from `config`). */
  nodes?: ScenarioNodes;
}

export interface RunningServer {
  readonly target: string;
  readonly pid: number;
  /** The endpoint URL as the server printed it (sent in Hello). */
  readonly endpointUrl: string;
  /** Where the load client connects. */
  readonly host: string;
  readonly port: number;
  /** Time from spawn() to the listening line on stdout, ms. */
  readonly startToListeningMs: number;
  /** The CPU it is pinned to, or undefined when it is not (no taskset, or no CPU given). */
  readonly pinnedCpu: number | undefined;
  /** The last lines the server wrote (stdout and stderr), for error messages. */
  outputTail(): string;
  /** Calls `fn` with every line the server writes from now on (stdout and stderr, diagnostics lines aside). */
  onLine(fn: (line: string) => void): void;
  /** True once the process has exited (a crash under load shows up here). */
  readonly exited: boolean;
  /**
   * True when the server answers SIGUSR2 with a `diagnostics:` line (heap, GC pauses); only
   * then may anyone send it SIGUSR2 (Node's default action for it ends the process).
   */
  readonly diagnostics: boolean;
  /** The diagnostics lines received so far, oldest first. */
  readonly reports: readonly DiagnosticsSnapshot[];
  stop(): Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

export interface ServerTarget {
  readonly name: string;
  start(options: TargetStartOptions): Promise<RunningServer>;
}

export interface SpawnSpec {
  target: string;
  command: string;
  args: readonly string[];
  cwd: string;
  env?: NodeJS.ProcessEnv;
  /** Matches the listening line; group 1 is the endpoint URL (opc.tcp://host:port...). */
  listening: RegExp;
  /** The server prints `diagnostics:` lines on SIGUSR2 (src/server/diagnostics-report.ts). */
  diagnostics?: boolean;
}

const TAIL_LINES = 40;

class SpawnedServer implements RunningServer {
  endpointUrl = "";
  host = "127.0.0.1";
  port = 0;
  startToListeningMs = NaN;
  exited = false;
  diagnostics = false;
  readonly reports: DiagnosticsSnapshot[] = [];
  private readonly tail: string[] = [];
  private readonly lineListeners: ((line: string) => void)[] = [];
  private exitWait: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;

  constructor(
    readonly target: string,
    readonly child: ChildProcess,
    readonly pinnedCpu: number | undefined,
  ) {
    this.exitWait = new Promise((resolve) => {
      child.once("exit", (code, signal) => {
        this.exited = true;
        resolve({ code, signal });
      });
    });
  }

  get pid(): number {
    return this.child.pid ?? -1;
  }

  remember(line: string): void {
    if (this.diagnostics) {
      const report = parseDiagnosticsLine(line);
      if (report !== null) {
        this.reports.push(report);
        return;
      }
    }
    this.tail.push(line);
    if (this.tail.length > TAIL_LINES) this.tail.shift();
    for (const fn of this.lineListeners) fn(line);
  }

  onLine(fn: (line: string) => void): void {
    this.lineListeners.push(fn);
  }

  outputTail(): string {
    return this.tail.join("\n");
  }

  waitExit(): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
    return this.exitWait;
  }

  async stop(): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
    if (!this.exited) {
      this.child.kill("SIGTERM");
      const timer = setTimeout(() => {
        if (!this.exited) this.child.kill("SIGKILL");
      }, 3000);
      try {
        return await this.exitWait;
      } finally {
        clearTimeout(timer);
      }
    }
    return this.exitWait;
  }
}

/** Parses `opc.tcp://host:port[/path]`; a wildcard host is reached on loopback. */
export function parseEndpointUrl(url: string): { host: string; port: number } {
  const m = /^opc\.tcp:\/\/(\[[^\]]+\]|[^:/]+):(\d+)/.exec(url);
  if (!m) throw new Error(`not an opc.tcp URL with a port: ${url}`);
  let host = m[1].startsWith("[") ? m[1].slice(1, -1) : m[1];
  if (host === "0.0.0.0" || host === "::" || host === "") host = "127.0.0.1";
  return { host, port: Number(m[2]) };
}

/** Spawns a server process (pinned when asked and possible) and resolves once it listens. */
export function spawnServer(spec: SpawnSpec, options: TargetStartOptions): Promise<RunningServer> {
  const cmd = pinnedCommand(options.cpu, spec.command, spec.args);
  const t0 = performance.now();
  const child = spawn(cmd.command, cmd.args, {
    cwd: spec.cwd,
    env: spec.env ?? process.env,
    stdio: ["ignore", "pipe", "pipe"],
  });
  const server = new SpawnedServer(spec.target, child, cmd.pinned ? options.cpu : undefined);
  server.diagnostics = spec.diagnostics === true;
  return new Promise<RunningServer>((resolve, reject) => {
    let settled = false;
    const timeoutMs = options.startTimeoutMs ?? 15000;
    const timer = setTimeout(() => {
      if (settled) return;
      settled = true;
      void server.stop();
      reject(new Error(`${spec.target} did not print its listening line within ${timeoutMs} ms\n${server.outputTail()}`));
    }, timeoutMs);
    // FIELDGATE_BENCH_SERVER_LOG=FILE keeps every line the server writes (e.g. with --trace-gc).
    const keep = process.env.FIELDGATE_BENCH_SERVER_LOG;
    const lines = (stream: NodeJS.ReadableStream, watch: boolean): void => {
      let pending = "";
      stream.setEncoding("utf8");
      stream.on("data", (text: string) => {
        pending += text;
        let nl: number;
        while ((nl = pending.indexOf("\n")) >= 0) {
          const line = pending.slice(0, nl).replace(/\r$/, "");
          pending = pending.slice(nl + 1);
          server.remember(line);
          if (keep) appendFileSync(keep, `${line}\n`);
          if (!watch || settled) continue;
          const m = spec.listening.exec(line);
          if (!m) continue;
          const elapsed = performance.now() - t0;
          try {
            const { host, port } = parseEndpointUrl(m[1]);
            server.endpointUrl = m[1];
            server.host = host;
            server.port = port;
            server.startToListeningMs = elapsed;
            settled = true;
            clearTimeout(timer);
            resolve(server);
          } catch (err) {
            settled = true;
            clearTimeout(timer);
            void server.stop();
            reject(err);
          }
        }
      });
    };
    // Keep draining both pipes for the whole run: a full pipe would block the server.
    if (child.stdout) lines(child.stdout, true);
    if (child.stderr) lines(child.stderr, false);
    child.once("error", (err) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      reject(err);
    });
    void server.waitExit().then(({ code, signal }) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      reject(new Error(`${spec.target} exited (code ${code}, signal ${signal}) before listening\n${server.outputTail()}`));
    });
  });
}
