// How the status page writes what it shows: numbers, sizes, durations, times, and which text goes
// in which cell of each table. One function, run twice: by the server to render the page's first
// paint (page-render.ts), and by the browser for every update after it, from its own source
// (`${pageFormat}` in the page script, page-script.ts). So the first paint and the updates cannot
// differ in a digit, and there is one place that decides how a time looks.
//
// Its body is what the browser runs: it refers to nothing outside itself (types only are
// imported), and uses nothing TypeScript would have to emit helpers for.
//
// Times are ISO 8601 with a 24-hour clock, "2026-12-05 14:02:09", in the gateway's time zone
// (`tzOffset`, minutes east of UTC), the one its journal and its settings use; the page's header
// says which it is. A laptop in another zone sees the plant's time, as the log lines show it.

import type { CertificatesView, CertificateView, DeviceView, GatewayView, HistoryView, SessionView, SubscriptionView, TagRow } from "./status-view.js";

/** One table row: a stable key (rows are updated in place), data attributes, and its cells. */
export interface RowSpec {
  readonly key: string;
  readonly data: Readonly<Record<string, string>>;
  readonly cls?: string;
  readonly cells: readonly CellSpec[];
}

/** A cell: its text and class; `state` becomes data-state; `act` makes it an action button. */
export interface CellSpec {
  readonly text: string;
  readonly cls: string;
  readonly state?: string;
  readonly act?: { readonly label: string; readonly action: string; readonly arg: string };
}

/** A tag row as the updates carry it: its index in the device's tags, then the TagRow. */
export type IndexedTagRow = readonly [number, ...TagRow];

export type PageFormat = ReturnType<typeof pageFormat>;

export function pageFormat(tzOffset: number) {
  function pad(n: number, w: number): string {
    let s = String(n);
    while (s.length < w) s = "0" + s;
    return s;
  }
  /** "2026-12-05 14:02:09" in the gateway's zone; "—" for no time. */
  function time(ms: number | null): string {
    if (ms === null || !(ms > 0)) return "—";
    const d = new Date(ms + tzOffset * 60000);
    return d.getUTCFullYear() + "-" + pad(d.getUTCMonth() + 1, 2) + "-" + pad(d.getUTCDate(), 2) + " " + clock(ms);
  }
  /** "14:02:09". */
  function clock(ms: number): string {
    if (!(ms > 0)) return "—";
    const d = new Date(ms + tzOffset * 60000);
    return pad(d.getUTCHours(), 2) + ":" + pad(d.getUTCMinutes(), 2) + ":" + pad(d.getUTCSeconds(), 2);
  }
  /** "14:02:09.250" (a trend's cursor). */
  function clockMs(ms: number): string {
    return clock(ms) + "." + pad(Math.floor(ms) % 1000, 3);
  }
  /** "UTC+02:00". */
  function zone(): string {
    const a = Math.abs(tzOffset);
    return "UTC" + (tzOffset < 0 ? "-" : "+") + pad(Math.floor(a / 60), 2) + ":" + pad(a % 60, 2);
  }
  /** "2026-12-05" of an ISO time or a time in ms (certificates' validity). */
  function day(ms: number): string {
    return time(ms).slice(0, 10);
  }
  function bytes(n: number | null | undefined): string {
    if (n === null || n === undefined) return "—";
    const u = ["B", "KiB", "MiB", "GiB", "TiB"];
    let i = 0;
    while (n >= 1024 && i < 4) {
      n /= 1024;
      i++;
    }
    return (i ? n.toFixed(1) : String(n)) + " " + u[i];
  }
  function dur(seconds: number): string {
    const s = Math.floor(seconds);
    const d = Math.floor(s / 86400);
    const h = Math.floor(s / 3600) % 24;
    const m = Math.floor(s / 60) % 60;
    return d ? d + " d " + h + " h" : h ? h + " h " + m + " min" : m ? m + " min " + (s % 60) + " s" : s + " s";
  }
  function num(v: number | null | undefined, digits: number): string {
    return v === null || v === undefined ? "—" : Number(v).toFixed(digits);
  }
  function cell(text: string, cls?: string): CellSpec {
    return { text: text, cls: cls || "" };
  }

  function gatewayPairs(g: GatewayView): [string, string][] {
    return [
      ["Endpoint", g.endpoint],
      ["Uptime", dur(g.uptime)],
      ["CPU load", g.cpuLoad === null ? "—" : num(g.cpuLoad, 1) + " %"],
      ["CPU temperature", g.cpuTemperature === null ? "—" : num(g.cpuTemperature, 1) + " °C"],
      ["Memory", g.memoryTotal === null || g.memoryAvailable === null ? "—" : bytes(g.memoryTotal - g.memoryAvailable) + " of " + bytes(g.memoryTotal) + " in use"],
      ["Gateway process", bytes(g.processMemory) + " resident"],
      ["Disk (data)", g.diskTotal === null ? "—" : bytes(g.diskAvailable) + " free of " + bytes(g.diskTotal)],
      ["Clock", g.clock + " · times in " + zone()],
      ["Poll lateness p99", g.pollLatenessP99 === null ? "—" : num(g.pollLatenessP99, 1) + " ms"],
      ["Connections", String(g.channels)],
    ];
  }
  function historyPairs(h: HistoryView): [string, string][] {
    return [
      ["Database", h.file],
      ["Size", bytes(h.fileBytes)],
      ["Tags", String(h.series)],
      ["Oldest sample", time(h.oldest)],
      ["Write rate", num(h.writeRate, 1) + " samples/s"],
      ["Stored", String(h.stored)],
      ["Queued", String(h.queued)],
      ["Dropped", String(h.dropped)],
      ["Writing", h.failing ? "failing (disk full?)" : "yes"],
    ];
  }
  function deviceRow(d: DeviceView, now: number, watched: string): RowSpec {
    const st = d.state + (d.downSince > 0 ? " for " + dur((now - d.downSince) / 1000) : "");
    return {
      key: d.name,
      data: { device: d.name },
      cls: d.name === watched ? "watched" : "",
      cells: [
        cell(d.name),
        cell(d.driver + " · " + d.link),
        { text: st, cls: "state", state: d.state },
        cell(d.requests ? num(d.roundTrip, 1) + " ms" : "—", "num"),
        cell(String(d.requests), "num"),
        cell(String(d.errors), "num"),
        cell(String(d.skipped), "num"),
        cell(d.lastError, "err"),
      ],
    };
  }
  function tagRow(r: IndexedTagRow): RowSpec {
    return {
      key: String(r[0]),
      data: { tag: r[1], index: String(r[0]), history: r[7] ? "1" : "" },
      cells: [cell(r[1], "name"), cell(r[2], "num"), cell(r[6]), cell(r[3], "q" + r[4]), cell(time(r[5]))],
    };
  }
  function sessionRow(s: SessionView): RowSpec {
    return {
      key: String(s.id),
      data: {},
      cells: [cell(s.name), cell(s.user), cell(s.role), cell(s.address), cell(s.security), cell(time(s.created)), cell(String(s.subscriptions), "num"), cell(String(s.items), "num")],
    };
  }
  function subscriptionRow(s: SubscriptionView): RowSpec {
    return {
      key: String(s.id),
      data: {},
      cells: [cell(String(s.id), "num"), cell(s.session), cell(s.publishingInterval + " ms", "num"), cell(String(s.items), "num"), cell(s.enabled ? "on" : "off")],
    };
  }
  /** The certificate lists as rows: own, trusted, rejected; an admin gets Trust / Reject. */
  function certificateRows(c: CertificatesView, admin: boolean): RowSpec[] {
    const list: [string, CertificateView][] = [];
    if (c.own) list.push(["own", c.own]);
    c.trusted.forEach(function (x) {
      list.push(["trusted", x]);
    });
    c.rejected.forEach(function (x) {
      list.push(["rejected", x]);
    });
    return list.map(function (p) {
      const x = p[1];
      const action = p[0] === "rejected" ? "trust" : "reject";
      const act: CellSpec =
        admin && p[0] !== "own" ? { text: "", cls: "", act: { label: action === "trust" ? "Trust" : "Reject", action: action, arg: x.thumbprint } } : cell("");
      return {
        key: p[0] + x.thumbprint,
        data: { thumbprint: x.thumbprint, list: p[0] },
        cells: [cell(p[0]), cell(x.subject, "wrap"), cell(x.applicationUri, "wrap"), cell(x.thumbprint, "thumb"), cell(day(x.notAfter)), act],
      };
    });
  }

  return {
    time: time,
    clock: clock,
    clockMs: clockMs,
    zone: zone,
    bytes: bytes,
    dur: dur,
    num: num,
    gatewayPairs: gatewayPairs,
    historyPairs: historyPairs,
    deviceRow: deviceRow,
    tagRow: tagRow,
    sessionRow: sessionRow,
    subscriptionRow: subscriptionRow,
    certificateRows: certificateRows,
  };
}

/** The gateway's offset from UTC now, minutes east (what pageFormat takes). */
export function gatewayTzOffset(now = new Date()): number {
  return -now.getTimezoneOffset();
}
