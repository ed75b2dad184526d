// The search for devices on a line, part of the settings editor's script (page-editor.ts inlines
// it and lends it its helpers): a small form (the driver; a serial line with its port, speed and
// parity and the bus name the entries get, or a TCP converter's host and port; how long at most),
// the search's progress as it goes, each find among it (asked for once a second), what it found
// once it ends, and those devices added to the map being edited, where they are checked,
// compared and applied like any change. The search runs on the gateway (devices/device-search.ts);
// admins only.

export const SEARCH_FORM_JS = `
  var searchTimer = 0;
  function searchOpen() {
    fg.request("GET", "/api/config/devices/search").then(function (s) {
      var p = fg.editor.panel("Search a line for devices");
      if (!s.drivers.length) { p.appendChild(el("p", "hint", "No driver of this gateway can search a line.")); return; }
      var g = el("div", "form-grid"); g.id = "search-form"; p.appendChild(g);
      var pick = function (id, options, value) { var x = el("select"); x.id = id; options.forEach(function (o) { var e = el("option", "", o[1]); e.value = o[0]; x.appendChild(e); }); x.value = value || options[0][0]; return x; };
      var f = fg.editor.field, i = fg.editor.input;
      f(g, "Driver", pick("sr-driver", s.drivers.map(function (d) { return [d, d]; }), s.driver));
      var kind = f(g, "On", pick("sr-kind", [["bus", "a serial line (a level converter's port)"], ["tcp", "a TCP converter"]]));
      var bus = [f(g, "Serial port", i("sr-port", "", "/dev/ttyUSB0")), f(g, "Baud rate", i("sr-baud", "", "the driver's")),
        f(g, "Parity", pick("sr-parity", [["", "the driver's"], ["even", "even"], ["none", "none"], ["odd", "odd"]])), f(g, "Bus name in the map", i("sr-bus-name", "", "the port's name"))];
      var tcp = [f(g, "Host", i("sr-host", "", "192.168.10.30")), f(g, "TCP port", i("sr-tcp-port", "", "10001"))];
      f(g, "Search for at most (s)", i("sr-seconds", "120"));
      f(g, "Wait per answer (ms)", i("sr-timeout", "", "the driver's, from the speed"));
      var show = function () { bus.forEach(function (x) { x.hidden = x.previousSibling.hidden = kind.value !== "bus"; }); tcp.forEach(function (x) { x.hidden = x.previousSibling.hidden = kind.value !== "tcp"; }); };
      kind.onchange = show; show();
      p.appendChild(fg.editor.button("Search", "sr-start", searchStart, "primary"));
      p.appendChild(fg.editor.button("Stop", "sr-stop", function () { fg.post("/api/config/devices/search/stop").then(searchShow, fail); }));
      p.appendChild(el("p", "hint", "A line the gateway polls is refused: its port is held. The devices found are added to the text, not applied."));
      var out = el("div"); out.id = "sr-state"; p.appendChild(out);
      if (s.state !== "idle") searchShow(s);
    }, fail);
  }
  function fail(e) { var o = document.getElementById("sr-state"); if (o) { o.textContent = ""; o.appendChild(el("p", "bad", e.message)); } else fg.toast(e.message); }
  function searchStart() {
    var v = function (id) { return document.getElementById(id).value.trim(); };
    var num = function (id) { return v(id) === "" ? undefined : Number(v(id)); };
    var body = { driver: v("sr-driver"), seconds: num("sr-seconds"), timeout: num("sr-timeout") };
    if (v("sr-kind") === "bus") { body.bus = { port: v("sr-port"), baudRate: num("sr-baud"), parity: v("sr-parity") || undefined }; body.busName = v("sr-bus-name") || undefined; }
    else { body.host = v("sr-host"); body.port = num("sr-tcp-port"); }
    fg.post("/api/config/devices/search", body).then(searchShow, fail);
  }
  function searchShow(s) {
    var out = document.getElementById("sr-state");
    clearTimeout(searchTimer);
    if (!out) return;
    out.textContent = "";
    var n = s.found.length;
    var head = s.state === "running" ? "searching " + s.where + " until " + F.clock(Date.parse(s.deadline)) + "… (each find is among its progress below)"
      : s.state === "failed" ? "the search of " + s.where + " failed: " + s.message
      : "the search of " + s.where + (s.state === "stopped" ? " ended (" + s.message + ")" : " is done") + ": " + n + " device" + (n === 1 ? "" : "s") + " found";
    var h = el("p", s.state === "failed" ? "bad" : "", head); h.id = "sr-status"; out.appendChild(h);
    if (s.found.length) {
      var ul = el("ul"); ul.id = "sr-found";
      s.found.forEach(function (d) { ul.appendChild(el("li", "", d.summary)); });
      out.appendChild(ul);
    }
    if (s.progress.length) { var pre = el("pre", "progress", s.progress.slice(-12).join("\\n")); pre.id = "sr-progress"; out.appendChild(pre); }
    if (s.state === "running") { searchTimer = setTimeout(function () { fg.request("GET", "/api/config/devices/search").then(searchShow, fail); }, 1000); return; }
    if (n > 0) out.appendChild(fg.editor.button("Add " + (n === 1 ? "it" : "the " + n) + " to the map", "sr-add", searchAdd, "primary"));
  }
  function searchAdd() {
    fg.post("/api/config/devices/search/add", { text: fg.editor.text() }).then(function (r) {
      fg.editor.setText(r.text);
      var q = fg.editor.panel(r.added.length + " device" + (r.added.length === 1 ? "" : "s") + " added to the map (not applied yet)");
      if (r.added.length) q.appendChild(el("p", "", "Added: " + r.added.join(", ")));
      if (r.skipped.length) q.appendChild(el("p", "hint", "Not added, the map has them already: " + r.skipped.join(", ")));
      q.appendChild(el("p", "", "Keep the tags you need and set the rates, then Changes and Apply…"));
    }, fail);
  }
  fg.searchForm = { open: searchOpen };
`;
