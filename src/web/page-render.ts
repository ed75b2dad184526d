// The status page's HTML, rendered with the gateway's state in it: the first paint shows the
// gateway, its devices, the watched device's tags, sessions, certificates and log as they are
// (no empty "connecting" cards waiting for the first server-sent event). The rows are written
// by pageFormat (page-format.ts), as the browser writes them afterwards, with the same keys, so
// that the script takes them over and updates them in place. Every text is escaped.
import { pageFormat, type IndexedTagRow, type RowSpec } from "./page-format.js";
import type { CertificatesView, DeviceView, GatewayView, HistoryView, SessionView, SubscriptionView } from "./status-view.js";
import type { LogRecord } from "../log.js";

/** What the first paint shows. */
export interface PageState {
  readonly t: number;
  readonly tzOffset: number;
  readonly gateway: GatewayView;
  readonly history: HistoryView;
  readonly devices: readonly DeviceView[];
  /** The device whose tags are shown, and its rows ("" and none without devices). */
  readonly watched: string;
  readonly tags: readonly IndexedTagRow[];
  readonly sessions: readonly SessionView[];
  readonly subscriptions: readonly SubscriptionView[];
  readonly certificates: CertificatesView;
  readonly log: readonly LogRecord[];
  /** The last import of the FAT drive's settings, when there was one. */
  readonly settingsImport?: SettingsImportView;
  /** A network change on trial: reverted at `deadline` (ISO 8601) unless an admin confirms it. */
  readonly networkTrial?: { readonly deadline: string; readonly by: string };
}

/** The last import of the FAT drive's fieldgate/ folder, as the page shows it. */
export interface SettingsImportView {
  readonly result: string;
  readonly at: string;
  readonly files: readonly string[];
  /** The issues in words, one a line (file:line:column: key: what). */
  readonly issues: readonly string[];
}

export interface Viewer {
  readonly user: string;
  readonly role: string;
  readonly csrf: string;
  readonly loginRequired: boolean;
}

const ESCAPES: Readonly<Record<string, string>> = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };

export function esc(s: string): string {
  return s.replace(/[&<>"']/g, (c) => ESCAPES[c]!);
}

function dataAttrs(data: Readonly<Record<string, string>>): string {
  let out = "";
  for (const [k, v] of Object.entries(data)) out += ` data-${k}="${esc(v)}"`;
  return out;
}

/** A row as the script's fillRow makes it. */
export function rowHtml(r: RowSpec): string {
  let cells = "";
  for (const c of r.cells) {
    const inner = c.act ? `<button class="act" type="button" data-action="${esc(c.act.action)}" data-arg="${esc(c.act.arg)}">${esc(c.act.label)}</button>` : esc(c.text);
    cells += `<td${c.cls ? ` class="${esc(c.cls)}"` : ""}${c.state !== undefined ? ` data-state="${esc(c.state)}"` : ""}>${inner}</td>`;
  }
  return `<tr data-key="${esc(r.key)}"${dataAttrs(r.data)}${r.cls ? ` class="${esc(r.cls)}"` : ""}>${cells}</tr>`;
}

function dlHtml(pairs: readonly (readonly [string, string])[]): string {
  return pairs.map(([k, v]) => `<dt>${esc(k)}</dt><dd data-key="${esc(k)}">${esc(v)}</dd>`).join("");
}

function logHtml(lines: readonly LogRecord[], clock: (ms: number) => string): string {
  let out = "";
  // Newest first, as the script inserts them.
  for (let i = lines.length - 1; i >= 0; i--) {
    const l = lines[i]!;
    out += `<li class="${esc(l.level)}"><time>${esc(clock(l.time))}</time>${esc(`${l.level}: ${l.message}`)}</li>`;
  }
  return out;
}

function importHtml(s: SettingsImportView | undefined): string {
  if (s === undefined) return `<section id="import-card" class="wide" hidden></section>`;
  const ok = s.result === "applied";
  const head = ok ? `applied ${esc(s.at)}: ${esc(s.files.join(", "))}` : `refused ${esc(s.at)}: nothing was changed, the gateway runs with its previous settings`;
  return (
    `<section id="import-card" class="wide"><h2>Settings from the FIELDGATE drive</h2>` +
    `<p class="${ok ? "ok" : "bad"}" id="import-result">${head}</p>` +
    (s.issues.length > 0 ? `<pre id="import-issues">${esc(s.issues.join("\n"))}</pre>` : "") +
    `</section>`
  );
}

/** The network change on trial, wherever the page is opened (the new address, most likely): confirm it, or it is undone. */
function trialHtml(t: PageState["networkTrial"], admin: boolean, time: (ms: number) => string): string {
  if (t === undefined) return "";
  const when = time(Date.parse(t.deadline));
  return (
    `<section id="network-trial" class="wide"><h2>Network settings on trial</h2>` +
    `<p>${esc(t.by)} changed the network settings. They are undone at ${esc(when)} unless confirmed${admin ? "" : " by an admin"}.</p>` +
    (admin ? `<button type="button" class="tool primary" id="confirm-network">Keep these network settings</button>` : "") +
    `</section>`
  );
}

/** The page, logged in as `who`, with `s` in it. */
export function pageHtml(s: PageState, who: Viewer): string {
  const f = pageFormat(s.tzOffset);
  const admin = who.role === "admin";
  const rows = (list: readonly RowSpec[]): string => list.map(rowHtml).join("");
  const lastSeq = s.log.length > 0 ? s.log[s.log.length - 1]!.seq : 0;
  const whoText = who.loginRequired ? `${who.user} (${who.role})` : "local view (no users configured)";
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${esc(s.gateway.name)}: fieldgate</title>
<link rel="stylesheet" href="/app.css">
<script src="/app.js" defer></script>
</head>
<body data-user="${esc(who.user)}" data-role="${esc(who.role)}" data-csrf="${esc(who.csrf)}" data-login="${who.loginRequired ? "1" : ""}" data-tz="${s.tzOffset}" data-t="${s.t}">
<header>
  <h1><span id="gw-name">${esc(s.gateway.name)}</span> <small id="gw-version">v${esc(s.gateway.version)}</small></h1>
  <nav id="settings-nav"><button type="button" data-open="devices" id="edit-devices">Device map</button><button type="button" data-open="gateway" id="edit-gateway">Gateway settings</button><button type="button" data-open="network" id="edit-network">Network</button></nav>
  <span id="live" class="live">live ${esc(f.clock(s.t))}</span>
  <span id="who">${esc(whoText)}</span>
  <form id="logout" method="post" action="/logout"${who.loginRequired ? "" : " hidden"}><button type="submit">Log out</button></form>
</header>
<main>
  <section id="attention-card" class="wide"${s.gateway.attention.length > 0 ? "" : " hidden"}>
    <h2>Needs attention</h2>
    <ul id="attention">${s.gateway.attention.map((t) => `<li>${esc(t)}</li>`).join("")}</ul>
  </section>
  ${trialHtml(s.networkTrial, admin, f.time)}
  ${importHtml(s.settingsImport)}
  <section id="editor-card" class="wide" hidden></section>
  <section id="gateway" class="card">
    <h2>Gateway</h2>
    <dl id="gw">${dlHtml(f.gatewayPairs(s.gateway))}</dl>
  </section>
  <section id="history-card" class="card">
    <h2>History</h2>
    <dl id="history">${dlHtml(f.historyPairs(s.history))}</dl>
  </section>
  <section id="devices-card" class="wide">
    <h2>Devices <button id="reload" type="button"${admin ? "" : " hidden"}>Reload device map</button></h2>
    <table id="devices"><thead><tr><th>Device</th><th>Link</th><th>State</th><th>Round trip</th><th>Requests</th><th>Errors</th><th>Skipped</th><th>Last error</th></tr></thead><tbody>${rows(s.devices.map((d) => f.deviceRow(d, s.t, s.watched)))}</tbody></table>
  </section>
  <section id="tags-card" class="wide">
    <h2><span>Tags of <span id="tags-device">${esc(s.watched || "—")}</span></span> <span class="hint">click a tag for its trend; ◷ kept in the history</span></h2>
    <table id="tags"><thead><tr><th>Tag</th><th>Value</th><th>Unit</th><th>Quality</th><th>Source time</th></tr></thead><tbody>${rows(s.tags.map((r) => f.tagRow(r)))}</tbody></table>
  </section>
  <section id="trend-card" class="wide" hidden></section>
  <section id="sessions-card" class="wide">
    <h2>OPC UA sessions</h2>
    <table id="sessions"><thead><tr><th>Session</th><th>User</th><th>Role</th><th>Client</th><th>Security</th><th>Since</th><th>Subscriptions</th><th>Items</th></tr></thead><tbody>${rows(s.sessions.map(f.sessionRow))}</tbody></table>
    <table id="subscriptions"><thead><tr><th>Subscription</th><th>Session</th><th>Publishing interval</th><th>Items</th><th>Publishing</th></tr></thead><tbody>${rows(s.subscriptions.map(f.subscriptionRow))}</tbody></table>
  </section>
  <section id="certs-card" class="wide">
    <h2>Client certificates</h2>
    <table id="certs"><thead><tr><th>List</th><th>Subject</th><th>Application URI</th><th>Thumbprint</th><th>Valid until</th><th></th></tr></thead><tbody>${rows(f.certificateRows(s.certificates, admin))}</tbody></table>
  </section>
  <section id="log-card" class="wide">
    <h2>Log</h2>
    <ol id="log" data-seq="${lastSeq}">${logHtml(s.log, f.clock)}</ol>
  </section>
</main>
<div id="toast" role="status" hidden></div>
</body>
</html>
`;
}

export function loginHtml(failed: boolean): string {
  return `<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>fieldgate: log in</title><link rel="stylesheet" href="/app.css"></head>
<body class="login">
<form method="post" action="/login" class="card">
<h1>fieldgate</h1>
${failed ? '<p class="bad" id="login-failed">Wrong user name or password, or too many attempts: try again later.</p>' : ""}
<label>User <input name="user" autocomplete="username" required autofocus></label>
<label>Password <input name="password" type="password" autocomplete="current-password" required></label>
<button type="submit">Log in</button>
<p class="hint">The users of gateway.yaml (<code>users:</code>, passwords from <code>fieldgate password</code>).</p>
</form>
</body>
</html>
`;
}
