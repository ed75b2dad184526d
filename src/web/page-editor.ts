// The settings editor's script (/editor.js, loaded by the page the first time a settings button
// is pressed): devices.yaml, gateway.yaml and network.yaml in a plain textarea with line numbers
// (a gutter that draws only the lines in view, so a 40,000-line map costs a few dozen elements),
// checked by the gateway's validator as the admin types (debounced) or on Check, each issue at
// its line; the difference against the running file (line-diff.ts, run here from its own
// source); Apply (with the ETag read, so a file changed meanwhile is not overwritten); the last
// versions, to look at and restore; download and upload; a Kepware CSV made into a device; a
// test read of one device of the map being edited; a search of a line for devices, added to the
// map; and network.yaml in a form. Viewers see the files and their versions and change nothing.
// Text goes in with textContent and value only.
import { lineDiff } from "./line-diff.js";
import { NETWORK_FORM_JS } from "./page-network.js";
import { SEARCH_FORM_JS } from "./page-search.js";

/** Above this many characters the text is checked on Check only, not as it is typed. */
export const CHECK_AS_TYPED_CHARS = 200_000;

export const EDITOR_JS = `"use strict";
(function () {
  var fg = window.fieldgate, F = fg.F, el = fg.el, set = fg.set;
  var lineDiff = ${lineDiff.toString()};
  var card = document.getElementById("editor-card");
  var admin = fg.me.role === "admin";
  var FILES = { devices: "devices.yaml", gateway: "gateway.yaml", network: "network.yaml" };
  var ed = { kind: "", base: "", etag: "", issues: [], timer: 0, seq: 0, lh: 18, avail: {} };
  var $ = function (id) { return document.getElementById(id); };
  function button(text, id, onclick, cls) { var b = el("button", "tool" + (cls ? " " + cls : ""), text); b.type = "button"; if (id) b.id = id; b.onclick = onclick; return b; }
  function build() {
    card.textContent = "";
    var h = el("h2"), tabs = el("div", "tabs"); tabs.setAttribute("role", "tablist");
    Object.keys(FILES).forEach(function (k) { var t = button(FILES[k], "tab-" + k, function () { open(k); }); t.setAttribute("role", "tab"); tabs.appendChild(t); });
    h.appendChild(tabs); h.appendChild(el("span", "grow")); h.appendChild(button("Close", "editor-close", close));
    card.appendChild(h);
    var bar = el("div", "toolbar");
    if (admin) { bar.appendChild(button("Check", "editor-check", function () { check(true); })); bar.appendChild(button("Changes and Apply…", "editor-changes", showChanges, "primary")); }
    bar.appendChild(button("Versions", "editor-versions", versions));
    var dl = el("a", "tool", "Download"); dl.id = "editor-download"; bar.appendChild(dl);
    if (admin) {
      var up = el("input"); up.type = "file"; up.id = "editor-upload"; up.accept = ".yaml,.yml,.csv,.txt"; up.hidden = true; up.onchange = upload;
      bar.appendChild(up); bar.appendChild(button("Upload…", "editor-upload-button", function () { up.value = ""; up.click(); }));
      var tr = el("span", "device-tools"); tr.id = "editor-device-tools";
      var dev = el("input"); dev.id = "test-device"; dev.placeholder = "device"; dev.size = 12; dev.setAttribute("list", "test-devices");
      var dlist = el("datalist"); dlist.id = "test-devices";
      tr.appendChild(dev); tr.appendChild(dlist); tr.appendChild(button("Test read", "editor-test-read", testRead));
      tr.appendChild(button("Search a line…", "editor-search", function () { fg.searchForm.open(); }));
      bar.appendChild(tr);
      bar.appendChild(button("Network form", "editor-network-form", function () { fg.networkForm.open(); }));
    }
    var status = el("span"); status.id = "editor-status"; bar.appendChild(el("span", "grow")); bar.appendChild(status);
    card.appendChild(bar);
    var wrap = el("div", "editor"), gutter = el("pre", "gutter"), ta = el("textarea");
    gutter.id = "editor-gutter"; ta.id = "editor-text"; ta.spellcheck = false; ta.setAttribute("wrap", "off"); ta.setAttribute("autocapitalize", "off"); ta.setAttribute("aria-label", "file text");
    ta.readOnly = !admin;
    ta.oninput = function () { gutterDraw(); schedule(); };
    ta.onscroll = gutterDraw;
    ta.onkeydown = function (e) { if (e.key === "Tab" && !e.shiftKey && !e.ctrlKey && admin) { e.preventDefault(); ta.setRangeText("  ", ta.selectionStart, ta.selectionEnd, "end"); ta.oninput(); } };
    wrap.appendChild(gutter); wrap.appendChild(ta); card.appendChild(wrap);
    var issues = el("ul", "issues"); issues.id = "editor-issues"; card.appendChild(issues);
    issues.onclick = function (e) { var li = e.target.closest("li"); if (li && li.dataset.line) goTo(Number(li.dataset.line), Number(li.dataset.column)); };
    var panel = el("div", "panel"); panel.id = "editor-panel"; panel.hidden = true; card.appendChild(panel);
    window.addEventListener("resize", gutterDraw);
  }
  function text() { return $("editor-text").value; }
  function status(t, cls) { var s = $("editor-status"); s.className = cls || ""; set(s, t); }
  function panel(title) { var p = $("editor-panel"); p.textContent = ""; p.hidden = false; if (title) p.appendChild(el("h2", "", title)); return p; }

  // ---- line numbers: only the lines in view are drawn ----
  function gutterDraw() {
    var ta = $("editor-text"), g = $("editor-gutter");
    if (!ta) return;
    ed.lh = parseFloat(getComputedStyle(ta).lineHeight) || ed.lh;
    var lines = 1, v = ta.value;
    for (var i = v.indexOf("\\n"); i >= 0; i = v.indexOf("\\n", i + 1)) lines++;
    var first = Math.floor(ta.scrollTop / ed.lh), shown = Math.ceil(ta.clientHeight / ed.lh) + 2;
    var marks = {}; ed.issues.forEach(function (x) { if (x.line > 0) marks[x.line] = (marks[x.line] ? marks[x.line] + "\\n" : "") + x.message; });
    g.textContent = "";
    g.style.paddingTop = (parseFloat(getComputedStyle(ta).paddingTop) - (ta.scrollTop - first * ed.lh)) + "px";
    for (var n = first + 1; n <= Math.min(lines, first + shown); n++) {
      var b = el("b", marks[n] ? "issue" : "", String(n));
      if (marks[n]) b.title = marks[n];
      g.appendChild(b);
    }
    g.style.minWidth = (String(lines).length + 2) + "ch";
  }
  function goTo(line, column) {
    var ta = $("editor-text"), v = ta.value, at = 0;
    for (var n = 1; n < line && at >= 0; n++) at = v.indexOf("\\n", at) + 1;
    if (at < 0) return;
    var end = v.indexOf("\\n", at); if (end < 0) end = v.length;
    ta.focus(); ta.setSelectionRange(at + Math.max(0, (column || 1) - 1), end);
    ta.scrollTop = Math.max(0, (line - 4) * ed.lh);
    gutterDraw();
  }
  function showIssues(list) {
    ed.issues = list || [];
    var ul = $("editor-issues"); ul.textContent = "";
    ed.issues.forEach(function (x) {
      var li = el("li", "", (x.line > 0 ? x.line + ":" + x.column + " " : "") + (x.path ? x.path + ": " : "") + x.message);
      if (x.line > 0) { li.dataset.line = x.line; li.dataset.column = x.column; }
      ul.appendChild(li);
    });
    gutterDraw();
  }

  // ---- loading, checking, applying ----
  function close() { card.hidden = true; ed.kind = ""; Array.prototype.forEach.call(document.querySelectorAll("#settings-nav button"), function (b) { b.setAttribute("aria-pressed", "false"); }); }
  function open(kind) {
    if (!card.firstChild) build();
    card.hidden = false;
    fg.request("GET", "/api/config").then(function (list) {
      list.forEach(function (k) { ed.avail[k.kind] = k.unavailable; var t = $("tab-" + k.kind); t.disabled = !!k.unavailable; t.title = k.unavailable || ""; });
      if (ed.avail[kind]) { status(ed.avail[kind], "invalid"); kind = Object.keys(FILES).filter(function (k) { return !ed.avail[k]; })[0]; if (!kind) return; }
      load(kind);
    }, function (e) { status(e.message, "invalid"); });
  }
  function load(kind, keepPanel) {
    ed.kind = kind; ed.seq++;
    Object.keys(FILES).forEach(function (k) { $("tab-" + k).setAttribute("aria-selected", String(k === kind)); });
    Array.prototype.forEach.call(document.querySelectorAll("#settings-nav button"), function (b) { b.setAttribute("aria-pressed", String(b.dataset.open === kind)); });
    $("editor-download").href = "/api/config/" + kind + "?download";
    var tools = $("editor-device-tools"); if (tools) tools.hidden = kind !== "devices";
    var nf = $("editor-network-form"); if (nf) nf.hidden = kind !== "network";
    if (!keepPanel) $("editor-panel").hidden = true;
    status("loading " + FILES[kind] + "…");
    return fetch("/api/config/" + kind).then(function (r) {
      if (!r.ok) return r.json().then(function (j) { throw new Error(j.error); });
      ed.etag = (r.headers.get("etag") || "").replace(/"/g, "");
      return r.text();
    }).then(function (t) {
      ed.base = t; $("editor-text").value = t; $("editor-text").scrollTop = 0;
      showIssues([]); fillDevices();
      status(FILES[kind] + " as the gateway runs it" + (admin ? "" : " (only an admin may change it)"));
      if (kind === "network" && admin) fg.networkForm.status();
    }, function (e) { status(e.message, "invalid"); });
  }
  function schedule() {
    clearTimeout(ed.timer);
    fillDevices();
    if (!admin || text().length > ${CHECK_AS_TYPED_CHARS}) { status("changed: Check to see its issues"); return; }
    status("changed…");
    ed.timer = setTimeout(function () { check(false); }, 700);
  }
  function check(asked) {
    var seq = ++ed.seq, kind = ed.kind;
    status("checking…");
    return fg.post("/api/config/" + kind + "/check", text(), "text/yaml").then(function (list) {
      if (seq !== ed.seq || kind !== ed.kind) return;
      showIssues(list);
      var same = text() === ed.base;
      if (list.length === 0) status("valid" + (same ? ", as running" : ": Changes and Apply… to use it"), "valid");
      else status(list.length === 1 ? "1 issue: nothing can be applied until it is fixed" : list.length + " issues: nothing can be applied until they are fixed", "invalid");
      if (asked && list.length > 0) goTo(list[0].line, list[0].column);
      return list;
    }, function (e) { if (seq === ed.seq) status(e.message, "invalid"); });
  }
  function diffRows(p, before, after) {
    var d = lineDiff(before, after, 3, 4000);
    p.appendChild(el("p", "", "+" + d.added + " −" + d.removed + " lines against the running " + FILES[ed.kind]));
    if (!d.rows) { p.appendChild(el("p", "hint", "Too many lines changed to list them one by one.")); return d; }
    var box = el("div", "diff"); box.id = "editor-diff";
    d.rows.forEach(function (r) {
      if (r[0] === "…") { box.appendChild(el("div", "gap", "    … " + r[3] + " unchanged lines")); return; }
      var row = el("div", r[0] === "+" ? "add" : r[0] === "-" ? "del" : "");
      if (r[1]) row.dataset.old = r[1];
      if (r[2]) row.dataset.new = r[2];
      row.appendChild(el("span", "ln", r[1] ? String(r[1]) : ""));
      row.appendChild(el("span", "ln", r[2] ? String(r[2]) : ""));
      row.appendChild(document.createTextNode(r[0] + " " + r[3]));
      box.appendChild(row);
    });
    p.appendChild(box);
    return d;
  }
  function showChanges() {
    var p = panel("Changes");
    var d = diffRows(p, ed.base, text());
    if (d.added + d.removed === 0) { p.appendChild(el("p", "hint", "Nothing changed.")); return; }
    var go = button(ed.kind === "network" ? "Apply (reverted in 2 minutes unless confirmed)" : "Apply to the gateway", "editor-apply", apply, "primary");
    p.appendChild(go);
  }
  function applied(r) {
    var p = panel(r.message);
    (r.details || []).forEach(function (l) { p.appendChild(el("p", "", l)); });
    if (r.pending) fg.networkForm.pending(r.pending);
    fg.toast(r.message);
    return load(ed.kind, true);
  }
  function refused(e) {
    var b = e.body || {};
    showIssues(b.issues || []);
    status(e.message, "invalid");
    var p = panel("Not applied");
    p.appendChild(el("p", "bad", e.message));
    if (b.issues && b.issues.length) goTo(b.issues[0].line, b.issues[0].column);
  }
  function apply() {
    status("applying…");
    return fg.request("POST", "/api/config/" + ed.kind, text(), "text/yaml", { "if-match": '"' + ed.etag + '"' }).then(applied, refused);
  }

  // ---- versions ----
  function versions() {
    var kind = ed.kind;
    fg.request("GET", "/api/config/" + kind + "/versions").then(function (list) {
      var p = panel("Last applied versions of " + FILES[kind]);
      if (!list.length) { p.appendChild(el("p", "hint", "None yet: a version is kept at each Apply from this page (the last 10).")); return; }
      var t = el("table"); t.id = "editor-versions-table";
      var head = el("tr"); ["Version", "Applied", "By", "What changed", ""].forEach(function (x) { head.appendChild(el("th", "", x)); }); t.appendChild(head);
      list.forEach(function (v, i) {
        var tr = el("tr"); tr.dataset.version = v.id;
        tr.appendChild(el("td", "num", String(v.id))); tr.appendChild(el("td", "", F.time(Date.parse(v.at)))); tr.appendChild(el("td", "", v.user));
        tr.appendChild(el("td", "", v.summary + (v.restoredFrom ? " (restored from version " + v.restoredFrom + ")" : "")));
        var acts = el("td");
        acts.appendChild(button("Show", "", function () { showVersion(kind, v); }));
        if (admin && i > 0) acts.appendChild(button("Restore", "", function () { restore(kind, v); }));
        tr.appendChild(acts); t.appendChild(tr);
      });
      p.appendChild(t);
    }, function (e) { status(e.message, "invalid"); });
  }
  function showVersion(kind, v) {
    fg.request("GET", "/api/config/" + kind + "/versions/" + v.id).then(function (t) {
      var p = panel("Version " + v.id + " against the running file");
      var d = lineDiff(ed.base, t, 3, 4000);
      var box = el("div", "diff");
      p.appendChild(el("p", "", "Going back to it would add " + d.added + " and remove " + d.removed + " lines."));
      (d.rows || []).forEach(function (r) { var row = el("div", r[0] === "+" ? "add" : r[0] === "-" ? "del" : r[0] === "…" ? "gap" : "", r[0] === "…" ? "    … " + r[3] + " unchanged lines" : r[0] + " " + r[3]); box.appendChild(row); });
      p.appendChild(box);
      if (admin) p.appendChild(button("Restore version " + v.id, "", function () { restore(kind, v); }, "primary"));
    }, function (e) { status(e.message, "invalid"); });
  }
  function restore(kind, v) {
    if (!window.confirm("Restore version " + v.id + " of " + FILES[kind] + " (" + F.time(Date.parse(v.at)) + ", " + v.user + ")? It is applied at once.")) return;
    status("restoring version " + v.id + "…");
    fg.post("/api/config/" + kind + "/versions/" + v.id + "/restore").then(applied, refused);
  }

  // ---- upload, Kepware, test read ----
  function upload(e) {
    var f = e.target.files[0]; if (!f) return;
    var r = new FileReader();
    r.onload = function () {
      if (/\\.csv$/i.test(f.name)) { if (ed.kind !== "devices") load("devices").then(function () { kepware(f.name, r.result); }); else kepware(f.name, r.result); return; }
      $("editor-text").value = r.result; gutterDraw(); schedule();
      status(f.name + " loaded, not applied: check it, then Changes and Apply…");
    };
    r.readAsText(f);
  }
  function field(p, label, input) { p.appendChild(el("label", "", label)); p.appendChild(input); return input; }
  function input(id, value, placeholder) { var i = el("input"); i.id = id; i.value = value || ""; if (placeholder) i.placeholder = placeholder; return i; }
  function kepware(name, csv) {
    var p = panel("A device from " + name + " (Kepware tag CSV)");
    var g = el("div", "form-grid"); p.appendChild(g);
    var dev = field(g, "Device name", input("kw-device", name.replace(/\\.csv$/i, "").replace(/[^A-Za-z0-9_.-]/g, "_")));
    var drv = field(g, "Driver", el("select")); drv.id = "kw-driver";
    fg.request("GET", "/api/config/devices/kepware").then(function (r) { r.drivers.forEach(function (d) { var o = el("option", "", d); o.value = d; drv.appendChild(o); }); });
    var host = field(g, "Host", input("kw-host", "", "192.168.10.20"));
    var port = field(g, "Port", input("kw-port", "", "the driver's default"));
    var unit = field(g, "Station (its address on the link)", input("kw-station", "", "1"));
    p.appendChild(button("Add the device to the map", "kw-add", function () {
      fg.post("/api/config/devices/kepware", { text: text(), csv: csv, device: dev.value, driver: drv.value, host: host.value, port: port.value, station: unit.value }).then(function (r) {
        $("editor-text").value = r.text; gutterDraw(); schedule();
        var q = panel("Device " + dev.value + " added to the map (not applied yet): " + r.converted + " of " + r.rows + " rows");
        r.notes.slice(0, 50).forEach(function (n) { q.appendChild(el("p", "hint", n)); });
        q.appendChild(el("p", "", "Check it, set the device's address, then Changes and Apply…"));
      }, function (e) { fg.toast(e.message); });
    }, "primary"));
  }
  function fillDevices() {
    var dl = $("test-devices"); if (!dl || ed.kind !== "devices") return;
    // The devices of the text as the shipped map lays them out (list items under devices:, two spaces in), and the running ones.
    var names = {}, re = /^ {2}- +name: *["']?([A-Za-z0-9_][A-Za-z0-9_.-]*)/gm, v = text(), m, n = 0;
    while ((m = re.exec(v)) && n < 2000) { names[m[1]] = 1; n++; }
    fg.devices().forEach(function (d) { names[d] = 1; });
    dl.textContent = ""; Object.keys(names).forEach(function (k) { var o = el("option"); o.value = k; dl.appendChild(o); });
  }
  function testRead() {
    var device = $("test-device").value.trim();
    if (!device) { fg.toast("name the device to read (one of the map being edited)"); $("test-device").focus(); return; }
    var p = panel("Test read of " + device + " (the map as edited, not applied)");
    var note = el("p", "hint", "reading…"); note.id = "test-read-status"; p.appendChild(note);
    fg.post("/api/config/devices/test-read", { text: text(), device: device }).then(function (r) {
      set(note, r.error ? "the device did not answer: " + r.error : r.tags.length + " tags in " + r.requests + " requests; round trip " + r.roundTrip + " ms");
      note.className = r.error ? "bad" : "hint";
      var t = el("table"); t.id = "test-read";
      var head = el("tr"); ["Tag", "Value", "Quality", "Error"].forEach(function (x) { head.appendChild(el("th", "", x)); }); t.appendChild(head);
      r.tags.forEach(function (x) { var tr = el("tr"); tr.dataset.tag = x.name; tr.appendChild(el("td", "", x.name)); tr.appendChild(el("td", "num", x.value)); tr.appendChild(el("td", "q" + x.quality, x.status)); tr.appendChild(el("td", "err", x.error || "")); t.appendChild(tr); });
      p.appendChild(t);
    }, function (e) { set(note, e.message); note.className = "bad"; if (e.body && e.body.issues) showIssues(e.body.issues); });
  }

  ${NETWORK_FORM_JS}
  ${SEARCH_FORM_JS}
  fg.editor = { open: open, load: function (k) { return load(k); }, text: text, setText: function (t) { $("editor-text").value = t; gutterDraw(); schedule(); }, check: check, panel: panel, button: button, field: field, input: input, status: status, kind: function () { return ed.kind; } };
})();
`;
