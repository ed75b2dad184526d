// network.yaml in a form, part of the settings editor's script (page-editor.ts inlines it and
// lends it its helpers): the hostname, time zone, time servers and each port (by name or MAC
// address; DHCP or static addresses, gateways, DNS servers, the link-local fallback). The form
// writes the file's text into the editor, where it is checked, its difference shown and applied
// like any settings file: on trial, reverted after 2 minutes unless an admin confirms it from the
// new address (the page shows the change on trial and a Confirm button wherever it is opened).

export const NETWORK_FORM_JS = `
  var DHCP = [["", "default (DHCP without addresses)"], ["yes", "DHCP"], ["no", "static only"], ["ipv4", "DHCP IPv4 only"], ["ipv6", "DHCP IPv6 only"]];
  function list(v) { return v.split(/[\\s,]+/).filter(function (x) { return x !== ""; }); }
  function yamlScalar(v) { return /^[A-Za-z0-9_.:\\/*?-]+$/.test(v) && !/^(yes|no|true|false|null|~)$/i.test(v) ? v : JSON.stringify(v); }
  function yamlList(vs) { return "[" + vs.map(yamlScalar).join(", ") + "]"; }
  function select(id, options, value) { var s = el("select"); s.id = id; options.forEach(function (o) { var e = el("option", "", o[1]); e.value = o[0]; s.appendChild(e); }); s.value = value || ""; return s; }
  function portBox(form, p, i) {
    var fs = el("fieldset"); fs.dataset.port = String(i);
    fs.appendChild(el("legend", "", "Port " + (i + 1)));
    var g = el("div", "form-grid"); fs.appendChild(g);
    fg.editor.field(g, "Found by", select("nf-by-" + i, [["name", "interface name"], ["mac", "MAC address"]], p.mac ? "mac" : "name"));
    fg.editor.field(g, "Name or MAC", fg.editor.input("nf-id-" + i, p.mac || p.name || "", "eth0 or 52:54:00:12:34:56"));
    fg.editor.field(g, "Addresses", select("nf-dhcp-" + i, DHCP, p.dhcp || ""));
    fg.editor.field(g, "Static addresses", fg.editor.input("nf-addr-" + i, (p.addresses || []).join(", "), "192.168.10.20/24, fd00::20/64"));
    fg.editor.field(g, "Gateway (IPv4)", fg.editor.input("nf-gw-" + i, p.gateway || "", "192.168.10.1"));
    fg.editor.field(g, "Gateway (IPv6)", fg.editor.input("nf-gw6-" + i, p.gateway6 || "", ""));
    fg.editor.field(g, "DNS servers", fg.editor.input("nf-dns-" + i, (p.dns || []).join(", "), "192.168.10.1"));
    fg.editor.field(g, "Link-local 169.254.x.x", select("nf-ll-" + i, [["", "default (on with DHCP)"], ["true", "on"], ["false", "off"]], p.linkLocal === undefined ? "" : String(p.linkLocal)));
    fs.appendChild(fg.editor.button("Remove this port", "", function () { fs.remove(); }));
    form.appendChild(fs);
  }
  function networkYaml() {
    var out = ["# Written by the status page's network form.", ""];
    var v = function (id) { var e = document.getElementById(id); return e ? e.value.trim() : ""; };
    if (v("nf-hostname")) out.push("hostname: " + yamlScalar(v("nf-hostname")));
    if (v("nf-tz")) out.push("timeZone: " + yamlScalar(v("nf-tz")));
    if (list(v("nf-ntp")).length) out.push("ntp: " + yamlList(list(v("nf-ntp"))));
    var ports = Array.prototype.map.call(document.querySelectorAll("#network-form fieldset[data-port]"), function (fs) { return fs.dataset.port; });
    if (!ports.length) { out.push("ports: []"); return out.join("\\n") + "\\n"; }
    out.push("ports:");
    ports.forEach(function (i) {
      out.push("  - " + (v("nf-by-" + i) === "mac" ? "mac: " + JSON.stringify(v("nf-id-" + i)) : "name: " + yamlScalar(v("nf-id-" + i))));
      if (v("nf-dhcp-" + i)) out.push("    dhcp: " + v("nf-dhcp-" + i));
      if (list(v("nf-addr-" + i)).length) out.push("    addresses: " + yamlList(list(v("nf-addr-" + i))));
      if (v("nf-gw-" + i)) out.push("    gateway: " + yamlScalar(v("nf-gw-" + i)));
      if (v("nf-gw6-" + i)) out.push("    gateway6: " + yamlScalar(v("nf-gw6-" + i)));
      if (list(v("nf-dns-" + i)).length) out.push("    dns: " + yamlList(list(v("nf-dns-" + i))));
      if (v("nf-ll-" + i)) out.push("    linkLocal: " + v("nf-ll-" + i));
    });
    return out.join("\\n") + "\\n";
  }
  function networkOpen() {
    fg.request("GET", "/api/config/network/status").then(function (s) {
      var c = s.current || { ntp: [], ports: [] };
      var p = fg.editor.panel("Network settings");
      if (s.currentIssues && s.currentIssues.length) p.appendChild(el("p", "bad", "network.yaml as it is has issues (" + s.currentIssues[0] + "): the form starts empty"));
      var form = el("div"); form.id = "network-form"; p.appendChild(form);
      var g = el("div", "form-grid"); form.appendChild(g);
      fg.editor.field(g, "Host name", fg.editor.input("nf-hostname", c.hostname || "", "fieldgate"));
      fg.editor.field(g, "Time zone", fg.editor.input("nf-tz", c.timeZone || "", "UTC, Europe/Berlin"));
      fg.editor.field(g, "NTP servers", fg.editor.input("nf-ntp", (c.ntp || []).join(", "), "from DHCP, else Debian's pool"));
      (c.ports || []).forEach(function (port, i) { portBox(form, port, i); });
      var n = (c.ports || []).length;
      p.appendChild(fg.editor.button("Add a port", "nf-add-port", function () { portBox(form, {}, n++); }));
      p.appendChild(fg.editor.button("Write into network.yaml", "nf-write", function () { fg.editor.setText(networkYaml()); fg.editor.status("the form is written into the text: check it, then Changes and Apply…"); }, "primary"));
      p.appendChild(el("p", "hint", "Applying a network change keeps it for 2 minutes: open the page at the new address and confirm it there, or it is undone."));
    }, function (e) { fg.toast(e.message); });
  }
  function networkStatus() {
    fg.request("GET", "/api/config/network/status").then(function (s) {
      if (s.pending) networkPending(s.pending);
      else if (s.last) fg.editor.status("last network change: " + s.last.result + " " + F.time(Date.parse(s.last.at)) + " (" + s.last.reason + ")");
    }, function () {});
  }
  function networkPending(p) {
    var q = fg.editor.panel("Network change on trial until " + F.time(Date.parse(p.deadline)));
    q.appendChild(el("p", "", "Open the page at the gateway's new address and confirm there; without a confirmation the old settings come back at " + F.clock(Date.parse(p.deadline)) + "."));
    q.appendChild(fg.editor.button("Confirm the change", "nf-confirm", function () {
      fg.post("/api/config/network/confirm").then(function (r) { fg.toast(r.message); fg.editor.load("network"); }, function (e) { fg.toast(e.message); });
    }, "primary"));
  }
  fg.networkForm = { open: networkOpen, status: networkStatus, pending: networkPending };
`;
