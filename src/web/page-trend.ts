// The trend chart's script (/trend.js, loaded by the page the first time a tag is clicked): one
// tag's values drawn as an SVG line written here (no chart library: a polyline, a band, the axes'
// ticks and a cursor are all a trend needs). It shows the values the page received since it
// opened (for every tag of the watched device) and, for a tag kept in the history, the last hour
// or a chosen range read through GET /api/trend (a HistoryRead of the history's read thread: raw
// values, or the minimum and maximum of each interval when the range holds more than the chart
// has room for, drawn as a band). Text goes in with textContent only.

export const TREND_JS = `"use strict";
(function () {
  var fg = window.fieldgate, F = fg.F, el = fg.el;
  var NS = "http://www.w3.org/2000/svg";
  var card = document.getElementById("trend-card");
  var RANGES = [["live", "Since the page opened"], ["1h", "Last hour"], ["8h", "8 h"], ["24h", "24 h"], ["7d", "7 days"]];
  var HOURS = { "1h": 1, "8h": 8, "24h": 24, "7d": 168 };
  var st = null;
  function svg(tag, attrs, parent) { var e = document.createElementNS(NS, tag); Object.keys(attrs).forEach(function (k) { e.setAttribute(k, attrs[k]); }); if (parent) parent.appendChild(e); return e; }
  function build() {
    card.textContent = "";
    var h = el("h2"), title = el("span", "", "Trend of "), name = el("span"); name.id = "trend-name"; title.appendChild(name); h.appendChild(title);
    var close = el("button", "tool", "Close"); close.type = "button"; close.onclick = function () { card.hidden = true; st = null; }; h.appendChild(close);
    card.appendChild(h);
    var bar = el("div", "toolbar"); bar.id = "trend-ranges";
    RANGES.forEach(function (r) { var b = el("button", "tool", r[1]); b.type = "button"; b.dataset.range = r[0]; b.onclick = function () { choose(r[0]); }; bar.appendChild(b); });
    var from = el("input"), to = el("input");
    from.id = "trend-from"; to.id = "trend-to"; from.size = to.size = 16; from.placeholder = to.placeholder = "2026-12-05 14:00";
    var go = el("button", "tool", "Show range"); go.type = "button";
    go.onclick = function () { var a = local(from.value), b = local(to.value); if (a !== a || b !== b) { fg.toast("write the times as 2026-12-05 14:00"); return; } if (a >= b) { fg.toast("choose a start before the end"); return; } st.from = a; st.to = b; choose("custom"); };
    bar.appendChild(el("span", "hint", "from")); bar.appendChild(from); bar.appendChild(el("span", "hint", "to")); bar.appendChild(to); bar.appendChild(go);
    card.appendChild(bar);
    var chart = el("div", "chart"); chart.id = "trend"; card.appendChild(chart);
    var cap = el("p", "hint"); cap.id = "trend-caption"; card.appendChild(cap);
  }
  /** "2026-12-05 14:00[:30]", in the gateway's zone as the page shows times; NaN otherwise. */
  function local(v) {
    var m = /^\s*(\d{4})-(\d{2})-(\d{2})[ T](\d{1,2}):(\d{2})(?::(\d{2}))?\s*$/.exec(v);
    if (!m) return NaN;
    return Date.UTC(+m[1], +m[2] - 1, +m[3], +m[4], +m[5], +(m[6] || 0)) - (Number(document.body.dataset.tz) || 0) * 60000;
  }
  function open(device, tag, historized) {
    if (!card.firstChild) build();
    st = { device: device, tag: tag, historized: historized, range: historized ? "1h" : "live", hist: null, from: 0, to: 0, seq: 0 };
    fg.set(document.getElementById("trend-name"), device + "." + tag + (historized ? "" : " (not kept in the history: values since the page opened)"));
    Array.prototype.forEach.call(document.querySelectorAll("#trend-ranges button, #trend-ranges input"), function (b) { if (b.dataset.range !== "live") b.disabled = !historized; });
    card.hidden = false;
    choose(st.range);
    card.scrollIntoView({ block: "nearest" });
  }
  function choose(range) {
    st.range = range; st.hist = null;
    Array.prototype.forEach.call(document.querySelectorAll("#trend-ranges button[data-range]"), function (b) { b.setAttribute("aria-pressed", String(b.dataset.range === range)); });
    if (range === "live") return draw();
    if (range !== "custom") { st.to = Date.now(); st.from = st.to - HOURS[range] * 3600000; document.getElementById("trend-from").value = F.time(st.from).slice(0, 16); document.getElementById("trend-to").value = F.time(st.to).slice(0, 16); }
    var seq = ++st.seq, s = st;
    fg.request("GET", "/api/trend?device=" + encodeURIComponent(s.device) + "&tag=" + encodeURIComponent(s.tag) + "&from=" + Math.floor(s.from) + "&to=" + Math.ceil(s.to))
      .then(function (p) { if (st === s && s.seq === seq) { s.hist = p; draw(); } }, function (e) { if (st === s) { fg.set(document.getElementById("trend-caption"), "history: " + e.message); draw(); } });
    draw();
  }
  function niceStep(span, count) {
    var raw = span / count, p = Math.pow(10, Math.floor(Math.log10(raw))), f = raw / p;
    return (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * p;
  }
  var TIME_STEPS = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400, 172800, 604800].map(function (s) { return s * 1000; });
  function draw() {
    if (!st) return;
    var box = document.getElementById("trend"), W = box.clientWidth || 800, H = box.clientHeight || 260;
    var L = 64, R = 12, T = 10, B = 26;
    var lv = fg.live(st.tag) || { t: [], v: [] };
    var h = st.hist, now = Date.now();
    var t0, t1;
    if (st.range === "live") { t0 = lv.t.length ? lv.t[0] : now - 60000; t1 = Math.max(now, t0 + 1000); }
    else {
      t1 = st.range === "custom" ? st.to : Math.max(st.to, now);
      // A tag kept for less than the range: from its first value, not an empty stretch before it.
      var first = h && h.t.length ? h.t[0] : lv.t.length ? lv.t[0] : st.from;
      t0 = st.range === "custom" ? st.from : Math.max(st.from, Math.min(first, t1 - 60000));
    }
    // Live values after the history's last point, when the range reaches now.
    var liveT = [], liveV = [], lastHist = h && h.t.length ? h.t[h.t.length - 1] : -Infinity;
    for (var i = 0; i < lv.t.length; i++) if (lv.t[i] >= t0 && lv.t[i] <= t1 && lv.t[i] > lastHist) { liveT.push(lv.t[i]); liveV.push(lv.v[i]); }
    var lo = Infinity, hi = -Infinity;
    function span(vs) { for (var k = 0; k < vs.length; k++) { if (vs[k] < lo) lo = vs[k]; if (vs[k] > hi) hi = vs[k]; } }
    if (h) { span(h.v); if (h.high) span(h.high); }
    span(liveV);
    var n = (h ? h.t.length : 0) + liveT.length;
    if (lo === Infinity) { lo = 0; hi = 1; } else if (lo === hi) { lo -= 1; hi += 1; } else { var pad = (hi - lo) * 0.05; lo -= pad; hi += pad; }
    var x = function (t) { return L + (t - t0) / (t1 - t0) * (W - L - R); };
    var y = function (v) { return T + (hi - v) / (hi - lo) * (H - T - B); };
    box.textContent = "";
    var s = svg("svg", { viewBox: "0 0 " + W + " " + H, role: "img", "aria-label": "trend of " + st.device + "." + st.tag }, box);
    var ys = niceStep(hi - lo, 5);
    for (var yv = Math.ceil(lo / ys) * ys; yv <= hi; yv += ys) {
      svg("line", { class: "grid", x1: L, x2: W - R, y1: y(yv), y2: y(yv) }, s);
      svg("text", { x: L - 6, y: y(yv) + 4, "text-anchor": "end" }, s).textContent = F.num(yv, Math.max(0, -Math.floor(Math.log10(ys))));
    }
    var xs = TIME_STEPS.filter(function (q) { return (t1 - t0) / q <= 7; })[0] || 604800000, tz = (Number(document.body.dataset.tz) || 0) * 60000;
    for (var xt = Math.ceil((t0 + tz) / xs) * xs - tz; xt <= t1; xt += xs) {
      svg("line", { class: "grid", x1: x(xt), x2: x(xt), y1: T, y2: H - B }, s);
      svg("text", { x: x(xt), y: H - 8, "text-anchor": "middle" }, s).textContent = xs >= 86400000 ? F.time(xt).slice(0, 10) : xs >= 60000 ? F.clock(xt).slice(0, 5) : F.clock(xt);
    }
    function line(ts, vs, cls) { if (!ts.length) return; var pts = ""; for (var k = 0; k < ts.length; k++) pts += x(ts[k]).toFixed(1) + "," + y(vs[k]).toFixed(1) + " "; svg("polyline", { points: pts, class: cls }, s); }
    if (h && h.high && h.t.length) {
      var band = "";
      for (var k = 0; k < h.t.length; k++) band += x(h.t[k] + h.interval / 2).toFixed(1) + "," + y(h.high[k]).toFixed(1) + " ";
      for (var j = h.t.length - 1; j >= 0; j--) band += x(h.t[j] + h.interval / 2).toFixed(1) + "," + y(h.v[j]).toFixed(1) + " ";
      svg("polygon", { points: band, class: "band" }, s);
      line(h.t.map(function (t) { return t + h.interval / 2; }), h.v.map(function (v, q) { return (v + h.high[q]) / 2; }), "");
    } else if (h) line(h.t, h.v, "");
    line(liveT, liveV, "live");
    var cursor = svg("line", { class: "cursor", x1: 0, x2: 0, y1: T, y2: H - B, visibility: "hidden" }, s);
    var readout = svg("text", { x: W - R, y: T + 12, "text-anchor": "end" }, s);
    var all = (h ? h.t.map(function (t, q) { return [h.high ? t + h.interval / 2 : t, h.high ? h.v[q] + " … " + h.high[q] : h.v[q]]; }) : []).concat(liveT.map(function (t, q) { return [t, liveV[q]]; }));
    s.onmousemove = function (e) {
      if (!all.length) return;
      var r = s.getBoundingClientRect(), at = t0 + ((e.clientX - r.left) * W / r.width - L) / (W - L - R) * (t1 - t0), best = all[0];
      all.forEach(function (p) { if (Math.abs(p[0] - at) < Math.abs(best[0] - at)) best = p; });
      cursor.setAttribute("x1", x(best[0])); cursor.setAttribute("x2", x(best[0])); cursor.setAttribute("visibility", "visible");
      readout.textContent = F.time(best[0]) + "  " + best[1];
    };
    var what = st.range === "live" ? "values since the page opened" : "from " + F.time(t0) + " to " + F.time(t1);
    var agg = h && h.interval ? "; history as the minimum and maximum of each " + F.dur(h.interval / 1000) : "";
    var skipped = h && h.skipped ? "; " + h.skipped + " values not drawn (not numbers, or not Good)" : "";
    fg.set(document.getElementById("trend-caption"), n + " points, " + what + agg + skipped + (st.range !== "live" && !h ? "; reading the history…" : ""));
  }
  fg.onTags(function () { if (st && (st.range === "live" || st.range !== "custom")) draw(); });
  window.addEventListener("resize", function () { if (st) draw(); });
  fg.trend = { open: open };
})();
`;
