// The Sparkplug B 3.0 edge node (DESIGN: value cache -> northbound -> broker): one gateway is one
// edge node, each device of the map one Sparkplug device, each tag one metric.
//
//   connect (new bdSeq in the will) -> subscribe NCMD, DCMD, STATE -> [wait for the primary
//   host: online] -> NBIRTH, every DBIRTH -> online: DDATA per device poll cycle, replay of
//   the store beside it -> connection lost / host offline / stop -> store the changes.
//
// Phases and what a device's poll cycle does in each (deviceCycle):
//   Offline (connecting, waiting for the host, backing off)  its changes are stored
//   Birthing (NBIRTH and DBIRTHs being sent)                  its changes wait (the births carry them)
//   Online                                                    DDATA, DDEATH, DBIRTH as the device goes
// Two counters guard what is asynchronous, each for what it owns:
//   `sessionNo`  MQTT sessions: a session's handlers (CONNACK, messages, its end) act only while
//                it is the current one; a new session also starts a new birth sequence.
//   `birthNo`    birth sequences: births, and the replay that follows them, stop when a newer
//                sequence starts. A Rebirth (§5.17) is a new birth sequence in the same session:
//                NCMD, DCMD, STATE and the session's end are still heard after it.
import type { DeviceNamespace } from "../address-space/device-namespace.js";
import type { DeviceConfig } from "../config/device-map.js";
import type { DeviceState } from "../devices/device-poller.js";
import type { CacheObserver, ValueCache } from "../values/value-cache.js";
import { encodeDBirthSlice, encodeNBirth, encodeNDeath } from "./births.js";
import { CommandHandler } from "./commands.js";
import type { SparkplugConfig } from "../config/northbound-config.js";
import { encodeChanges } from "./device-data.js";
import { DeviceSession, DeviceTable, type DeviceRecord } from "./device-records.js";
import { ForwardStore } from "./forward-store.js";
import { loadMqtt, MqttSession, type Will } from "./mqtt-session.js";
import { counterMetric, systemMetrics, type NodeMetric } from "./node-metrics.js";
import { parseState, PrimaryHostTracker } from "./primary-host.js";
import { Replayer } from "./replay.js";
import { PayloadWriter } from "./sparkplug-codec.js";
import { StoreTasks } from "./store-tasks.js";
import { DeviceTopicCache, nodeTopics, type DeviceTopics, type NodeTopics } from "./topics.js";
import type { Slicer } from "../sampling/slices.js";

/** The loop trace's names of a DBIRTH's slices and of a device's DDATA that did not fit one slice. */
const BIRTH_LABEL = "Sparkplug DBIRTH (a slice)";
const FLUSH_LABEL = "Sparkplug DDATA of a device (a later slice)";

export type EdgePhase = "stopped" | "connecting" | "waiting for primary host" | "birthing" | "online" | "backing off";

export interface EdgeNodeLog {
  info(message: string): void;
  warn(message: string): void;
}

export interface EdgeNodeOptions {
  readonly config: SparkplugConfig;
  /** The store's file (northbound.db in dataDir unless the config names one). */
  readonly storeFile: string;
  readonly values: ValueCache;
  /** The device namespace: DCMD writes go through its nodes; Objects/System gives node metrics. */
  readonly devices: DeviceNamespace;
  /** The devices being polled, in map order. */
  readonly deviceConfigs: () => readonly DeviceConfig[];
  readonly deviceState: (name: string) => DeviceState | undefined;
  readonly log: EdgeNodeLog;
  /** How often node metrics are compared and sent as NDATA (ms; the System object's interval). */
  readonly nodeMetricsInterval?: number;
  /** Where the births, the DDATA of many changes and the store's work run in slices. */
  readonly slicer: Slicer;
}

/** What the diagnostics show. */
export interface EdgeNodeStatus {
  readonly phase: EdgePhase;
  readonly connected: boolean;
  readonly broker: string;
  readonly lastError: string;
  readonly bdSeq: number;
  readonly primaryHostOnline: boolean | undefined;
  readonly messagesPublished: number;
  readonly metricsPublished: number;
  readonly buffered: number;
  readonly waiting: number;
  readonly replayed: number;
  readonly dropped: number;
  readonly commandsReceived: number;
  readonly commandsRefused: number;
}

export class EdgeNode implements CacheObserver {
  readonly config: SparkplugConfig;
  readonly store: ForwardStore;
  private readonly o: EdgeNodeOptions;
  private readonly values: ValueCache;
  private readonly table = new DeviceTable();
  private readonly dataWriter = new PayloadWriter(64 * 1024);
  private readonly birthWriter = new PayloadWriter(64 * 1024);
  private readonly replayWriter = new PayloadWriter(64 * 1024);
  private readonly nodeWriter = new PayloadWriter(4 * 1024);
  private readonly commands: CommandHandler;
  private readonly replayer: Replayer;
  private readonly storeTasks: StoreTasks;
  private readonly host: PrimaryHostTracker | undefined;
  private readonly nodeMetrics: NodeMetric[];
  private readonly topics: NodeTopics;
  private readonly deviceTopics: DeviceTopicCache;
  private session: MqttSession | undefined;
  private phase: EdgePhase = "stopped";
  private sessionNo = 0;
  private birthNo = 0;
  private seq = 0;
  private bdSeq = -1;
  private nextAlias = 1;
  private births: Promise<void> = Promise.resolve();
  private failures = 0;
  private retryTimer: NodeJS.Timeout | undefined;
  private nodeTimer: NodeJS.Timeout | undefined;
  private lastError = "";
  private messagesPublished = 0;
  private metricsPublished = 0;
  private readonly later = new Set<DeviceRecord>();

  constructor(options: EdgeNodeOptions) {
    this.o = options;
    this.config = options.config;
    this.values = options.values;
    const c = options.config;
    this.topics = nodeTopics(c.groupId, c.edgeNodeId);
    this.deviceTopics = new DeviceTopicCache(c.groupId, c.edgeNodeId);
    this.store = new ForwardStore(options.storeFile, {
      maxAge: c.storeAndForward.maxAge,
      maxSize: c.storeAndForward.maxSize,
      log: (m) => options.log.warn(m),
    });
    this.storeTasks = new StoreTasks(this.store, this.values, options.slicer);
    this.host = c.primaryHostId === undefined ? undefined : new PrimaryHostTracker(c.primaryHostId);
    this.commands = new CommandHandler(
      {
        rebirth: () => this.rebirth(),
        bornDevice: (name) => {
          const rec = this.table.get(name);
          return rec?.session === DeviceSession.Born && this.phase === "online" ? rec : undefined;
        },
        answer: (rec, index) => {
          rec.forced[index] = 1;
          rec.mark(index);
          this.deviceCycle(rec);
        },
        log: (m) => options.log.warn(`northbound: ${m}`),
      },
      options.devices,
      c.writeRole,
    );
    this.replayer = new Replayer(
      this.store,
      {
        current: (birth) => birth === this.birthNo && this.phase === "online",
        record: (name) => this.table.get(name),
        congested: () => this.session?.congested ?? false,
        publishData: (rec, w) => this.publishBody(this.topicsOf(rec).ddata, w),
        now: Date.now,
        log: (m) => options.log.info(`northbound: ${m}`),
      },
      this.replayWriter,
      c.replayRate,
    );
    this.nodeMetrics = [
      ...systemMetrics(options.devices.ns),
      counterMetric("Northbound/Buffered", () => this.store.stored),
      counterMetric("Northbound/Replayed", () => this.store.replayed),
      counterMetric("Northbound/Dropped", () => this.store.dropped),
      counterMetric("Northbound/CommandsRefused", () => this.commands.counters.refused),
    ];
  }

  // ---- lifecycle ------------------------------------------------------------------------------

  /** Starts observing the value cache and connecting. */
  start(): void {
    if (this.phase !== "stopped") return;
    this.table.rebuild(this.o.deviceConfigs(), this.values);
    this.values.addObserver(this);
    this.storeTasks.start();
    this.nodeTimer = setInterval(() => this.sendNodeMetrics(), this.o.nodeMetricsInterval ?? 10_000);
    this.nodeTimer.unref();
    this.storeTasks.prepareIds(this.table.records);
    void this.connect();
  }

  /** NDEATH and DISCONNECT (§5.5), stored changes committed, store closed. */
  async stop(): Promise<void> {
    if (this.phase === "stopped") return;
    this.values.removeObserver(this);
    this.newSession();
    this.phase = "stopped";
    this.replayer.stop();
    this.storeTasks.stop();
    for (const t of [this.retryTimer, this.nodeTimer]) if (t) clearTimeout(t);
    const s = this.session;
    this.session = undefined;
    if (s) await s.end(this.death());
    this.store.close();
    this.o.log.info("northbound: stopped");
  }

  status(): EdgeNodeStatus {
    return {
      phase: this.phase,
      connected: this.session?.connected ?? false,
      broker: this.config.broker,
      lastError: this.lastError,
      bdSeq: this.bdSeq,
      primaryHostOnline: this.host === undefined ? undefined : this.host.online,
      messagesPublished: this.messagesPublished,
      metricsPublished: this.metricsPublished,
      buffered: this.store.stored,
      waiting: this.store.waiting + this.store.stagedRows,
      replayed: this.store.replayed,
      dropped: this.store.dropped,
      commandsReceived: this.commands.counters.received,
      commandsRefused: this.commands.counters.refused,
    };
  }

  /**
   * The device map was reloaded: devices added, removed or changed are born, die or are born
   * again (§4.2.2.1: a DBIRTH redefines a device's metrics); the others go on as they were.
   */
  devicesChanged(): void {
    if (this.phase === "stopped") return;
    const { added, removed, changed } = this.table.rebuild(this.o.deviceConfigs(), this.values);
    const online = this.phase === "online";
    for (const rec of removed) {
      if (online && rec.session === DeviceSession.Born) this.publishDeath(rec);
      this.deviceTopics.forget(rec.name);
    }
    for (const rec of [...added, ...changed]) {
      if (online && this.o.deviceState(rec.name) !== "demoted") this.queueBirth(rec, this.birthNo);
    }
    if (added.length + removed.length + changed.length > 0) this.storeTasks.prepareIds(this.table.records);
  }

  // ---- the value cache ------------------------------------------------------------------------

  changed(slot: number): void {
    const rec = this.table.ownerOf(slot);
    if (rec !== undefined) rec.mark(this.table.tagOf(slot));
  }

  batchEnd(device: string): void {
    const rec = this.table.get(device);
    if (rec !== undefined) this.deviceCycle(rec);
  }

  /** The end of one poll cycle of a device (or a write's read-back, or a failure). */
  private deviceCycle(rec: DeviceRecord): void {
    switch (this.phase) {
      case "online":
        break;
      case "birthing":
        return; // the births carry the current values; what changes after goes out once they are done
      case "stopped":
        return;
      default:
        this.storeTasks.storeDevice(rec);
        return;
    }
    const demoted = this.o.deviceState(rec.name) === "demoted";
    switch (rec.session) {
      case DeviceSession.Born:
        this.flush(rec);
        // Changes stored while the broker was congested go out as soon as it takes data again.
        if (!this.replayer.active && this.store.waiting > 0 && this.session?.congested === false) this.replayer.start(this.birthNo);
        // §5.7 tck-id-operational-behavior-device-ddeath: a device that no longer answers dies.
        if (demoted) this.publishDeath(rec);
        return;
      case DeviceSession.Birthing:
        return;
      default:
        // Dead or not yet born: born again once it answers (its DBIRTH has the current values).
        rec.clearPending();
        if (!demoted) this.queueBirth(rec, this.birthNo);
    }
  }

  /** DDATA of the device's changes; changes left by a slice that ran out of time go in the next task. */
  private flush(rec: DeviceRecord): void {
    const s = this.session;
    if (s === undefined || !s.connected || s.congested) {
      // Backpressure, or a session that ended: keep the changes on disk instead of in memory.
      this.storeTasks.storeDevice(rec);
      return;
    }
    const slicer = this.o.slicer;
    const end = slicer.end();
    const now = Date.now();
    while (rec.pendingCount > 0) {
      const n = encodeChanges(this.dataWriter, rec, this.values, now, slicer, end);
      if (n > 0 && !this.publishBody(this.topicsOf(rec).ddata, this.dataWriter, n)) return;
      if (rec.pendingCount > 0 && slicer.now() >= end) {
        this.flushLater(rec);
        return;
      }
    }
  }

  private flushLater(rec: DeviceRecord): void {
    if (this.later.has(rec)) return;
    this.later.add(rec);
    this.o.slicer.later((r) => this.flushedLater(r), rec, FLUSH_LABEL);
  }

  private flushedLater(rec: DeviceRecord): void {
    this.later.delete(rec);
    if (rec.pendingCount > 0) this.deviceCycle(rec);
  }

  // ---- the MQTT session -----------------------------------------------------------------------

  /** Detaches the current session's handlers and ends its birth sequence; returns the next session's number. */
  private newSession(): number {
    this.birthNo++;
    // §5.4 tck-id-message-flow-edge-node-birth-publish-phid-wait: each session verifies anew
    // that the host is online (a broker that restarted may no longer hold its STATE).
    this.host?.newSession();
    return ++this.sessionNo;
  }

  private async connect(): Promise<void> {
    const session = this.newSession();
    this.phase = "connecting";
    this.markUnborn();
    let mqtt;
    try {
      mqtt = await loadMqtt();
    } catch (err) {
      this.fail(session, err instanceof Error ? err : new Error(String(err)));
      return;
    }
    if (session !== this.sessionNo) return;
    this.bdSeq = this.store.nextBdSeq();
    const will = this.death();
    const c = this.config;
    this.session = new MqttSession(mqtt, c, `fieldgate-${c.groupId}-${c.edgeNodeId}`, will, {
      connected: () => void this.connected(session),
      message: (topic, payload) => this.message(session, topic, payload),
      closed: (err) => this.fail(session, err ?? new Error("connection closed")),
    });
  }

  private async connected(session: number): Promise<void> {
    const s = this.session;
    if (session !== this.sessionNo || s === undefined) return;
    // §4.2.1.1 tck-id-topics-nbirth-bdseq-increment: this CONNECT's bdSeq is used; the next is one more.
    this.store.usedBdSeq(this.bdSeq);
    const topics = [this.topics.ncmd, `${this.topics.dcmdPrefix}+`];
    if (this.host) topics.push(this.host.topic);
    try {
      // §5.4: NCMD and DCMD at QoS 1 (tck-id-message-flow-edge-node-ncmd-subscribe,
      // tck-id-message-flow-device-dcmd-subscribe), STATE before any birth.
      await s.subscribe(topics);
    } catch (err) {
      this.lastError = err instanceof Error ? err.message : String(err);
      this.o.log.warn(`northbound: ${this.lastError}`);
      void s.end();
      this.fail(session, new Error(this.lastError));
      return;
    }
    if (session !== this.sessionNo) return;
    this.o.log.info(`northbound: connected to ${this.config.broker} as ${this.config.groupId}/${this.config.edgeNodeId} (bdSeq ${this.bdSeq})`);
    if (this.host && !this.host.online) {
      this.phase = "waiting for primary host";
      this.o.log.info(`northbound: waiting for primary host ${this.host.hostId} to be online (${this.host.topic}); storing data meanwhile`);
      return;
    }
    this.birthAll();
  }

  private message(session: number, topic: string, payload: Buffer): void {
    if (session !== this.sessionNo) return;
    if (this.host && topic === this.host.topic) {
      this.hostState(payload);
      return;
    }
    const born = this.phase === "online" || this.phase === "birthing";
    if (topic === this.topics.ncmd) {
      if (born) this.commands.nodeCommand(payload);
      return;
    }
    if (topic.startsWith(this.topics.dcmdPrefix)) {
      void this.commands.deviceCommand(topic.slice(this.topics.dcmdPrefix.length), payload);
    }
  }

  private hostState(payload: Buffer): void {
    const host = this.host!;
    const state = parseState(payload);
    if (typeof state === "string") {
      this.o.log.warn(`northbound: STATE of ${host.hostId} ignored: ${state}`);
      return;
    }
    const counted = host.apply(state);
    if (counted === undefined) {
      this.o.log.info(`northbound: STATE of ${host.hostId} ignored: its timestamp ${state.timestamp} is older than the last one`);
      return;
    }
    if (counted.online) {
      if (this.phase === "waiting for primary host") {
        this.o.log.info(`northbound: primary host ${host.hostId} is online`);
        this.birthAll();
      }
      return;
    }
    if (this.phase === "online" || this.phase === "birthing") {
      // §5.5 tck-id-operational-behavior-edge-node-termination-host-offline: NDEATH, disconnect,
      // start again (and store what changes meanwhile).
      this.o.log.warn(`northbound: primary host ${host.hostId} went offline: NDEATH, disconnecting, storing data until it is back`);
      const s = this.session;
      this.session = undefined;
      this.newSession();
      this.phase = "connecting";
      this.replayer.stop();
      void (s ? s.end(this.death()) : Promise.resolve()).then(() => {
        if (this.phase !== "stopped") void this.connect();
      });
    }
  }

  /** The session ended or could not be made: store, and try again after the backoff. */
  private fail(session: number, err: Error): void {
    if (session !== this.sessionNo || this.phase === "stopped") return;
    this.newSession();
    this.session = undefined;
    this.replayer.stop();
    this.phase = "backing off";
    this.markUnborn();
    this.lastError = err.message;
    this.failures++;
    const c = this.config;
    const wait = Math.min(c.maxBackoff, c.retryBackoff * 2 ** Math.min(this.failures - 1, 30));
    this.o.log.warn(`northbound: ${c.broker}: ${err.message}; storing data, next attempt in ${wait} ms`);
    this.retryTimer = setTimeout(() => {
      this.retryTimer = undefined;
      if (this.phase === "backing off") void this.connect();
    }, wait);
  }

  private markUnborn(): void {
    for (const rec of this.table.records) rec.session = DeviceSession.Unborn;
  }

  // ---- births ---------------------------------------------------------------------------------

  /** NCMD Node Control/Rebirth (§5.17): stop data, NBIRTH with the same bdSeq, every DBIRTH. */
  private rebirth(): void {
    if (this.phase !== "online" && this.phase !== "birthing") return;
    this.o.log.info("northbound: rebirth requested by a host application");
    this.replayer.stop();
    this.birthAll();
  }

  /** A new birth sequence in this session: NBIRTH, then the DBIRTH of every device that answers, then data and replay. */
  private birthAll(): void {
    const birth = ++this.birthNo;
    this.phase = "birthing";
    this.markUnborn();
    this.births = this.births.then(() => this.runBirths(birth)).catch((err: unknown) => {
      this.o.log.warn(`northbound: births failed: ${err instanceof Error ? err.message : String(err)}`);
    });
  }

  private async runBirths(birth: number): Promise<void> {
    if (birth !== this.birthNo) return;
    const now = Date.now();
    this.seq = 0;
    this.nextAlias = encodeNBirth(this.nodeWriter, this.bdSeq, now, this.nodeMetrics, 1);
    // NBIRTH is seq 0 (encodeNBirth wrote it); the next message is 1.
    if (!this.publishRaw(this.topics.nbirth, this.nodeWriter.finish(), this.nodeMetrics.length + 2)) return;
    this.seq = 1;
    for (const rec of this.table.records) {
      if (birth !== this.birthNo) return;
      if (this.o.deviceState(rec.name) === "demoted") {
        rec.session = DeviceSession.Dead;
        continue;
      }
      await this.deviceBirth(rec, birth);
    }
    if (birth !== this.birthNo) return;
    this.phase = "online";
    this.failures = 0;
    this.o.log.info(`northbound: online: NBIRTH and ${this.table.records.filter((r) => r.session === DeviceSession.Born).length} DBIRTH(s) published`);
    for (const rec of this.table.records) if (rec.pendingCount > 0) this.deviceCycle(rec);
    this.replayer.start(birth);
  }

  /** A DBIRTH for one device while online (it came back, or the map changed). */
  private queueBirth(rec: DeviceRecord, birth: number): void {
    if (rec.session === DeviceSession.Birthing) return;
    rec.session = DeviceSession.Birthing;
    this.births = this.births
      .then(async () => {
        if (birth !== this.birthNo || this.phase !== "online" || this.table.get(rec.name) !== rec) return;
        await this.deviceBirth(rec, birth);
        if (birth === this.birthNo && rec.pendingCount > 0) this.deviceCycle(rec);
      })
      .catch((err: unknown) => this.o.log.warn(`northbound: DBIRTH of ${rec.name} failed: ${err instanceof Error ? err.message : String(err)}`));
  }

  /** Encodes the device's DBIRTH in the gateway's slices and publishes it. */
  private async deviceBirth(rec: DeviceRecord, birth: number): Promise<void> {
    rec.session = DeviceSession.Birthing;
    this.nextAlias = rec.assignAliases(birth, this.nextAlias);
    const w = this.birthWriter;
    const now = Date.now();
    w.reset();
    w.timestamp(now);
    const task = this.o.slicer.task(BIRTH_LABEL);
    try {
      let i = 0;
      for (;;) {
        i = encodeDBirthSlice(w, rec, this.values, i, now, task.slicer, task.end);
        if (i >= rec.tags.length) break;
        await task.next();
        if (birth !== this.birthNo) return;
      }
    } finally {
      task.done();
    }
    if (birth !== this.birthNo) return;
    if (this.publishBody(this.topicsOf(rec).dbirth, w, rec.tags.length)) rec.session = DeviceSession.Born;
  }

  /** DDEATH (§4.2.2.3): only a seq and a timestamp. */
  private publishDeath(rec: DeviceRecord): void {
    const w = this.dataWriter;
    w.reset();
    w.timestamp(Date.now());
    this.publishBody(this.topicsOf(rec).ddeath, w, 0);
    rec.session = DeviceSession.Dead;
    this.o.log.info(`northbound: DDEATH of ${rec.name} (demoted)`);
  }

  /** NDATA of the node metrics that changed (System/*, Northbound/*). */
  private sendNodeMetrics(): void {
    if (this.phase !== "online") return;
    const w = this.nodeWriter;
    const now = Date.now();
    w.reset();
    w.timestamp(now);
    let n = 0;
    for (const nm of this.nodeMetrics) {
      if (!nm.changed()) continue;
      const m = w.beginMetric();
      w.alias(nm.alias);
      nm.write(w, now, false);
      w.endMetric(m);
      n++;
    }
    if (n > 0) this.publishBody(this.topics.ndata, w, n);
  }

  // ---- publishing -----------------------------------------------------------------------------

  /** Adds the next seq (§6.4.5: 0-255, one more than the last message's) and publishes. */
  private publishBody(topic: string, w: PayloadWriter, metrics = 0): boolean {
    if (this.session === undefined || !this.session.connected) return false;
    w.seq(this.seq);
    const ok = this.publishRaw(topic, w.finish(), metrics);
    if (ok) this.seq = (this.seq + 1) & 255;
    return ok;
  }

  private publishRaw(topic: string, payload: Buffer, metrics: number): boolean {
    const s = this.session;
    if (s === undefined || !s.publish(topic, payload)) return false;
    this.messagesPublished++;
    this.metricsPublished += metrics;
    return true;
  }

  /** The NDEATH of the current bdSeq (the will, and what an intentional disconnect sends first). */
  private death(): Will {
    return { topic: this.topics.ndeath, payload: encodeNDeath(this.nodeWriter, this.bdSeq, Date.now()) };
  }

  private topicsOf(rec: DeviceRecord): DeviceTopics {
    return this.deviceTopics.of(rec.name);
  }
}

