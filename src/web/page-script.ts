// The status page's script (no framework, no build step). The page arrives rendered
// (page-render.ts); this takes its rows over and keeps them current from the server-sent events
// of /api/events, changing only the cells whose text changed. It writes text with textContent
// only, never markup it was sent. It also keeps the values of the watched device's tags since
// the page opened (for their trends), and loads the settings editor (editor.js) and the trend
// chart (trend.js) the first time they are asked for, so a page that only watches costs neither.
import { pageFormat } from "./page-format.js";

/** Values kept per tag for its trend since the page opened, and for all the device's tags together. */
export const LIVE_POINTS_PER_TAG = 2000;
export const LIVE_POINTS_PER_DEVICE = 200_000;

export const APP_JS = `"use strict";
(function () {
  var $ = function (id) { return document.getElementById(id); };
  var body = document.body;
  var me = { user: body.dataset.user, role: body.dataset.role, csrf: body.dataset.csrf, loginRequired: body.dataset.login === "1" };
  var F = (${pageFormat.toString()})(Number(body.dataset.tz) || 0);
  var watched = $("tags-device").textContent === "—" ? "" : $("tags-device").textContent;
  var source = null;
  var tagRows = {};
  var tagCount = 0;
  var logMax = 200;
  var logSeq = Number($("log").dataset.seq) || 0;
  /** Values since the page opened, per tag of the watched device: {t: [], v: []}. */
  var live = {};
  var listeners = [];
  function el(tag, cls, text) { var e = document.createElement(tag); if (cls) e.className = cls; if (text !== undefined) e.textContent = text; return e; }
  function set(node, text) { if (node.textContent !== text) node.textContent = text; }
  function dl(node, pairs) {
    if (node.children.length !== pairs.length * 2) { node.textContent = ""; pairs.forEach(function (p) { node.appendChild(el("dt", "", p[0])); var dd = el("dd"); dd.dataset.key = p[0]; node.appendChild(dd); }); }
    pairs.forEach(function (p, i) { set(node.children[i * 2 + 1], p[1]); });
  }
  function toast(text) { var t = $("toast"); t.textContent = text; t.hidden = false; clearTimeout(toast.timer); toast.timer = setTimeout(function () { t.hidden = true; }, 8000); }
  function request(method, path, body, type, extra) {
    var headers = { "x-fieldgate-csrf": me.csrf };
    if (extra) Object.keys(extra).forEach(function (k) { headers[k] = extra[k]; });
    if (body !== undefined) headers["content-type"] = type || "application/json";
    return fetch(path, { method: method, headers: headers, body: body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body) })
      .then(function (r) {
        var json = (r.headers.get("content-type") || "").indexOf("json") >= 0;
        return (json ? r.json() : r.text()).then(function (j) {
          if (!r.ok) { var e = new Error((j && j.error) || r.statusText); e.status = r.status; e.body = j; throw e; }
          return j;
        });
      });
  }
  function post(path, body, type) { return request("POST", path, body === undefined ? {} : body, type); }

  function fillRow(tr, r) {
    tr.dataset.key = r.key;
    Object.keys(r.data).forEach(function (k) { if (tr.dataset[k] !== r.data[k]) tr.dataset[k] = r.data[k]; });
    if (r.cls !== undefined && tr.className !== r.cls) tr.className = r.cls;
    while (tr.children.length < r.cells.length) tr.appendChild(el("td"));
    r.cells.forEach(function (c, i) {
      var td = tr.children[i];
      if (td.className !== c.cls) td.className = c.cls;
      if (c.state !== undefined) td.dataset.state = c.state;
      if (c.act) {
        var b = td.firstElementChild;
        if (!b || b.dataset.action !== c.act.action || b.dataset.arg !== c.act.arg) { td.textContent = ""; b = el("button", "act", c.act.label); b.type = "button"; b.dataset.action = c.act.action; b.dataset.arg = c.act.arg; td.appendChild(b); }
      } else set(td, c.text);
    });
  }
  function rows(tbody, list) {
    var byKey = {};
    Array.prototype.forEach.call(tbody.children, function (tr) { byKey[tr.dataset.key] = tr; });
    list.forEach(function (r, i) {
      var tr = byKey[r.key];
      if (!tr) tr = el("tr");
      delete byKey[r.key];
      if (tbody.children[i] !== tr) tbody.insertBefore(tr, tbody.children[i] || null);
      fillRow(tr, r);
    });
    Object.keys(byKey).forEach(function (k) { byKey[k].remove(); });
  }

  function attention(list) {
    var ul = $("attention");
    $("attention-card").hidden = list.length === 0;
    if (ul.children.length === list.length && list.every(function (t, i) { return ul.children[i].textContent === t; })) return;
    ul.textContent = "";
    list.forEach(function (t) { ul.appendChild(el("li", "", t)); });
  }
  function devices(list, now) {
    rows($("devices").tBodies[0], list.map(function (d) { return F.deviceRow(d, now, watched); }));
    list.forEach(function (d) { if (d.name === watched) tagCount = d.tags; });
    if (watched === "" && list.length > 0) watch(list[0].name);
  }
  function keep(name, t, text) {
    var v = text === "true" ? 1 : text === "false" ? 0 : text === "" ? NaN : Number(text);
    if (v !== v || !(t > 0)) return;
    var s = live[name] || (live[name] = { t: [], v: [] });
    if (s.t.length > 0 && s.t[s.t.length - 1] === t) return;
    var cap = Math.max(100, Math.min(${LIVE_POINTS_PER_TAG}, Math.floor(${LIVE_POINTS_PER_DEVICE} / Math.max(1, tagCount))));
    s.t.push(t); s.v.push(v);
    if (s.t.length > cap) { s.t.splice(0, s.t.length - cap); s.v.splice(0, s.v.length - cap); }
  }
  function tags(msg) {
    if (msg.device !== watched) return;
    set($("tags-device"), msg.device);
    var tbody = $("tags").tBodies[0];
    Object.keys(tagRows).forEach(function (i) { if (Number(i) >= msg.count) { tagRows[i].remove(); delete tagRows[i]; } });
    msg.rows.forEach(function (r) {
      var tr = tagRows[r[0]];
      if (!tr) { tr = tagRows[r[0]] = el("tr"); tbody.appendChild(tr); }
      fillRow(tr, F.tagRow(r));
      keep(r[1], r[5], r[2]);
    });
    listeners.forEach(function (f) { f(msg); });
  }
  function sessions(list, subs) {
    rows($("sessions").tBodies[0], list.map(F.sessionRow));
    rows($("subscriptions").tBodies[0], subs.map(F.subscriptionRow));
  }
  function log(lines, reset) {
    var ol = $("log");
    if (reset) { ol.textContent = ""; logSeq = 0; }
    lines.forEach(function (l) { if (l.seq <= logSeq) return; logSeq = l.seq; var li = el("li", l.level); li.appendChild(el("time", "", F.clock(l.time))); li.appendChild(document.createTextNode(l.level + ": " + l.message)); ol.insertBefore(li, ol.firstChild); });
    while (ol.children.length > logMax) ol.lastChild.remove();
  }
  function onMessage(ev) {
    var m = JSON.parse(ev.data);
    var liveBadge = $("live"); liveBadge.classList.remove("off"); set(liveBadge, "live " + F.clock(m.t));
    if (m.gateway) { dl($("gw"), F.gatewayPairs(m.gateway)); attention(m.gateway.attention || []); }
    if (m.history) dl($("history"), F.historyPairs(m.history));
    if (m.devices) devices(m.devices, m.t);
    if (m.sessions) sessions(m.sessions, m.subscriptions || []);
    if (m.certificates) rows($("certs").tBodies[0], F.certificateRows(m.certificates, me.role === "admin"));
    if (m.log) log(m.log, m.reset);
  }
  function takeTagRows() {
    tagRows = {};
    Array.prototype.forEach.call($("tags").tBodies[0].children, function (tr) { tagRows[tr.dataset.index] = tr; });
  }
  function connect() {
    if (source) source.close();
    source = new EventSource("/api/events" + (watched ? "?device=" + encodeURIComponent(watched) : ""));
    source.onmessage = onMessage;
    source.addEventListener("tags", function (ev) { tags(JSON.parse(ev.data)); });
    source.onerror = function () { var b = $("live"); b.classList.add("off"); set(b, "reconnecting"); };
  }
  function watch(name) {
    if (name === watched) return;
    watched = name; live = {};
    window.history.replaceState(null, "", "?device=" + encodeURIComponent(name));
    Array.prototype.forEach.call($("devices").tBodies[0].children, function (tr) { tr.classList.toggle("watched", tr.dataset.device === name); });
    $("tags").tBodies[0].textContent = ""; tagRows = {};
    connect();
  }
  var loaded = {};
  function load(src, then) {
    if (loaded[src] === true) return then();
    if (loaded[src]) return loaded[src].push(then);
    loaded[src] = [then];
    var s = el("script"); s.src = src;
    s.onload = function () { var q = loaded[src]; loaded[src] = true; q.forEach(function (f) { f(); }); };
    s.onerror = function () { delete loaded[src]; toast("could not load " + src); };
    document.head.appendChild(s);
  }
  window.fieldgate = {
    me: me, F: F, el: el, set: set, toast: toast, post: post, request: request,
    watched: function () { return watched; },
    live: function (tag) { return live[tag]; },
    onTags: function (f) { listeners.push(f); },
    devices: function () { return Array.prototype.map.call($("devices").tBodies[0].children, function (tr) { return tr.dataset.device; }); }
  };

  // A link from before the page put the device in its query (#device).
  if (location.hash.length > 1 && location.search === "") { location.replace("?device=" + location.hash.slice(1)); return; }
  takeTagRows();
  $("devices").tBodies[0].addEventListener("click", function (e) { var tr = e.target.closest("tr"); if (tr) watch(tr.dataset.device); });
  $("tags").tBodies[0].addEventListener("click", function (e) {
    var tr = e.target.closest("tr"); if (!tr) return;
    Array.prototype.forEach.call($("tags").tBodies[0].children, function (r) { r.classList.toggle("trended", r === tr); });
    load("/trend.js", function () { window.fieldgate.trend.open(watched, tr.dataset.tag, tr.dataset.history === "1"); });
  });
  $("certs").tBodies[0].addEventListener("click", function (e) {
    var b = e.target.closest("button.act"); if (!b) return;
    post("/api/certificates/" + b.dataset.action, { thumbprint: b.dataset.arg }).then(function (r) { toast(r.message); }, function (err) { toast(err.message); });
  });
  if ($("confirm-network")) $("confirm-network").onclick = function () {
    post("/api/config/network/confirm").then(function (r) { toast(r.message); $("network-trial").remove(); }, function (e) { toast(e.message); });
  };
  $("reload").onclick = function () { post("/api/reload").then(function (r) { toast(r.message); }, function (e) { toast(e.message); }); };
  $("settings-nav").addEventListener("click", function (e) {
    var b = e.target.closest("button[data-open]"); if (!b) return;
    load("/editor.js", function () { window.fieldgate.editor.open(b.dataset.open); });
  });
  connect();
})();
`;
