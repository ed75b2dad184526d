// The status page's files: one HTML page, one style sheet, one script (no framework, no build
// step: about 14 KB in all, kept in the gateway's memory as Buffers). The script fills the page
// from the server-sent events of /api/events and changes only the cells whose values changed;
// it writes text with textContent only, never markup it was sent.

export const PAGE_HTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>fieldgate</title>
<link rel="stylesheet" href="/app.css">
<script src="/app.js" defer></script>
</head>
<body>
<header>
  <h1><span id="gw-name">fieldgate</span> <small id="gw-version"></small></h1>
  <span id="live" class="live off">connecting</span>
  <span id="who"></span>
  <form id="logout" method="post" action="/logout" hidden><button type="submit">Log out</button></form>
</header>
<main>
  <section id="attention-card" class="wide" hidden>
    <h2>Needs attention</h2>
    <ul id="attention"></ul>
  </section>
  <section id="gateway" class="card">
    <h2>Gateway</h2>
    <dl id="gw"></dl>
  </section>
  <section id="history-card" class="card">
    <h2>History</h2>
    <dl id="history"></dl>
  </section>
  <section id="devices-card" class="wide">
    <h2>Devices <button id="reload" type="button" hidden>Reload device map</button></h2>
    <table id="devices"><thead><tr><th>Device</th><th>Link</th><th>State</th><th>Round trip</th><th>Requests</th><th>Errors</th><th>Skipped</th><th>Last error</th></tr></thead><tbody></tbody></table>
  </section>
  <section id="tags-card" class="wide">
    <h2>Tags of <span id="tags-device">—</span></h2>
    <table id="tags"><thead><tr><th>Tag</th><th>Value</th><th>Unit</th><th>Quality</th><th>Source time</th></tr></thead><tbody></tbody></table>
  </section>
  <section id="sessions-card" class="wide">
    <h2>OPC UA sessions</h2>
    <table id="sessions"><thead><tr><th>Session</th><th>User</th><th>Role</th><th>Client</th><th>Security</th><th>Since</th><th>Subscriptions</th><th>Items</th></tr></thead><tbody></tbody></table>
    <table id="subscriptions"><thead><tr><th>Subscription</th><th>Session</th><th>Publishing interval</th><th>Items</th><th>Publishing</th></tr></thead><tbody></tbody></table>
  </section>
  <section id="certs-card" class="wide">
    <h2>Client certificates</h2>
    <table id="certs"><thead><tr><th>List</th><th>Subject</th><th>Application URI</th><th>Thumbprint</th><th>Valid until</th><th></th></tr></thead><tbody></tbody></table>
  </section>
  <section id="log-card" class="wide">
    <h2>Log</h2>
    <ol id="log"></ol>
  </section>
</main>
<div id="toast" role="status" hidden></div>
</body>
</html>
`;

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

export const APP_CSS = `:root{--bg:#f4f5f7;--fg:#1d2430;--muted:#667085;--card:#fff;--line:#e3e6ea;--ok:#1a7f37;--warn:#9a6700;--bad:#cf222e;--accent:#0b5cad}
*{box-sizing:border-box}body{margin:0;font:14px/1.4 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;background:var(--bg);color:var(--fg)}
header{display:flex;gap:1em;align-items:center;padding:.6em 1.2em;background:#1d2430;color:#fff}
header h1{font-size:1.2em;margin:0;flex:1}header small{color:#aab;font-weight:normal}
header button{background:transparent;color:#fff;border:1px solid #667;border-radius:4px;padding:.2em .7em;cursor:pointer}
.live{font-size:.85em;padding:.15em .6em;border-radius:1em;background:var(--ok)}.live.off{background:var(--bad)}
main{display:grid;grid-template-columns:1fr 1fr;gap:1em;padding:1em 1.2em}
.card,.wide{background:var(--card);border:1px solid var(--line);border-radius:6px;padding:.8em 1em}.wide{grid-column:1/-1;overflow-x:auto}
h2{font-size:1em;margin:0 0 .6em;display:flex;gap:1em;align-items:center}
dl{display:grid;grid-template-columns:max-content 1fr;gap:.2em 1em;margin:0}dt{color:var(--muted)}dd{margin:0;font-variant-numeric:tabular-nums}
table{border-collapse:collapse;width:100%}th,td{text-align:left;padding:.3em .6em;border-bottom:1px solid var(--line);white-space:nowrap}
th{color:var(--muted);font-weight:600;font-size:.9em}td.num{text-align:right;font-variant-numeric:tabular-nums}td.err{white-space:normal;color:var(--muted);max-width:32em}
#devices tbody tr{cursor:pointer}#devices tbody tr.watched{background:#eef4fb}
.state{font-weight:600}.state[data-state=ok]{color:var(--ok)}.state[data-state=failing],.state[data-state=demoted]{color:var(--bad)}.state[data-state=waiting],.state[data-state=disabled]{color:var(--muted)}
.q0{color:var(--ok)}.q1{color:var(--warn)}.q2{color:var(--bad)}
#log{list-style:none;margin:0;padding:0;max-height:18em;overflow-y:auto;font:12px/1.5 ui-monospace,Menlo,Consolas,monospace}
#log li{white-space:pre-wrap}#log .error,#log .warning{color:var(--bad)}#log .notice{color:var(--accent)}#log time{color:var(--muted);margin-right:.8em}
button.act{margin-right:.4em;border:1px solid var(--line);background:#fff;border-radius:4px;padding:.15em .6em;cursor:pointer}
#reload{font-size:.85em;border:1px solid var(--line);background:#fff;border-radius:4px;padding:.15em .7em;cursor:pointer}
#toast{position:fixed;bottom:1em;right:1em;max-width:40em;background:#1d2430;color:#fff;padding:.7em 1em;border-radius:6px;white-space:pre-wrap}
body.login{display:flex;justify-content:center;align-items:center;min-height:100vh}
body.login form{display:flex;flex-direction:column;gap:.8em;width:22em}body.login input{width:100%;padding:.4em;margin-top:.2em}
body.login button{padding:.5em;background:var(--accent);color:#fff;border:0;border-radius:4px;cursor:pointer}
.bad{color:var(--bad)}.hint{color:var(--muted);font-size:.85em}
#attention-card{border-color:var(--bad)}#attention{margin:0;padding-left:1.2em;color:var(--bad)}#attention li{margin:.2em 0}
@media (max-width:800px){main{grid-template-columns:1fr}}
`;

export const APP_JS = `"use strict";
(function () {
  var me = { role: "viewer", csrf: "", user: "", loginRequired: false };
  var watched = location.hash.length > 1 ? decodeURIComponent(location.hash.slice(1)) : "";
  var source = null;
  var tagRows = [];
  var logMax = 200;
  var $ = function (id) { return document.getElementById(id); };
  function el(tag, cls, text) { var e = document.createElement(tag); if (cls) e.className = cls; if (text !== undefined) e.textContent = text; return e; }
  function bytes(n) { if (n === null || n === undefined) return "—"; var u = ["B", "KiB", "MiB", "GiB", "TiB"], i = 0; while (n >= 1024 && i < 4) { n /= 1024; i++; } return (i ? n.toFixed(1) : n) + " " + u[i]; }
  function dur(s) { s = Math.floor(s); var d = Math.floor(s / 86400), h = Math.floor(s / 3600) % 24, m = Math.floor(s / 60) % 60; return d ? d + " d " + h + " h" : h ? h + " h " + m + " min" : m ? m + " min " + (s % 60) + " s" : s + " s"; }
  function time(ms) { return ms > 0 ? new Date(ms).toLocaleString() : "—"; }
  function clock(ms) { return ms > 0 ? new Date(ms).toLocaleTimeString() : "—"; }
  function num(v, digits) { return v === null || v === undefined ? "—" : Number(v).toFixed(digits); }
  function set(node, text) { if (node.textContent !== text) node.textContent = text; }
  function dl(node, pairs) {
    if (node.children.length !== pairs.length * 2) { node.textContent = ""; pairs.forEach(function (p) { node.appendChild(el("dt", "", p[0])); var dd = el("dd"); dd.dataset.key = p[0]; node.appendChild(dd); }); }
    pairs.forEach(function (p, i) { set(node.children[i * 2 + 1], p[1]); });
  }
  function toast(text) { var t = $("toast"); t.textContent = text; t.hidden = false; clearTimeout(toast.timer); toast.timer = setTimeout(function () { t.hidden = true; }, 8000); }
  function post(path, body) {
    return fetch(path, { method: "POST", headers: { "content-type": "application/json", "x-fieldgate-csrf": me.csrf }, body: JSON.stringify(body || {}) })
      .then(function (r) { return r.json().then(function (j) { if (!r.ok) throw new Error(j.error || r.statusText); return j; }); });
  }

  function gateway(g) {
    set($("gw-name"), g.name); set($("gw-version"), "v" + g.version);
    dl($("gw"), [
      ["Endpoint", g.endpoint], ["Uptime", dur(g.uptime)], ["CPU load", g.cpuLoad === null ? "—" : num(g.cpuLoad, 1) + " %"],
      ["CPU temperature", g.cpuTemperature === null ? "—" : num(g.cpuTemperature, 1) + " °C"],
      ["Memory", g.memoryTotal === null ? "—" : bytes(g.memoryTotal - g.memoryAvailable) + " of " + bytes(g.memoryTotal) + " in use"],
      ["Gateway process", bytes(g.processMemory) + " resident"],
      ["Disk (data)", g.diskTotal === null ? "—" : bytes(g.diskAvailable) + " free of " + bytes(g.diskTotal)],
      ["Clock", g.clock], ["Poll lateness p99", g.pollLatenessP99 === null ? "—" : num(g.pollLatenessP99, 1) + " ms"], ["Connections", String(g.channels)]
    ]);
  }
  function attention(list) {
    var ul = $("attention");
    $("attention-card").hidden = list.length === 0;
    if (ul.children.length === list.length && list.every(function (t, i) { return ul.children[i].textContent === t; })) return;
    ul.textContent = "";
    list.forEach(function (t) { ul.appendChild(el("li", "", t)); });
  }
  function historyCard(h) {
    dl($("history"), [
      ["Database", h.file], ["Size", bytes(h.fileBytes)], ["Tags", String(h.series)], ["Oldest sample", time(h.oldest)],
      ["Write rate", num(h.writeRate, 1) + " samples/s"], ["Stored", String(h.stored)], ["Queued", String(h.queued)],
      ["Dropped", String(h.dropped)], ["Writing", h.failing ? "failing (disk full?)" : "yes"]
    ]);
  }
  function rows(tbody, list, key, fill) {
    var byKey = {};
    Array.prototype.forEach.call(tbody.children, function (tr) { byKey[tr.dataset.key] = tr; });
    list.forEach(function (item, i) {
      var k = String(key(item)), tr = byKey[k];
      if (!tr) { tr = el("tr"); tr.dataset.key = k; }
      delete byKey[k];
      if (tbody.children[i] !== tr) tbody.insertBefore(tr, tbody.children[i] || null);
      fill(tr, item);
    });
    Object.keys(byKey).forEach(function (k) { byKey[k].remove(); });
  }
  function cells(tr, values, classes) {
    while (tr.children.length < values.length) tr.appendChild(el("td", classes[tr.children.length] || ""));
    values.forEach(function (v, i) { if (typeof v === "string") set(tr.children[i], v); else { tr.children[i].textContent = ""; tr.children[i].appendChild(v); } });
  }
  function devices(list) {
    rows($("devices").tBodies[0], list, function (d) { return d.name; }, function (tr, d) {
      tr.dataset.device = d.name;
      tr.classList.toggle("watched", d.name === watched);
      var st = d.state + (d.downSince > 0 ? " for " + dur((Date.now() - d.downSince) / 1000) : "");
      cells(tr, [d.name, d.driver + " · " + d.link, st, d.requests ? num(d.roundTrip, 1) + " ms" : "—", String(d.requests), String(d.errors), String(d.skipped), d.lastError], ["", "", "state", "num", "num", "num", "num", "err"]);
      tr.children[2].dataset.state = d.state;
    });
    if (watched === "" && list.length > 0) watch(list[0].name);
  }
  function tags(msg) {
    var tbody = $("tags").tBodies[0];
    if (msg.device !== watched) return;
    set($("tags-device"), msg.device);
    msg.rows.forEach(function (r) {
      var i = r[0], tr = tagRows[i];
      if (!tr) { tr = tagRows[i] = el("tr"); tr.dataset.tag = r[1]; for (var c = 0; c < 5; c++) tr.appendChild(el("td", c === 1 ? "num" : "")); tbody.appendChild(tr); }
      set(tr.children[0], r[1]); set(tr.children[1], r[2]); set(tr.children[2], r[6]);
      set(tr.children[3], r[3]); tr.children[3].className = "q" + r[4]; set(tr.children[4], time(r[5]));
    });
  }
  function sessions(list, subs) {
    rows($("sessions").tBodies[0], list, function (s) { return s.id; }, function (tr, s) {
      cells(tr, [s.name, s.user, s.role, s.address, s.security, time(s.created), String(s.subscriptions), String(s.items)], ["", "", "", "", "", "", "num", "num"]);
    });
    rows($("subscriptions").tBodies[0], subs, function (s) { return s.id; }, function (tr, s) {
      cells(tr, [String(s.id), s.session, s.publishingInterval + " ms", String(s.items), s.enabled ? "on" : "off"], ["num", "", "num", "num", ""]);
    });
  }
  function certificates(c) {
    var list = [];
    if (c.own) list.push(["own", c.own]);
    c.trusted.forEach(function (x) { list.push(["trusted", x]); });
    c.rejected.forEach(function (x) { list.push(["rejected", x]); });
    rows($("certs").tBodies[0], list, function (p) { return p[0] + p[1].thumbprint; }, function (tr, p) {
      var x = p[1], actions = el("span");
      tr.dataset.thumbprint = x.thumbprint; tr.dataset.list = p[0];
      if (me.role === "admin" && p[0] !== "own") {
        var b = el("button", "act", p[0] === "rejected" ? "Trust" : "Reject");
        b.dataset.action = p[0] === "rejected" ? "trust" : "reject";
        b.onclick = function () { post("/api/certificates/" + b.dataset.action, { thumbprint: x.thumbprint }).then(function (r) { toast(r.message); }, function (e) { toast(e.message); }); };
        actions.appendChild(b);
      }
      cells(tr, [p[0], x.subject, x.applicationUri, x.thumbprint, new Date(x.notAfter).toISOString().slice(0, 10), actions], ["", "", "", "", "", ""]);
    });
  }
  var logSeq = 0;
  function log(lines, reset) {
    var ol = $("log");
    if (reset) { ol.textContent = ""; logSeq = 0; }
    lines.forEach(function (l) { if (l.seq <= logSeq) return; logSeq = l.seq; var li = el("li", l.level); li.appendChild(el("time", "", clock(l.time))); li.appendChild(document.createTextNode(l.level + ": " + l.message)); ol.insertBefore(li, ol.firstChild); });
    while (ol.children.length > logMax) ol.lastChild.remove();
  }
  function onMessage(ev) {
    var m = JSON.parse(ev.data);
    var live = $("live"); live.classList.remove("off"); set(live, "live " + clock(m.t));
    if (m.gateway) { gateway(m.gateway); attention(m.gateway.attention || []); }
    if (m.history) historyCard(m.history);
    if (m.devices) devices(m.devices);
    if (m.sessions) sessions(m.sessions, m.subscriptions || []);
    if (m.certificates) certificates(m.certificates);
    if (m.log) log(m.log, m.reset);
  }
  function connect() {
    if (source) source.close();
    tagRows = []; $("tags").tBodies[0].textContent = "";
    source = new EventSource("/api/events" + (watched ? "?device=" + encodeURIComponent(watched) : ""));
    source.onmessage = onMessage;
    source.addEventListener("tags", function (ev) { tags(JSON.parse(ev.data)); });
    source.onerror = function () { var live = $("live"); live.classList.add("off"); set(live, "reconnecting"); };
  }
  function watch(name) {
    if (name === watched) return;
    watched = name; window.history.replaceState(null, "", "#" + encodeURIComponent(name));
    Array.prototype.forEach.call($("devices").tBodies[0].children, function (tr) { tr.classList.toggle("watched", tr.dataset.device === name); });
    connect();
  }
  document.addEventListener("DOMContentLoaded", function () {
    $("devices").tBodies[0].addEventListener("click", function (e) { var tr = e.target.closest("tr"); if (tr) watch(tr.dataset.device); });
    $("reload").onclick = function () {
      post("/api/reload").then(function (r) { toast(r.message); }, function (e) { toast(e.message); });
    };
    fetch("/api/me").then(function (r) { return r.json(); }).then(function (m) {
      me = m;
      set($("who"), m.loginRequired ? m.user + " (" + m.role + ")" : "local view (no users configured)");
      $("logout").hidden = !m.loginRequired;
      $("reload").hidden = m.role !== "admin";
      connect();
    });
  });
})();
`;
