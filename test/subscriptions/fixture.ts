// An engine on a FakeClock for exact, wall-time-free tests: namespace 0, the bench namespace at
// index 1 (counters polled every 10 ms by its in-process driver) and a MemoryNamespace, a fake
// session and channel, and helpers that call the engine as the services do and decode what it
// answers with the generated decoders.
import { benchDeviceMap, counterOf, createBenchNamespace } from "../../src/testing/bench-namespace.js";
import type { BenchDriver } from "../../drivers/bench/index.js";
import { builtinDrivers } from "../../drivers/builtin.js";
import { DeviceRuntime } from "../../src/devices/device-runtime.js";
import { ValueCache } from "../../src/values/value-cache.js";
import { MemoryNamespace, type MemoryVariable } from "../../src/address-space/memory-namespace.js";
import { NamespaceRegistry } from "../../src/address-space/namespace-registry.js";
import { Ns0Manager } from "../../src/address-space/ns0-manager.js";
import { AccessLevel } from "../../src/address-space/ua-node.js";
import { FakeClock } from "../../src/sampling/clock.js";
import { DeadlineScheduler } from "../../src/sampling/scheduler.js";
import { SubscriptionEngine } from "../../src/subscriptions/engine.js";
import { createMonitoredItems } from "../../src/subscriptions/items.js";
import type { SubscriptionLimits } from "../../src/subscriptions/limits.js";
import type { PublishAnswer, PublishChannel, SubscriptionSession } from "../../src/subscriptions/publisher.js";
import { BinaryReader } from "../../src/ua/binary-reader.js";
import { BinaryWriter } from "../../src/ua/binary-writer.js";
import { BuiltinType, VariantArrayType, numericNodeId, stringNodeId, type DataValue, type ExtensionObject, type NodeId } from "../../src/ua/builtins.js";
import { UaStatusError } from "../../src/ua/errors.js";
import { MonitoringMode, TimestampsToReturn } from "../../src/ua/generated/enums.js";
import { AttributeIds, ObjectIds } from "../../src/ua/generated/node-ids.js";
import {
  decodeNotificationMessage,
  decodePublishResponse,
  type DataChangeNotification,
  type MonitoredItemCreateResult,
  type NotificationMessage,
  type PublishResponse,
  type StatusChangeNotification,
  type SubscriptionAcknowledgement,
} from "../../src/ua/generated/types.js";
import { Slicer } from "../../src/sampling/slices.js";
import { testSlicer } from "../helpers/slicer.js";

/** The fixture's channel: `sendBusy` set by hand stands for a large response leaving in slices; `free()` ends it. */
export interface FixtureChannel extends PublishChannel {
  isOpen: boolean;
  sendBusy: boolean;
  free(): void;
}

export interface Answer {
  /** Fake clock time when the answer came. */
  t: number;
  response?: PublishResponse;
  status?: number;
}

export class Fixture {
  readonly clock = new FakeClock(0);
  readonly scheduler = new DeadlineScheduler(this.clock);
  readonly registry = new NamespaceRegistry();
  readonly values = new ValueCache();
  /** The bench namespace's counters: counter k's value, and the counter a NodeId names (0: none). */
  readonly bench: { count(k: number): number; counterOf(nodeId: NodeId): number };
  readonly runtime: DeviceRuntime;
  readonly mem: MemoryNamespace;
  readonly engine: SubscriptionEngine;
  readonly answers: Answer[] = [];
  /** Responses sent, in order, until the request they answer settles (answers keep the order of settling). */
  private readonly sent: PublishResponse[] = [];
  readonly channel = this.newChannel();

  /** The bench devices' start (apply). */
  private readonly started: Promise<unknown>;

  /** A fixture whose bench devices have started. */
  static async start(limits: Partial<SubscriptionLimits> = {}, counters = 10, slices: number | Slicer = Infinity): Promise<Fixture> {
    const f = new Fixture(limits, counters, slices);
    await f.started;
    return f;
  }

  /**
   * `slices`: the engine's slicer, or the budget of one on the fixture's clock and scheduler, for
   * building a Publish (default: no limit, so messages are exact).
   */
  private constructor(limits: Partial<SubscriptionLimits>, counters: number, slices: number | Slicer) {
    new Ns0Manager(this.registry, {
      applicationUri: "urn:test",
      buildInfo: { productUri: "urn:test", manufacturerName: "t", productName: "t", softwareVersion: "0", buildNumber: "0", buildDate: 0 },
    });
    const bench = createBenchNamespace(this.registry, this.values);
    // On the fake clock a slice is never spent: the devices start in apply's first slice, with no
    // turn of the loop and no fake time in between (Fixture.start awaits it), and the counters
    // are polled from t = 0.
    const drivers = builtinDrivers();
    this.runtime = new DeviceRuntime({ scheduler: this.scheduler, clock: this.clock, nodes: bench, values: this.values, drivers, slicer: testSlicer(this.clock) });
    this.started = this.runtime.apply(benchDeviceMap(counters, BENCH_RATE, drivers));
    const driver = () => this.runtime.driverOf("Counters") as BenchDriver;
    this.bench = { count: (k) => driver().count(k), counterOf: (nodeId) => counterOf(nodeId, counters) };
    this.mem = new MemoryNamespace(this.registry.register("urn:fixture"), this.registry, { values: this.values, wallNow: () => this.clock.wallNow() });
    this.registry.register("urn:fixture", this.mem);
    this.engine = new SubscriptionEngine({
      registry: this.registry,
      scheduler: this.scheduler,
      clock: this.clock,
      limits: { minPublishingInterval: 10, minSamplingInterval: 10, ...limits },
      // A budget of Infinity: no limit, and no look at the sampling deadlines either.
      slicer:
        typeof slices !== "number" ? slices : slices === Infinity ? new Slicer({ budgetMs: Infinity, clock: this.clock }) : new Slicer({ budgetMs: slices, deadlines: this.scheduler, clock: this.clock }),
    });
  }

  session(id = 1, userId = ""): SubscriptionSession {
    return { sessionId: numericNodeId(id), userId };
  }

  variable(name: string, options: { feedInterval?: number; type?: BuiltinType; value?: unknown } = {}): MemoryVariable {
    const type = options.type ?? BuiltinType.Int32;
    return this.mem.addVariable({
      nodeId: name,
      browseName: name,
      dataType: type,
      feedInterval: options.feedInterval,
      accessLevel: AccessLevel.CurrentRead | AccessLevel.CurrentWrite,
      value: { value: { dataType: type, arrayType: VariantArrayType.Scalar, value: options.value ?? 0 }, sourceTimestamp: this.clock.wallNow() },
    });
  }

  nodeId(name: string): NodeId {
    return stringNodeId(name, this.mem.namespaceIndex);
  }

  set(v: MemoryVariable, value: number, statusCode?: number): DataValue {
    const dv: DataValue = { value: { dataType: BuiltinType.Int32, arrayType: VariantArrayType.Scalar, value }, statusCode, sourceTimestamp: this.clock.wallNow() };
    this.mem.setValue(v, dv);
    return dv;
  }

  subscribe(session: SubscriptionSession, p: { interval?: number; keepAlive?: number; lifetime?: number; maxNotifications?: number; enabled?: boolean } = {}): number {
    return this.engine.createSubscription(
      session,
      {
        publishingInterval: p.interval ?? 100,
        maxKeepAliveCount: p.keepAlive ?? 10,
        lifetimeCount: p.lifetime ?? 100,
        maxNotificationsPerPublish: p.maxNotifications ?? 0,
        priority: 0,
      },
      p.enabled ?? true,
    ).subscriptionId;
  }

  monitor(
    session: SubscriptionSession,
    subscriptionId: number,
    nodeId: NodeId,
    p: { clientHandle?: number; samplingInterval?: number; queueSize?: number; discardOldest?: boolean; filter?: ExtensionObject; mode?: MonitoringMode; timestamps?: TimestampsToReturn } = {},
  ): MonitoredItemCreateResult {
    return createMonitoredItems(this.engine, session, subscriptionId, p.timestamps ?? TimestampsToReturn.Both, [
      {
        itemToMonitor: { nodeId, attributeId: AttributeIds.Value, dataEncoding: { namespaceIndex: 0, name: "" } },
        monitoringMode: p.mode ?? MonitoringMode.Reporting,
        requestedParameters: {
          clientHandle: p.clientHandle ?? 1,
          samplingInterval: p.samplingInterval ?? 100,
          filter: p.filter,
          queueSize: p.queueSize ?? 1,
          discardOldest: p.discardOldest ?? true,
        },
      },
    ])[0];
  }

  /**
   * A channel as the server's: a response is encoded when it is sent (into a plain writer here),
   * decoded with the generated decoder, and lands in `answers`; a closed one sends nothing.
   */
  newChannel(): FixtureChannel {
    const sent = this.sent;
    const listeners: (() => void)[] = [];
    return {
      isOpen: true,
      sendBusy: false,
      sendResponse<T>(_requestId: number, _encodingId: number, encode: (w: BinaryWriter, v: T) => void, value: T): boolean {
        if (!this.isOpen) return false;
        if (this.sendBusy) throw new Error("a response was sent while the channel was busy");
        sent.push(decodeResponse(encode, value));
        return true;
      },
      whenSendFree(fn: () => void): void {
        listeners.push(fn);
      },
      free(): void {
        this.sendBusy = false;
        for (const fn of listeners.splice(0)) fn();
      },
    };
  }

  /** Sends a Publish as the service does; its answer lands in `answers` (now or when it comes). */
  publish(session: SubscriptionSession, acks: SubscriptionAcknowledgement[] = [], timeoutHint = 0, channel: PublishChannel = this.channel): void {
    let result: PublishAnswer | Promise<PublishAnswer>;
    try {
      result = this.engine.publish(session, { requestHandle: 1, requestId: 1, timeoutHint, acknowledgements: acks, channel, maxBytes: 1 << 24 });
    } catch (err) {
      this.answers.push({ t: this.clock.now(), status: (err as UaStatusError).statusCode });
      return;
    }
    // The response itself came through the channel; a request settles right after it is sent.
    if (result instanceof Promise) {
      result.then(
        () => this.answers.push({ t: this.clock.now(), response: this.sent.shift() }),
        (e: UaStatusError) => this.answers.push({ t: this.clock.now(), status: e.statusCode }),
      );
    } else {
      this.answers.push({ t: this.clock.now(), response: this.sent.shift() });
    }
  }

  /** Moves the fake clock by `ms` in steps of `step`, letting answers settle after each step. */
  async advance(ms: number, step = 10): Promise<void> {
    for (let t = 0; t < ms; t += step) {
      this.clock.advance(Math.min(step, ms - t));
      await settle();
    }
  }

  /** Runs what is due now (the bench counters' first poll, at t = 0) and lets it settle. */
  async now(): Promise<void> {
    this.clock.advance(0);
    await settle();
  }

  take(): Answer[] {
    return this.answers.splice(0, this.answers.length);
  }
}

export async function settle(): Promise<void> {
  await new Promise((resolve) => setImmediate(resolve));
}

/** Encodes a PublishResponse as the channel would and decodes it with the generated decoder: what a client gets. */
export function decodeResponse<T>(encode: (w: BinaryWriter, v: T) => void, value: T): PublishResponse {
  const w = new BinaryWriter(Buffer.allocUnsafe(256));
  encode(w, value);
  const reader = new BinaryReader(Buffer.from(w.view()));
  const decoded = decodePublishResponse(reader);
  if (reader.pos !== reader.end) throw new Error(`${reader.end - reader.pos} bytes left after the PublishResponse`);
  return decoded;
}

export function decodeMessage(bytes: Buffer): NotificationMessage {
  return decodeNotificationMessage(new BinaryReader(bytes));
}

/** The data changes of a message: [clientHandle, value, statusCode] per notification. */
export function changes(m: NotificationMessage | undefined): [number, unknown, number][] {
  const out: [number, unknown, number][] = [];
  for (const eo of m?.notificationData ?? []) {
    if (eo.typeId.value !== ObjectIds.DataChangeNotification_Encoding_DefaultBinary) continue;
    for (const n of (eo.body as DataChangeNotification).monitoredItems ?? []) out.push([n.clientHandle, n.value.value?.value, n.value.statusCode ?? 0]);
  }
  return out;
}

export function statusChange(m: NotificationMessage | undefined): number | undefined {
  for (const eo of m?.notificationData ?? []) {
    if (eo.typeId.value === ObjectIds.StatusChangeNotification_Encoding_DefaultBinary) return (eo.body as StatusChangeNotification).status;
  }
  return undefined;
}

export function isKeepAlive(r: PublishResponse | undefined): boolean {
  return r !== undefined && (r.notificationMessage.notificationData ?? []).length === 0;
}

export const COUNTER = (k: number): NodeId => numericNodeId(k, 1);
/** The bench counters' poll rate in the fixture (its minSamplingInterval). */
export const BENCH_RATE = 10;
