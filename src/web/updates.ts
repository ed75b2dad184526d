// The page's live updates: server-sent events (one long HTTP response per open page, `data:`
// lines of JSON). One timer for all pages: every `updateInterval` it builds what changed once
// (gateway, devices, sessions, history, certificates, new log lines; per watched device, the
// tags whose status, time or value changed) and writes the same bytes to every page that
// watches it. Nothing runs while no page is open.
//
// A page that does not read (a laptop asleep, a slow link) is not buffered for: once its socket
// reports a full buffer it is skipped until 'drain', then sent everything afresh. A tick runs in
// the gateway's slices, a big device's tags compared a slice at a time (DESIGN: the event loop is
// a shared resource).
import type { ServerResponse } from "node:http";
import type { DeviceRuntime } from "../devices/device-runtime.js";
import type { DevicePoller } from "../devices/device-poller.js";
import type { Logger } from "../log.js";
import type { Pki } from "../security/pki.js";
import type { ValueCache } from "../values/value-cache.js";
import type { SlicedTask, Slicer } from "../sampling/slices.js";
import { certificatesView, StatusViews, TagBaseline, type CertificatesView } from "./status-view.js";

/** Tag rows compared between two looks at the clock. */
const ROWS_PER_CHECK = 32;
/** Certificates are looked up every this many ticks (a stat of three folders), and after an action. */
const CERT_EVERY = 5;

const EMPTY: Buffer = Buffer.alloc(0);
const TRACE_LABEL = "status page update";

/** One server-sent event (`event:` only for a named one), as bytes. */
function event(name: string, data: string): Buffer {
  return Buffer.from(`${name === "" ? "" : `event: ${name}\n`}data: ${data}\n\n`);
}

interface Client {
  readonly res: ServerResponse;
  /** The device whose tags the page shows ("" for none). */
  readonly device: string;
  /** Send everything next time (new, or back from a full socket). */
  full: boolean;
  blocked: boolean;
}

export interface UpdateStats {
  /** Ticks run since start. */
  ticks: number;
  /**
   * Their time on the event loop, ms: the sum of their synchronous slices, not the wall time
   * from start to end (other tasks run between the slices), and the longest slice, ms.
   */
  busyMs: number;
  maxSliceMs: number;
  /** Bytes written to pages. */
  bytes: number;
  /** Pages skipped at a tick because their socket was full. */
  skipped: number;
}

/** What the live updates read of the gateway beside the views: certificates, a device's poller, the values, and where to slice. */
export interface UpdateSource {
  readonly pki: Pki | undefined;
  readonly deviceRuntime: Pick<DeviceRuntime, "poller">;
  readonly values: ValueCache;
  readonly slicer: Slicer;
}

export class LiveUpdates {
  readonly stats: UpdateStats = { ticks: 0, busyMs: 0, maxSliceMs: 0, bytes: 0, skipped: 0 };
  private readonly clients = new Set<Client>();
  private readonly baselines = new Map<string, TagBaseline>();
  private readonly views: StatusViews;
  private readonly server: UpdateSource;
  private readonly log: Logger;
  private readonly interval: number;
  private readonly maxClients: number;
  private timer: NodeJS.Timeout | undefined;
  private running = false;
  private tickCount = 0;
  private lastDevices = "";
  private lastSessions = "";
  private lastCerts = "";
  private lastLogSeq = 0;
  private certsDirty = true;
  private certs: CertificatesView | undefined;

  constructor(o: { server: UpdateSource; log: Logger; views: StatusViews; interval: number; maxClients: number }) {
    this.server = o.server;
    this.log = o.log;
    this.views = o.views;
    this.interval = o.interval;
    this.maxClients = o.maxClients;
  }

  get clientCount(): number {
    return this.clients.size;
  }

  /** Starts a stream on `res`; false when maxClients are open already. */
  open(res: ServerResponse, device: string): boolean {
    if (this.clients.size >= this.maxClients) return false;
    res.writeHead(200, {
      "content-type": "text/event-stream; charset=utf-8",
      "cache-control": "no-store",
      connection: "keep-alive",
      "x-accel-buffering": "no",
    });
    const client: Client = { res, device, full: true, blocked: false };
    this.clients.add(client);
    res.on("close", () => {
      this.clients.delete(client);
      if (this.clients.size === 0) this.stopTimer();
    });
    res.on("drain", () => {
      client.blocked = false;
      client.full = true;
    });
    // The first message at once: the page fills without waiting a tick.
    void this.tick(client);
    if (this.timer === undefined) {
      this.timer = setInterval(() => void this.tick(), this.interval);
      this.timer.unref();
    }
    return true;
  }

  /** The certificate folders changed (an action): look again at the next tick. */
  certificatesChanged(): void {
    this.certsDirty = true;
  }

  close(): void {
    this.stopTimer();
    for (const c of this.clients) c.res.end();
    this.clients.clear();
  }

  private stopTimer(): void {
    if (this.timer !== undefined) clearInterval(this.timer);
    this.timer = undefined;
    this.baselines.clear();
  }

  /** One round: what changed, to every page; or everything to `only`, a page that just opened. */
  private async tick(only?: Client): Promise<void> {
    if (only === undefined) {
      if (this.running) return;
      this.running = true;
    }
    // Named in the loop trace: a late sampling slot says whether a page's update held it.
    const task = this.server.slicer.task(TRACE_LABEL);
    try {
      const targets = only !== undefined ? [only] : [...this.clients].filter((c) => !c.blocked);
      if (only === undefined) this.stats.skipped += this.clients.size - targets.length;
      if (targets.length === 0) return;
      const now = Date.now();
      const gateway = this.views.gateway(now);
      const history = this.views.history(now);
      const devices = this.views.devices();
      const { sessions, subscriptions } = this.views.sessions();
      const anyFull = targets.some((c) => c.full);
      if (this.certsDirty || ++this.tickCount % CERT_EVERY === 0 || this.certs === undefined) {
        this.certs = certificatesView(this.server.pki);
        this.certsDirty = false;
      }
      const certs = this.certs;
      // Each message is made into bytes once and the same Buffer written to every page.
      const full = anyFull
        ? event("", JSON.stringify({ reset: true, t: now, gateway, history, devices, sessions, subscriptions, certificates: certs, log: this.log.recent(0) }))
        : EMPTY;
      let partial: Buffer = EMPTY;
      if (only === undefined) {
        // What the pages that are up to date have not seen yet; the comparisons move on only here.
        const msg: Record<string, unknown> = { t: now, gateway, history };
        const devicesText = JSON.stringify(devices);
        if (devicesText !== this.lastDevices) msg.devices = devices;
        this.lastDevices = devicesText;
        const sessionsText = JSON.stringify([sessions, subscriptions]);
        if (sessionsText !== this.lastSessions) Object.assign(msg, { sessions, subscriptions });
        this.lastSessions = sessionsText;
        const certsText = JSON.stringify(certs);
        if (certsText !== this.lastCerts) msg.certificates = certs;
        this.lastCerts = certsText;
        const lines = this.log.recent(this.lastLogSeq);
        this.lastLogSeq = this.log.lastSeq;
        if (lines.length > 0) msg.log = lines;
        partial = event("", JSON.stringify(msg));
      }
      await task.yield();

      // Per watched device: the rows changed since the last tick (shared by the pages that are up
      // to date), and all rows for pages that start afresh; each built once.
      const tagFull = new Map<string, Buffer>();
      const tagDelta = new Map<string, Buffer>();
      for (const c of targets) {
        if (c.device === "" || tagFull.has(c.device) || tagDelta.has(c.device)) continue;
        const poller = this.server.deviceRuntime.poller(c.device);
        if (poller === undefined) continue;
        const name = c.device;
        const needFull = targets.some((t) => t.device === name && t.full);
        const needDelta = only === undefined && targets.some((t) => t.device === name && !t.full);
        const passes: [TagBaseline, boolean, Map<string, Buffer>][] = [];
        if (needDelta) {
          let shared = this.baselines.get(name);
          if (shared === undefined) this.baselines.set(name, (shared = new TagBaseline(name)));
          passes.push([shared, false, tagDelta]);
        }
        if (needFull) passes.push([new TagBaseline(name), true, tagFull]);
        for (const [baseline, all, into] of passes) {
          const rows: unknown[] = [];
          const values = this.server.values;
          await task.loop(poller.tags.length, (from) => changedRows(baseline, poller, values, all, rows, from, task));
          // `count`: a reload may have left the device fewer tags; the page drops the rows past it.
          if (all || rows.length > 0) into.set(name, event("tags", JSON.stringify({ device: name, count: poller.tags.length, rows })));
        }
      }

      for (const c of targets) {
        if (c.res.destroyed) continue;
        const tags = c.device === "" ? undefined : (c.full ? tagFull : tagDelta).get(c.device);
        const main = c.full ? full : partial;
        c.full = false;
        this.stats.bytes += main.length + (tags?.length ?? 0);
        let room = c.res.write(main);
        if (tags !== undefined) room = c.res.write(tags);
        if (!room) {
          c.blocked = true;
          this.stats.skipped++;
        }
      }
    } catch (err) {
      this.log.warn(`status page: update failed: ${err instanceof Error ? err.message : String(err)}`);
    } finally {
      task.done();
      this.stats.busyMs += task.busyMs;
      if (task.longestMs > this.stats.maxSliceMs) this.stats.maxSliceMs = task.longestMs;
      if (only === undefined) {
        this.running = false;
        this.stats.ticks++;
      }
    }
  }
}

/** The rows of a device's tags from `from` on that changed since `baseline` (all with `all`), until the slice is spent; returns where it stopped. */
function changedRows(baseline: TagBaseline, poller: DevicePoller, values: ValueCache, all: boolean, rows: unknown[], from: number, task: SlicedTask): number {
  const n = poller.tags.length;
  let i = from;
  while (i < n) {
    const to = Math.min(n, i + ROWS_PER_CHECK);
    for (const row of baseline.changed(poller, values, all, i, to)) rows.push(row);
    i = to;
    if (task.over()) break;
  }
  return i;
}
