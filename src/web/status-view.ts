// What the status page shows, read from what the gateway already keeps: the System object's
// variables (sampled every 10 s on the scheduler), the DevicePollers' counters and states, the
// value cache (tag values, statuses, source times), the sessions and subscriptions, the history
// writer's counters and the log's ring. Nothing here polls a device or samples the machine again.
//
// Tag rows are compared with what was last sent, per watched device, in typed arrays (status,
// source time, number): a tick of 1,000 unchanged tags compares 3,000 numbers and sends nothing.
import type { SystemObject } from "../address-space/system-object.js";
import type { DeviceMap } from "../config/device-map.js";
import type { DevicePoller } from "../devices/device-poller.js";
import type { DeviceRuntime } from "../devices/device-runtime.js";
import type { GatewayHistory } from "../history/history.js";
import type { SessionManager } from "../sessions/session.js";
import type { SubscriptionEngine } from "../subscriptions/engine.js";
import type { ValueCache } from "../values/value-cache.js";
import { BuiltinType, type DataValue } from "../ua/builtins.js";
import { statusCodeName } from "../ua/generated/status-codes.js";
import { StatusCodes } from "../ua/generated/status-codes.js";
import { MessageSecurityMode } from "../ua/generated/enums.js";
import { policyByUri } from "../security/policies.js";
import type { CertificateInfo } from "../security/certificates.js";
import type { Pki } from "../security/pki.js";
import type { SlicedTask, Slicer } from "../sampling/slices.js";
import { describeDamaged, type DamagedFiles } from "../storage/damaged.js";
import type { Northbound } from "../northbound/northbound.js";

export interface GatewayView {
  readonly name: string;
  readonly version: string;
  readonly endpoint: string;
  readonly startedAt: number;
  readonly uptime: number;
  readonly cpuLoad: number | null;
  readonly cpuTemperature: number | null;
  readonly memoryTotal: number | null;
  readonly memoryAvailable: number | null;
  readonly processMemory: number;
  readonly diskTotal: number | null;
  readonly diskAvailable: number | null;
  readonly clock: string;
  readonly pollLatenessP99: number | null;
  readonly channels: number;
  /** What needs a person: files found damaged and moved aside, optional parts not running. */
  readonly attention: readonly string[];
}

export interface DeviceView {
  readonly name: string;
  readonly driver: string;
  readonly link: string;
  /** waiting | ok | failing | demoted | disabled */
  readonly state: string;
  readonly lastError: string;
  readonly roundTrip: number;
  readonly requests: number;
  readonly errors: number;
  readonly skipped: number;
  readonly failures: number;
  readonly downSince: number;
  readonly tags: number;
}

/** [name, value, status name, quality (0 good, 1 uncertain, 2 bad), source time ms, unit, kept in the history]. */
export type TagRow = readonly [string, string, string, number, number, string, boolean];

export interface SessionView {
  readonly id: number;
  readonly name: string;
  readonly user: string;
  readonly role: string;
  readonly address: string;
  readonly security: string;
  readonly created: number;
  readonly lastActivity: number;
  readonly subscriptions: number;
  readonly items: number;
}

export interface SubscriptionView {
  readonly id: number;
  readonly session: string;
  readonly publishingInterval: number;
  readonly items: number;
  readonly enabled: boolean;
}

export interface HistoryView {
  readonly file: string;
  readonly fileBytes: number;
  readonly series: number;
  readonly oldest: number | null;
  readonly recorded: number;
  readonly stored: number;
  readonly queued: number;
  readonly dropped: number;
  readonly failing: boolean;
  /** Samples stored per second since the previous view. */
  readonly writeRate: number;
}

export interface CertificateView {
  readonly thumbprint: string;
  readonly subject: string;
  readonly applicationUri: string;
  readonly notAfter: number;
  readonly isCa: boolean;
}

export interface CertificatesView {
  readonly own: CertificateView | null;
  readonly trusted: readonly CertificateView[];
  readonly rejected: readonly CertificateView[];
}

function numberOf(v: unknown): number | null {
  if (typeof v === "number") return Number.isFinite(v) ? v : null;
  if (typeof v === "bigint") return Number(v);
  return null;
}

/** How the page shows a number: integers as they are, others to 6 significant digits. */
export function formatNumber(n: number): string {
  if (Number.isInteger(n)) return String(n);
  if (!Number.isFinite(n)) return String(n);
  return String(Number(n.toPrecision(6)));
}

/** 0 good, 1 uncertain, 2 bad (a StatusCode's severity, Part 4 §7.39). */
export function quality(status: number): number {
  const severity = status >>> 30;
  return severity === 0 ? 0 : severity === 1 ? 1 : 2;
}

function who(userId: string): string {
  if (userId === "") return "anonymous";
  if (userId.startsWith("user:")) return userId.slice(5);
  if (userId.startsWith("cert:")) return `certificate ${userId.slice(5, 13)}…`;
  return userId;
}

function certificateView(i: CertificateInfo): CertificateView {
  return { thumbprint: i.thumbprint, subject: i.subject, applicationUri: i.applicationUri ?? "", notAfter: i.notAfter.getTime(), isCa: i.isCa };
}

export function certificatesView(pki: Pki | undefined): CertificatesView {
  if (pki === undefined) return { own: null, trusted: [], rejected: [] };
  const l = pki.list();
  return { own: certificateView(l.own), trusted: l.trusted.map(certificateView), rejected: l.rejected.map(certificateView) };
}

/** What the page's views read of the gateway, each part as narrow as what they read. */
export interface ViewSource {
  readonly config: { readonly server: { readonly applicationName: string } };
  readonly endpointUrl: string;
  readonly channelCount: number;
  readonly system: Pick<SystemObject, "variable">;
  readonly deviceMap: DeviceMap | undefined;
  readonly deviceRuntime: Pick<DeviceRuntime, "pollers" | "describeLink">;
  readonly sessions: Pick<SessionManager, "sessions">;
  readonly subscriptions: Pick<SubscriptionEngine, "subscriptions">;
  readonly history: Pick<GatewayHistory, "writer" | "store" | "unavailable" | "file">;
  readonly damagedFiles: Pick<DamagedFiles, "list">;
  readonly northbound: Pick<Northbound, "failure">;
  /** Where work that grows with the data runs in slices. */
  readonly slicer: Slicer;
}

export class StatusViews {
  private readonly server: ViewSource;
  private readonly version: string;
  private readonly clockState: () => string;
  private lastStored = -1;
  private lastStoredAt = 0;
  private writeRate = 0;
  private oldest: number | null = null;
  private oldestAt = -Infinity;
  private oldestRunning = false;

  constructor(server: ViewSource, options: { version: string; clockState: () => string }) {
    this.server = server;
    this.version = options.version;
    this.clockState = options.clockState;
  }

  gateway(now: number): GatewayView {
    const s = this.server;
    const sys = (name: Parameters<typeof s.system.variable>[0]): number | null => {
      const dv = s.system.variable(name).value;
      return dv.statusCode !== undefined && dv.statusCode !== StatusCodes.Good ? null : numberOf(dv.value?.value);
    };
    const uptime = process.uptime();
    return {
      name: s.config.server.applicationName,
      version: this.version,
      endpoint: s.endpointUrl,
      startedAt: now - uptime * 1000,
      uptime,
      cpuLoad: sys("CpuLoad"),
      cpuTemperature: sys("CpuTemperature"),
      memoryTotal: sys("MemoryTotal"),
      memoryAvailable: sys("MemoryAvailable"),
      processMemory: process.memoryUsage.rss(),
      diskTotal: sys("DiskTotal"),
      diskAvailable: sys("DiskAvailable"),
      clock: this.clockState(),
      pollLatenessP99: sys("PollLatenessP99"),
      channels: s.channelCount,
      attention: this.attention(),
    };
  }

  private attention(): string[] {
    const s = this.server;
    const out = s.damagedFiles.list.map((d) => `${new Date(d.at).toISOString()}: ${describeDamaged(d)}`);
    if (s.history.unavailable !== undefined) out.push(`No history is kept: ${s.history.unavailable}`);
    if (s.northbound.failure !== undefined) out.push(`The Sparkplug edge node is not running: ${s.northbound.failure}`);
    return out;
  }

  devices(): DeviceView[] {
    const s = this.server;
    const out: DeviceView[] = [];
    const running = new Map<string, DevicePoller>();
    for (const p of s.deviceRuntime.pollers()) running.set(p.name, p);
    for (const d of s.deviceMap?.devices ?? []) {
      const link = s.deviceRuntime.describeLink(d);
      const p = running.get(d.name);
      out.push(
        p === undefined
          ? { name: d.name, driver: d.driver, link, state: d.enabled ? "waiting" : "disabled", lastError: "", roundTrip: 0, requests: 0, errors: 0, skipped: 0, failures: 0, downSince: 0, tags: d.tags.length }
          : {
              name: d.name,
              driver: d.driver,
              link,
              state: p.state,
              lastError: p.lastError,
              roundTrip: Math.round(p.lastRoundTrip * 100) / 100,
              requests: p.requests,
              errors: p.errors,
              skipped: p.skippedCycles,
              failures: p.consecutiveFailures,
              downSince: p.downSince,
              tags: p.tags.length,
            },
      );
    }
    return out;
  }

  sessions(): { sessions: SessionView[]; subscriptions: SubscriptionView[] } {
    const s = this.server;
    const perSession = new Map<unknown, { subs: number; items: number }>();
    const subscriptions: SubscriptionView[] = [];
    const names = new Map<unknown, string>();
    for (const session of s.sessions.sessions()) names.set(session.sessionId.value, session.name);
    for (const sub of s.subscriptions.subscriptions.values()) {
      const key = sub.owner?.session.sessionId.value;
      const c = perSession.get(key) ?? { subs: 0, items: 0 };
      c.subs++;
      c.items += sub.items.size;
      perSession.set(key, c);
      subscriptions.push({
        id: sub.id,
        session: key === undefined ? "(detached)" : (names.get(key) ?? String(key)),
        publishingInterval: sub.publishingInterval,
        items: sub.items.size,
        enabled: sub.publishingEnabled,
      });
    }
    const sessions: SessionView[] = [];
    for (const session of s.sessions.sessions()) {
      if (!session.activated) continue;
      const ch = session.channel;
      const policy = policyByUri(ch.securityPolicyUri)?.name ?? "None";
      const mode = ch.securityMode === MessageSecurityMode.SignAndEncrypt ? "SignAndEncrypt" : ch.securityMode === MessageSecurityMode.Sign ? "Sign" : "None";
      const c = perSession.get(session.sessionId.value);
      sessions.push({
        id: Number(session.sessionId.value),
        name: session.name,
        user: who(session.userId),
        role: session.role,
        address: ch.remoteAddress,
        security: policy === "None" ? "None" : `${policy}, ${mode}`,
        created: session.createdAt,
        lastActivity: session.lastActivity,
        subscriptions: c?.subs ?? 0,
        items: c?.items ?? 0,
      });
    }
    return { sessions, subscriptions };
  }

  history(now: number): HistoryView {
    const h = this.server.history;
    const st = h.writer.stats;
    let fileBytes = 0;
    let series = 0;
    try {
      fileBytes = h.store.fileBytes();
      series = h.store.seriesCount;
    } catch {
      // A closed or failing store: shown as 0.
    }
    // Over a second at least: a page opening between two ticks must not make the rate jump.
    const dt = (now - this.lastStoredAt) / 1000;
    if (this.lastStored < 0 || dt >= 1) {
      if (this.lastStored >= 0) this.writeRate = Math.round(((st.flushed - this.lastStored) / dt) * 10) / 10;
      this.lastStored = st.flushed;
      this.lastStoredAt = now;
    }
    const writeRate = this.writeRate;
    if (now - this.oldestAt > 60_000 && !this.oldestRunning) void this.refreshOldest(now);
    return {
      file: h.file,
      fileBytes,
      series,
      oldest: this.oldest,
      recorded: st.recorded,
      stored: st.flushed,
      queued: h.writer.queued,
      dropped: st.dropped,
      failing: st.failing,
      writeRate,
    };
  }

  /** The oldest stored sample of any tag: one indexed query per tag, in the gateway's slices. */
  private async refreshOldest(now: number): Promise<void> {
    this.oldestRunning = true;
    this.oldestAt = now;
    const task = this.server.slicer.task(OLDEST_LABEL);
    try {
      const store = this.server.history.store;
      const series = [...store.allSeries()];
      const found = { oldest: null as number | null };
      await task.loop(series.length, (from) => oldestOf(store, series, found, from, task));
      if (store.open) this.oldest = found.oldest;
    } catch {
      // The store is closing or failing; the next refresh tries again.
    } finally {
      task.done();
      this.oldestRunning = false;
    }
  }
}

const OLDEST_LABEL = "status page: the oldest stored sample (a slice)";

type Store = ViewSource["history"]["store"];

/** The oldest sample of the series from `from` on into `found`, until the slice is spent (or the store closed); returns where it stopped. */
function oldestOf(store: Store, series: readonly Parameters<Store["oldest"]>[0][], found: { oldest: number | null }, from: number, task: SlicedTask): number {
  let i = from;
  while (i < series.length) {
    if (!store.open) return series.length;
    // Without the staged rows: counting them would move them first (a write).
    const t = store.oldest(series[i]!, false);
    if (t !== undefined && (found.oldest === null || t < found.oldest)) found.oldest = t;
    i++;
    if ((i & 7) === 0 && task.over()) break;
  }
  return i;
}

/** What a page watching one device was last sent of its tags. */
export class TagBaseline {
  readonly device: string;
  private status = new Uint32Array(0);
  private time = new Float64Array(0);
  private num = new Float64Array(0);
  private objects: unknown[] = [];
  /** Poller the arrays were made for: a reload makes a new one, and everything is sent again. */
  private poller: DevicePoller | undefined;

  constructor(device: string) {
    this.device = device;
  }

  /**
   * The rows of `poller`'s tags that changed since the last call (all of them with `full`, or
   * after a reload). `from`..`to` bound the tags looked at, so that a caller can slice the work.
   */
  changed(poller: DevicePoller, values: ValueCache, full: boolean, from = 0, to = poller.tags.length): [number, ...TagRow][] {
    const tags = poller.tags;
    if (this.poller !== poller) {
      this.poller = poller;
      this.status = new Uint32Array(tags.length);
      this.time = new Float64Array(tags.length).fill(-1);
      this.num = new Float64Array(tags.length);
      this.objects = new Array<unknown>(tags.length).fill(undefined);
      full = true;
    }
    const out: [number, ...TagRow][] = [];
    for (let i = from; i < to && i < tags.length; i++) {
      const slot = tags[i]!.slot;
      const status = values.statusOf(slot);
      const time = values.sourceTimestampOf(slot);
      const n = values.numberOf(slot);
      const object = n === n ? undefined : values.get(slot);
      if (!full && status === this.status[i] && time === this.time[i] && (n === this.num[i] || (n !== n && this.num[i] !== this.num[i])) && object === this.objects[i]) continue;
      this.status[i] = status;
      this.time[i] = time;
      this.num[i] = n;
      this.objects[i] = object;
      out.push([i, ...tagRow(poller, i, values)]);
    }
    return out;
  }
}

/** A value as the page writes it (a DataValue's, not the cache's: a test read's). */
export function dataValueText(dv: DataValue): string {
  const v = dv.value?.value;
  if (typeof v === "number") return formatNumber(v);
  if (typeof v === "bigint") return v.toString();
  if (typeof v === "string") return v;
  return v === undefined || v === null ? "" : String(v);
}

/** One tag as the page shows it. */
export function tagRow(poller: DevicePoller, index: number, values: ValueCache): TagRow {
  const tag = poller.tags[index]!;
  const slot = tag.slot;
  const status = values.statusOf(slot);
  let text = "";
  if (values.hasValue(slot)) {
    const n = values.numberOf(slot);
    if (n === n) {
      text = values.info(slot)?.builtinType === BuiltinType.Boolean ? String(n !== 0) : formatNumber(n);
    } else {
      const v = values.get(slot).value?.value;
      text = typeof v === "string" ? v : typeof v === "bigint" ? v.toString() : v === undefined || v === null ? "" : String(v);
    }
  }
  return [tag.name, text, statusCodeName(status), quality(status), values.sourceTimestampOf(slot), tag.config.unit?.displayName ?? "", tag.config.history];
}
