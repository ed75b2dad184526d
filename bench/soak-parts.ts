// The parts of the soak run (bench/soak.ts): the simulated plant whose devices vanish and come
// back, the gateway process with its diagnostics report, and the node-opcua clients that
// subscribe, read and write while counting what they see.
import { GATEWAY_ENV, GATEWAY_NODE_FLAGS } from "../src/runtime-flags.js";
import { spawn, type ChildProcess } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { createInterface } from "node:readline";
import {
  AttributeIds,
  ClientMonitoredItemGroup,
  DataType,
  MessageSecurityMode,
  OPCUAClient,
  SecurityPolicy,
  TimestampsToReturn,
  type ClientSession,
  type ClientSubscription,
  type DataValue,
} from "node-opcua-client";
import { startSimulator, type Simulator } from "../drivers/simulator/index.js";
import { parseDiagnosticsLine, type DiagnosticsSnapshot } from "../src/server/diagnostics-report.js";
import { repoRoot } from "../src/ua/generator/schema.js";

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

// --- the plant ---------------------------------------------------------------------------

export class Plant {
  readonly sims: (Simulator | undefined)[] = [];
  readonly ports: number[] = [];
  readonly down = new Set<number>();

  static async start(count: number): Promise<Plant> {
    const p = new Plant();
    for (let i = 0; i < count; i++) {
      const s = await startSimulator({ host: "127.0.0.1", size: 100 });
      p.sims.push(s);
      p.ports.push(s.port);
    }
    return p;
  }

  /** The slave closes its port: connections drop, new ones are refused. */
  async takeDown(i: number): Promise<void> {
    const s = this.sims[i];
    this.sims[i] = undefined;
    this.down.add(i);
    await s?.close();
  }

  /** A new slave on the same port (the device rebooted). */
  async bringBack(i: number): Promise<void> {
    for (let attempt = 0; ; attempt++) {
      try {
        this.sims[i] = await startSimulator({ host: "127.0.0.1", port: this.ports[i], size: 100 });
        this.down.delete(i);
        return;
      } catch (err) {
        if (attempt >= 20) throw err;
        await sleep(250);
      }
    }
  }

  async close(): Promise<void> {
    await Promise.all(this.sims.map((s) => s?.close()));
  }
}

export const TAGS = [
  { name: "ramp", address: "input:0", type: "uint16", history: true },
  { name: "temperature", address: "input:2", type: "float32", history: true },
  { name: "counter", address: "input:4", type: "uint32", history: false },
  { name: "wave", address: "input:6", type: "int16", history: false },
  { name: "setpoint", address: "holding:0", type: "uint16", history: false, access: "readwrite" },
] as const;
export const HISTORIZED = TAGS.filter((t) => t.history).length;

export function deviceMap(ports: readonly number[]): string {
  const lines = ["devices:"];
  ports.forEach((port, i) => {
    lines.push(
      `  - name: plc${i}`,
      `    driver: modbus-tcp`,
      `    host: 127.0.0.1`,
      `    port: ${port}`,
      `    rate: 1s`,
      `    timeout: 500ms`,
      `    retryBackoff: 500ms`,
      `    maxBackoff: 4s`,
      `    writeRoles: [viewer, operator, admin]`,
      `    tags:`,
    );
    for (const t of TAGS) {
      lines.push(`      - { name: ${t.name}, address: "${t.address}", type: ${t.type}${t.history ? ", history: true" : ""}${"access" in t ? `, access: ${t.access}` : ""} }`);
    }
  });
  return `${lines.join("\n")}\n`;
}

/** `historyCache`: history.cacheSize ("1MiB"), or undefined for the gateway's default. */
export function gatewayYaml(historyCache?: string): string {
  return [
    "server:",
    "  host: 127.0.0.1",
    "  port: 0",
    "  testNamespace: false",
    "dataDir: ./data",
    "devices: ./devices.yaml",
    "security:",
    "  allowAnonymous: true",
    "  securityPolicies: [None]",
    "history:",
    "  flushInterval: 1s",
    ...(historyCache === undefined ? [] : [`  cacheSize: ${historyCache}`]),
    "  retention:",
    "    maxAge: 30d",
    "    maxSize: 1GiB",
    "  storage:",
    "    mode: every",
    "",
  ].join("\n");
}

// --- the gateway process -------------------------------------------------------------------

export class Gateway {
  readonly child: ChildProcess;
  url = "";
  readonly diagnostics: DiagnosticsSnapshot[] = [];
  readonly warnings: string[] = [];
  private waiters: ((s: DiagnosticsSnapshot) => void)[] = [];
  readonly exited: Promise<number | null>;

  constructor(configFile: string) {
    const cli = join(repoRoot(), "dist", "src", "cli.js");
    // With the environment and flags of the installed `fieldgate` command's shebang: the soak measures what runs.
    this.child = spawn(process.execPath, [...GATEWAY_NODE_FLAGS, cli, "run", "--config", configFile], {
      env: { ...process.env, ...GATEWAY_ENV, FIELDGATE_DIAGNOSTICS: "1" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    this.exited = new Promise((resolve) => this.child.once("exit", (code) => resolve(code)));
    createInterface({ input: this.child.stdout! }).on("line", (line) => {
      const d = parseDiagnosticsLine(line);
      if (d) {
        this.diagnostics.push(d);
        for (const w of this.waiters.splice(0)) w(d);
        return;
      }
      const m = /listening on (opc\.tcp:\/\/\S+)/.exec(line);
      if (m) this.url = m[1];
    });
    createInterface({ input: this.child.stderr! }).on("line", (line) => {
      if (this.warnings.length < 200) this.warnings.push(line);
    });
  }

  async ready(timeoutMs = 30_000): Promise<void> {
    const start = Date.now();
    while (this.url === "") {
      if (Date.now() - start > timeoutMs || this.child.exitCode !== null) throw new Error(`gateway did not start: ${this.warnings.join("\n")}`);
      await sleep(50);
    }
  }

  /** One diagnostics line, asked for with SIGUSR2. */
  snapshot(): Promise<DiagnosticsSnapshot> {
    return new Promise((resolve, reject) => {
      const t = setTimeout(() => reject(new Error("no diagnostics line within 5 s")), 5000);
      this.waiters.push((s) => {
        clearTimeout(t);
        resolve(s);
      });
      this.child.kill("SIGUSR2");
    });
  }

  /**
   * The gateway's resident memory split by kind (/proc/PID/smaps_rollup, Linux): anonymous
   * (heaps: V8, SQLite's page cache, malloc) and the rest (mapped files and shared memory, such
   * as the code of node and the WAL index). Undefined where /proc does not have it.
   */
  residentKinds(): { anonBytes: number; fileBytes: number } | undefined {
    try {
      const text = readFileSync(`/proc/${this.child.pid}/smaps_rollup`, "utf8");
      const kb = (name: string): number => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, "m").exec(text)?.[1] ?? NaN) * 1024;
      const rss = kb("Rss");
      const anon = kb("Anonymous");
      if (!Number.isFinite(rss) || !Number.isFinite(anon)) return undefined;
      return { anonBytes: anon, fileBytes: rss - anon };
    } catch {
      return undefined;
    }
  }

  async stop(): Promise<number | null> {
    this.child.kill("SIGTERM");
    const t = setTimeout(() => this.child.kill("SIGKILL"), 30_000);
    const code = await this.exited;
    clearTimeout(t);
    return code;
  }
}

// --- the clients ---------------------------------------------------------------------------

export interface ClientCounters {
  notifications: number;
  badNotifications: number;
  reads: number;
  readErrors: number;
  writes: number;
  writesGood: number;
  writeErrors: number;
  /** Channel faults seen by the client: connection lost, reconnecting, subscription terminated. */
  connectionLost: number;
  reconnections: number;
  subscriptionsTerminated: number;
  sessionClosedByServer: number;
}

export function newCounters(): ClientCounters {
  return {
    notifications: 0,
    badNotifications: 0,
    reads: 0,
    readErrors: 0,
    writes: 0,
    writesGood: 0,
    writeErrors: 0,
    connectionLost: 0,
    reconnections: 0,
    subscriptionsTerminated: 0,
    sessionClosedByServer: 0,
  };
}

/** Per device: when it last turned Bad and Good, as client 0 saw its `ramp`. */
export interface DeviceView {
  good: boolean;
  lastBadAt: number;
  lastGoodAt: number;
  lastStatus: string;
}

export class SoakClient {
  readonly counters = newCounters();
  private client!: OPCUAClient;
  session!: ClientSession;
  private subscription!: ClientSubscription;
  private running = true;
  private loop: Promise<void> | undefined;

  constructor(
    readonly index: number,
    readonly devices: number,
    readonly view: DeviceView[] | undefined,
  ) {}

  async start(url: string): Promise<void> {
    this.client = OPCUAClient.create({
      applicationName: `fieldgate-soak-${this.index}`,
      endpointMustExist: false,
      securityMode: MessageSecurityMode.None,
      securityPolicy: SecurityPolicy.None,
      connectionStrategy: { maxRetry: 100, initialDelay: 200, maxDelay: 2000 },
      requestedSessionTimeout: 60_000,
      keepSessionAlive: true,
    });
    const c = this.counters;
    this.client.on("connection_lost", () => c.connectionLost++);
    this.client.on("connection_reestablished", () => c.reconnections++);
    await this.client.connect(url);
    this.session = await this.client.createSession();
    this.session.on("session_closed", () => c.sessionClosedByServer++);
    this.subscription = await this.session.createSubscription2({
      requestedPublishingInterval: 1000,
      requestedLifetimeCount: 120,
      requestedMaxKeepAliveCount: 10,
      maxNotificationsPerPublish: 0,
      publishingEnabled: true,
      priority: 1,
    });
    this.subscription.on("terminated", () => c.subscriptionsTerminated++);
    const items = [];
    for (let d = 0; d < this.devices; d++) {
      for (const t of TAGS) items.push({ nodeId: `ns=1;s=plc${d}.${t.name}`, attributeId: AttributeIds.Value });
    }
    const group = ClientMonitoredItemGroup.create(this.subscription, items, { samplingInterval: 1000, queueSize: 2, discardOldest: true }, TimestampsToReturn.Both);
    group.on("changed", (item, dv: DataValue, index: number) => {
      c.notifications++;
      const good = dv.statusCode.isGood();
      if (!good) c.badNotifications++;
      // Client 0 keeps the per-device view from each device's first tag (ramp).
      if (this.view && index % TAGS.length === 0) {
        const v = this.view[index / TAGS.length];
        const now = Date.now();
        if (good && !v.good) v.lastGoodAt = now;
        if (!good && v.good) v.lastBadAt = now;
        v.good = good;
        v.lastStatus = dv.statusCode.name;
      }
    });
    await new Promise<void>((resolve) => group.once("initialized", () => resolve()));
    this.loop = this.work();
  }

  /** Reads 20 tags every 2 s, writes one setpoint every 5 s (each client its own device range). */
  private async work(): Promise<void> {
    const c = this.counters;
    let k = 0;
    while (this.running) {
      const nodes = [];
      for (let i = 0; i < 20; i++) {
        const d = (k * 7 + i * 13 + this.index) % this.devices;
        nodes.push({ nodeId: `ns=1;s=plc${d}.${TAGS[i % TAGS.length].name}`, attributeId: AttributeIds.Value });
      }
      try {
        await this.session.read(nodes);
        c.reads++;
      } catch {
        c.readErrors++;
      }
      if (k % 5 === 2) {
        const d = (this.index * 10 + k) % this.devices;
        try {
          const s = await this.session.write({
            nodeId: `ns=1;s=plc${d}.setpoint`,
            attributeId: AttributeIds.Value,
            value: { value: { dataType: DataType.UInt16, value: k % 1000 } },
          });
          c.writes++;
          if (s.isGood()) c.writesGood++;
        } catch {
          c.writeErrors++;
        }
      }
      k++;
      // 2 s between rounds, in short steps so that stop() does not wait long.
      for (let t = 0; t < 10 && this.running; t++) await sleep(200);
    }
  }

  /** System object values by name (ns=1;s=System/<name>). */
  async system(names: readonly string[]): Promise<Record<string, number | null>> {
    const r = await this.session.read(names.map((n) => ({ nodeId: `ns=1;s=System/${n}`, attributeId: AttributeIds.Value })));
    const out: Record<string, number | null> = {};
    names.forEach((n, i) => {
      const v = r[i].value?.value as unknown;
      out[n] = r[i].statusCode.isGood() || typeof v === "boolean" ? (typeof v === "bigint" ? Number(v) : typeof v === "boolean" ? Number(v) : Array.isArray(v) ? Number(v[1]) + Number(v[0]) * 2 ** 32 : (v as number)) : null;
    });
    return out;
  }

  async stop(): Promise<void> {
    this.running = false;
    await this.loop;
    try {
      await this.subscription.terminate();
      await this.session.close();
    } catch {
      // counted through the events already
    }
    await this.client.disconnect();
  }
}

