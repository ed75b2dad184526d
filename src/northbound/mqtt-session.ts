// One MQTT connection of the edge node, through the `mqtt` package (5.x): one CONNECT with its
// will, never reconnected by the library. Sparkplug wants a new bdSeq in the will of every
// CONNECT (§4.2.1.1, tck-id-topics-nbirth-bdseq-increment), and mqtt.js would send the same will
// again on its own reconnects, so the edge node makes a new session for each attempt.
//
// Sparkplug 3.0 §2.5 (tck-id-principles-persistence-clean-session-311): Clean Session true.
// §4.2.1.3 / §6.4.25: the will is the NDEATH, QoS 1, not retained (QoS 0 wills are what some
// brokers and platforms refuse or lose).
import { readFileSync } from "node:fs";
import type { IClientOptions, MqttClient } from "mqtt";
import type { SparkplugConfig } from "../config/northbound-config.js";
import { BROKER_URL } from "../config/northbound-config.js";

type MqttModule = typeof import("mqtt");

export interface SessionHandlers {
  /** CONNACK received. */
  connected(): void;
  message(topic: string, payload: Buffer): void;
  /** The connection ended or could not be made (an error when it was not asked for). */
  closed(error: Error | undefined): void;
}

/** Bytes of unsent MQTT data above which the edge node stores instead of publishing. */
export const CONGESTED_BYTES = 4 * 1024 * 1024;

let mqttModule: Promise<MqttModule> | undefined;

/** The mqtt package, loaded on first use: a gateway without a northbound never loads it. */
export function loadMqtt(): Promise<MqttModule> {
  return (mqttModule ??= import("mqtt"));
}

export interface Will {
  readonly topic: string;
  readonly payload: Buffer;
}

export class MqttSession {
  private readonly client: MqttClient;
  private ended = false;
  private isConnected = false;

  constructor(mqtt: MqttModule, config: SparkplugConfig, clientId: string, will: Will, private readonly handlers: SessionHandlers) {
    const m = BROKER_URL.exec(config.broker)!;
    const tls = m[1] === "mqtts";
    const host = m[2]!.startsWith("[") ? m[2]!.slice(1, -1) : m[2]!;
    const options: IClientOptions = {
      protocol: tls ? "mqtts" : "mqtt",
      host,
      port: m[3] !== undefined ? Number(m[3]) : tls ? 8883 : 1883,
      protocolVersion: 4,
      clientId,
      clean: true,
      keepalive: Math.max(1, Math.round(config.keepAlive / 1000)),
      reconnectPeriod: 0,
      connectTimeout: 10_000,
      will: { topic: will.topic, payload: will.payload, qos: 1, retain: false },
      // Publishes are only made while connected; nothing is queued for a later connection.
      queueQoSZero: false,
      resubscribe: false,
      // mqtt-packet's cache of the numbers 0-65535 as 2-byte Buffers: 65,536 objects (~6 MB of
      // heap) held for good to spare an allocation per packet id and length written.
      writeCache: false,
    };
    if (config.username !== undefined) options.username = config.username;
    if (config.password !== undefined) options.password = config.password;
    if (tls) {
      if (config.ca !== undefined) options.ca = readFileSync(config.ca);
      if (config.cert !== undefined) options.cert = readFileSync(config.cert);
      if (config.key !== undefined) options.key = readFileSync(config.key);
      options.rejectUnauthorized = true;
    }
    const client = (this.client = mqtt.connect(options));
    client.on("connect", () => {
      if (this.ended) return;
      this.isConnected = true;
      handlers.connected();
    });
    client.on("message", (topic, payload) => {
      if (!this.ended) handlers.message(topic, payload);
    });
    let lastError: Error | undefined;
    client.on("error", (err) => {
      lastError = err;
    });
    client.on("close", () => {
      this.isConnected = false;
      if (this.ended) return;
      this.ended = true;
      client.removeAllListeners("message");
      client.end(true);
      handlers.closed(lastError ?? new Error("connection closed by the broker"));
    });
  }

  get connected(): boolean {
    return this.isConnected && !this.ended;
  }

  /** True while more than CONGESTED_BYTES wait to be written to the broker. */
  get congested(): boolean {
    const stream = this.client.stream as { writableLength?: number } | undefined;
    return (stream?.writableLength ?? 0) > CONGESTED_BYTES;
  }

  /** QoS 0, not retained (every Sparkplug message an edge node publishes but the will). */
  publish(topic: string, payload: Buffer, done?: (err?: Error) => void): boolean {
    if (!this.connected) return false;
    this.client.publish(topic, payload, { qos: 0, retain: false }, done);
    return true;
  }

  subscribe(topics: readonly string[]): Promise<void> {
    return new Promise((resolve, reject) => {
      this.client.subscribe(topics as string[], { qos: 1 }, (err, granted) => {
        if (err) reject(err);
        else if (granted?.some((g) => g.qos === 128)) reject(new Error(`the broker refused a subscription: ${granted.filter((g) => g.qos === 128).map((g) => g.topic).join(", ")}`));
        else resolve();
      });
    });
  }

  /**
   * Ends the session on purpose. With a death certificate, it is published first and the
   * DISCONNECT follows it (§5.5 tck-id-operational-behavior-edge-node-intentional-disconnect-*),
   * so the broker drops the will.
   */
  end(death?: Will): Promise<void> {
    if (this.ended) return Promise.resolve();
    this.ended = true;
    const wasConnected = this.isConnected;
    this.isConnected = false;
    return new Promise((resolve) => {
      const finish = () => this.client.end(false, {}, () => resolve());
      if (death && wasConnected) this.client.publish(death.topic, death.payload, { qos: 0, retain: false }, finish);
      else this.client.end(true, {}, () => resolve());
    });
  }
}
