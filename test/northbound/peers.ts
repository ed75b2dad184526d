// Peers of the northbound tests that nobody here wrote: Debian's mosquitto broker, started on
// an ephemeral loopback port, and a Sparkplug host application made of the `mqtt` package and
// Eclipse Tahu's sparkplug-payload decoder (it publishes STATE as a Sparkplug 3.0 primary host).
import { spawn, type ChildProcess } from "node:child_process";
import { accessSync, constants, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import net from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import mqtt, { type MqttClient } from "mqtt";
import sparkplug from "sparkplug-payload";

export const MOSQUITTO = "/usr/sbin/mosquitto";
export const HAVE_MOSQUITTO = ((): boolean => {
  try {
    accessSync(MOSQUITTO, constants.X_OK);
    return true;
  } catch {
    return false;
  }
})();
/** In CI a missing broker fails the tests instead of skipping them. */
export const SKIP_BROKER = !HAVE_MOSQUITTO && process.env.CI !== "true";
export const MOSQUITTO_MISSING = "needs Debian's mosquitto (apt-get install mosquitto)";

const codec = sparkplug.get("spBv1.0")!;

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const port = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(port));
    });
  });
}

function waitForPort(port: number, ms: number): Promise<void> {
  const until = Date.now() + ms;
  return new Promise((resolve, reject) => {
    const attempt = () => {
      const s = net.connect(port, "127.0.0.1");
      s.once("connect", () => {
        s.destroy();
        resolve();
      });
      s.once("error", () => {
        s.destroy();
        if (Date.now() > until) reject(new Error(`nothing listens on 127.0.0.1:${port}`));
        else setTimeout(attempt, 50);
      });
    };
    attempt();
  });
}

export interface Broker {
  readonly port: number;
  readonly url: string;
  /** Stops the broker (SIGTERM, or SIGKILL: no will sent, no socket closed on purpose) and waits for it to exit. */
  stop(signal?: "SIGTERM" | "SIGKILL"): Promise<void>;
  /** Starts it again on the same port. */
  start(): Promise<void>;
  /** Stops it for good and removes its folder. */
  close(): Promise<void>;
}

export async function startBroker(): Promise<Broker> {
  const dir = mkdtempSync(join(tmpdir(), "fieldgate-mosquitto-"));
  const port = await freePort();
  const conf = join(dir, "mosquitto.conf");
  writeFileSync(conf, `listener ${port} 127.0.0.1\nallow_anonymous true\npersistence false\nlog_dest stderr\nlog_type error\nmax_queued_messages 100000\n`);
  let child: ChildProcess | undefined;
  const start = async () => {
    const c = spawn(MOSQUITTO, ["-c", conf], { stdio: ["ignore", "ignore", "pipe"] });
    let stderr = "";
    c.stderr!.on("data", (d: Buffer) => (stderr += d.toString()));
    child = c;
    try {
      await waitForPort(port, 10_000);
    } catch (err) {
      throw new Error(`mosquitto did not start: ${(err as Error).message}; ${stderr}`);
    }
  };
  const stop = (signal: "SIGTERM" | "SIGKILL" = "SIGTERM") =>
    new Promise<void>((resolve) => {
      const c = child;
      child = undefined;
      if (c === undefined || c.exitCode !== null || c.signalCode !== null) return resolve();
      c.once("exit", () => resolve());
      c.kill(signal);
    });
  await start();
  return {
    port,
    url: `mqtt://127.0.0.1:${port}`,
    stop,
    start,
    async close() {
      await stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** A metric as Tahu's decoder gives it (64-bit values as Long objects; toNumber() them). */
export interface TahuMetric {
  name?: string;
  alias?: { toNumber(): number } | number;
  timestamp?: { toNumber(): number } | number;
  type: string;
  value: unknown;
  isHistorical?: boolean;
  properties?: Record<string, { type: string; value: unknown }>;
}

export interface TahuPayload {
  timestamp?: { toNumber(): number } | number;
  seq?: { toNumber(): number } | number;
  metrics?: TahuMetric[];
}

export interface Received {
  readonly topic: string;
  readonly type: string;
  readonly group: string;
  readonly node: string;
  readonly device: string | undefined;
  readonly payload: TahuPayload;
  readonly at: number;
}

export function num(v: unknown): number {
  if (typeof v === "number") return v;
  if (typeof v === "bigint") return Number(v);
  if (v !== null && typeof v === "object" && "toNumber" in v) return (v as { toNumber(): number }).toNumber();
  return NaN;
}

/** Encodes a payload with Tahu's encoder (commands from the host). */
export function tahuEncode(p: unknown): Buffer {
  return Buffer.from(codec.encodePayload(p as never));
}

/**
 * A Sparkplug host application: subscribes to spBv1.0/#, decodes every message with Tahu's
 * decoder, and (with an id) is a primary host: will STATE offline, birth STATE online, both
 * retained at QoS 1, as Sparkplug 3.0 §4.2.3 says.
 */
export class HostApp {
  readonly received: Received[] = [];
  client!: MqttClient;
  private stateTimestamp = 0;
  private waiters: (() => void)[] = [];

  constructor(
    readonly url: string,
    readonly hostId?: string,
  ) {}

  /** Connects (again: the messages received so far are kept), with a new STATE timestamp. */
  async connect(): Promise<void> {
    const stateTopic = this.hostId === undefined ? undefined : `spBv1.0/STATE/${this.hostId}`;
    const ts = (this.stateTimestamp = Math.max(Date.now(), this.stateTimestamp + 1));
    this.client = mqtt.connect(this.url, {
      clientId: `host-${this.hostId ?? "plain"}-${process.pid}-${Math.random().toString(16).slice(2)}`,
      clean: true,
      reconnectPeriod: 0,
      will: stateTopic ? { topic: stateTopic, payload: Buffer.from(JSON.stringify({ online: false, timestamp: ts })), qos: 1, retain: true } : undefined,
    });
    this.client.on("message", (topic, payload) => this.onMessage(topic, payload));
    this.client.on("error", () => undefined);
    await new Promise<void>((resolve, reject) => {
      this.client.once("connect", () => resolve());
      this.client.once("error", reject);
    });
    await this.client.subscribeAsync(stateTopic ? ["spBv1.0/#"] : ["spBv1.0/#"], { qos: 1 });
    if (stateTopic) await this.client.publishAsync(stateTopic, JSON.stringify({ online: true, timestamp: ts }), { qos: 1, retain: true });
  }

  /** Disconnects without a DISCONNECT packet: the broker publishes the will (STATE offline). */
  async vanish(): Promise<void> {
    this.client.stream.destroy();
    await new Promise((r) => setTimeout(r, 50));
    this.client.end(true);
  }

  async close(): Promise<void> {
    if (this.client === undefined) return;
    if (this.hostId !== undefined && this.client.connected) {
      await this.client.publishAsync(`spBv1.0/STATE/${this.hostId}`, JSON.stringify({ online: false, timestamp: this.stateTimestamp }), { qos: 1, retain: true });
    }
    await this.client.endAsync();
  }

  publish(topic: string, payload: Buffer): Promise<unknown> {
    return this.client.publishAsync(topic, payload, { qos: 0 });
  }

  private onMessage(topic: string, payload: Buffer): void {
    const parts = topic.split("/");
    if (parts[1] === "STATE") return;
    let decoded: TahuPayload;
    try {
      decoded = codec.decodePayload(payload) as TahuPayload;
    } catch (err) {
      throw new Error(`Tahu could not decode ${topic}: ${(err as Error).message}`);
    }
    this.received.push({ topic, type: parts[2]!, group: parts[1]!, node: parts[3]!, device: parts[4], payload: decoded, at: Date.now() });
    const w = this.waiters;
    this.waiters = [];
    for (const f of w) f();
  }

  /** Waits until `pred` holds for the messages received, or fails after `ms`. */
  async waitFor<T>(what: string, pred: () => T | undefined | false, ms = 15_000): Promise<T> {
    const until = Date.now() + ms;
    for (;;) {
      const r = pred();
      if (r) return r;
      const left = until - Date.now();
      if (left <= 0) throw new Error(`host application: no ${what} within ${ms} ms; got ${this.summary()}`);
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, Math.min(left, 200));
        this.waiters.push(() => {
          clearTimeout(t);
          resolve();
        });
      });
    }
  }

  /** The messages of a type (and device), in arrival order. */
  of(type: string, device?: string): Received[] {
    return this.received.filter((r) => r.type === type && (device === undefined || r.device === device));
  }

  summary(): string {
    const counts = new Map<string, number>();
    for (const r of this.received) counts.set(`${r.type}${r.device ? `/${r.device}` : ""}`, (counts.get(`${r.type}${r.device ? `/${r.device}` : ""}`) ?? 0) + 1);
    return JSON.stringify(Object.fromEntries(counts));
  }
}

/** The metric named `name` of a birth. */
export function metricNamed(p: TahuPayload, name: string): TahuMetric | undefined {
  return p.metrics?.find((m) => m.name === name);
}
