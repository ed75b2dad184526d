// network.yaml as systemd-networkd and timesyncd files (src/settings/network-render.ts and
// network-apply.ts), and "apply, revert unless confirmed" (network-trial.ts) with a revert timer
// that the test fires itself (no real timer, no real network change: the targets are folders).
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeEach, describe, expect, it } from "vitest";
import { validateNetworkYaml, type NetworkConfig } from "../../src/config/network-config.js";
import { writeNetwork, type AppliedNetwork, type NetworkTargets } from "../../src/settings/network-apply.js";
import { renderNetwork } from "../../src/settings/network-render.js";
import { networkResponse, serveNetworkRequest, submitNetworkRequest } from "../../src/settings/network-requests.js";
import { NetworkTrial, readTrialStatus, type RevertTimer, type TrialPaths } from "../../src/settings/network-trial.js";

const root = mkdtempSync(join(tmpdir(), "fieldgate-network-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

function settings(yaml: string): NetworkConfig {
  const r = validateNetworkYaml(yaml, "network.yaml");
  if (!r.ok) throw new Error(r.issues.map((i) => `${i.line}:${i.column} ${i.path}: ${i.message}`).join("\n"));
  return r.value;
}
const HEADER = "# Made by fieldgate from network.yaml; do not edit: it is made again at every boot.\n";

describe("renderNetwork", () => {
  it("a static IPv4 port by name", () => {
    const r = renderNetwork(settings("ports:\n  - name: eth0\n    addresses: [192.168.10.20/24]\n    gateway: 192.168.10.1\n    dns: [192.168.10.1, 1.1.1.1]\n"), "network.yaml");
    expect([...r.networkFiles]).toEqual([
      [
        "10-fieldgate-00-name-eth0.network",
        `${HEADER}# ports[0]\n[Match]\nName=eth0\n\n[Network]\nDHCP=no\nLinkLocalAddressing=ipv6\nAddress=192.168.10.20/24\nGateway=192.168.10.1\nDNS=192.168.10.1\nDNS=1.1.1.1\n`,
      ],
    ]);
    expect(r.timesyncd).toBeUndefined();
  });

  it("DHCP by default, with the link-local fallback of today", () => {
    const r = renderNetwork(settings("ports:\n  - name: en*\n"), "network.yaml");
    expect(r.networkFiles.get("10-fieldgate-00-name-en_.network")).toBe(`${HEADER}# ports[0]\n[Match]\nName=en*\n\n[Network]\nDHCP=yes\nLinkLocalAddressing=yes\n`);
    // The shipped file lists no port: nothing of ours, the image's 20-wired.network serves them all.
    expect(renderNetwork(settings(readFileSync(join(__dirname, "../../config/network.yaml"), "utf8")), "network.yaml").networkFiles.size).toBe(0);
  });

  it("two ports, the second by MAC with IPv6 and its gateway, in the file's order", () => {
    const r = renderNetwork(
      settings(
        "ports:\n  - name: eth0\n    dhcp: ipv4\n  - mac: 52-54-00-AB-CD-EF\n    addresses: [10.20.0.5/16, 'fd00:10::5/64']\n    gateway6: fd00:10::1\n    linkLocal: true\n",
      ),
      "network.yaml",
    );
    expect([...r.networkFiles.keys()]).toEqual(["10-fieldgate-00-name-eth0.network", "10-fieldgate-01-mac-525400abcdef.network"]);
    expect(r.networkFiles.get("10-fieldgate-00-name-eth0.network")).toContain("[Network]\nDHCP=ipv4\nLinkLocalAddressing=yes\n");
    expect(r.networkFiles.get("10-fieldgate-01-mac-525400abcdef.network")).toBe(
      `${HEADER}# ports[1]\n[Match]\nMACAddress=52:54:00:ab:cd:ef\nType=ether\n\n[Network]\nDHCP=no\nLinkLocalAddressing=yes\nAddress=10.20.0.5/16\nAddress=fd00:10::5/64\nGateway=fd00:10::1\n`,
    );
  });

  it("NTP servers go to timesyncd; hostname and time zone are passed on", () => {
    const r = renderNetwork(settings("hostname: line3\ntimeZone: europe/berlin\nntp: [192.168.10.1, pool.ntp.org]\n"), "network.yaml");
    expect(r.timesyncd).toBe(`${HEADER}[Time]\nNTP=192.168.10.1 pool.ntp.org\n`);
    expect(r.hostname).toBe("line3");
    expect(r.timeZone).toBe("Europe/Berlin");
  });
});

describe("network.yaml's checks", () => {
  const issues = (yaml: string) => {
    const r = validateNetworkYaml(yaml, "network.yaml");
    return r.ok ? [] : r.issues.map((i) => `${i.line}:${i.column} ${i.path}: ${i.message}`);
  };
  it.each([
    ["ports:\n  - name: eth0\n    addresses: [192.168.10.20]\n", /^3:17 ports\[0\]\.addresses\[0\]: .*add the prefix length, e\.g\. "192\.168\.10\.20\/24"/],
    ["ports:\n  - name: eth0\n    addresses: [192.168.10.20/255.255.255.0]\n", /write the netmask as a prefix length: "192\.168\.10\.20\/24"/],
    ["ports:\n  - name: eth0\n    addresses: [192.168.10.20/24]\n    gateway: 192.168.1.1\n", /^4:14 ports\[0\]\.gateway: expected an address in the network of 192\.168\.10\.20\/24, got 192\.168\.1\.1/],
    ["ports:\n  - addresses: [192.168.10.20/24]\n", /^2:5 ports\[0\]: expected name \(such as eth0\) or mac/],
    ["ports:\n  - name: eth0\n    mac: 52:54:00:12:34:56\n", /^3:10 ports\[0\]\.mac: expected name or mac, not both/],
    ["ports:\n  - name: eth0\n    dhcp: no\n", /^3:11 ports\[0\]\.dhcp: expected addresses when dhcp is no/],
    ["ports:\n  - name: eth0\n    gateway: fd00::1\n", /an IPv6 gateway goes in gateway6/],
    ["timeZone: Europe/Berln\n", /^1:11 timeZone: .*did you mean "Europe\/Berlin"\?/],
    ["hostname: line_3\n", /^1:11 hostname: expected a host name/],
    ["ports:\n  - name: a\n    addresses: [10.0.0.1/8]\n  - name: b\n    addresses: [10.0.0.1/8]\n", /^5:17 ports\[1\]\.addresses\[0\]: 10\.0\.0\.1 is already an address of ports\[0\]/],
    ["ports:\n  - name: eth0\n    addresses: [127.0.0.5/8]\n", /127\.0\.0\.5 cannot be a port's address/],
  ])("%j", (yaml, message) => {
    expect(issues(yaml)).toEqual([expect.stringMatching(message)]);
  });
});

let n = 0;
function targets(): NetworkTargets {
  const base = join(root, `t${++n}`);
  const zoneinfo = join(base, "zoneinfo");
  mkdirSync(join(zoneinfo, "Europe"), { recursive: true });
  writeFileSync(join(zoneinfo, "Europe/Berlin"), "TZif");
  writeFileSync(join(base, "hostname"), "fieldgate\n");
  return { networkDir: join(base, "run/network"), timesyncdDir: join(base, "run/timesyncd.conf.d"), localtime: join(base, "run/fieldgate/localtime"), hostnameFile: join(base, "hostname"), defaultHostname: "fieldgate", zoneinfo };
}

describe("writeNetwork", () => {
  it("writes what changed, removes files of ours no longer named, sets hostname and time zone, and says what it could not", () => {
    const t = targets();
    mkdirSync(t.networkDir, { recursive: true });
    writeFileSync(join(t.networkDir, "10-fieldgate-03-name-old.network"), "stale");
    writeFileSync(join(t.networkDir, "other.network"), "not ours");
    const a = writeNetwork(renderNetwork(settings("hostname: line3\ntimeZone: Europe/Berlin\nntp: [ntp.local]\nports:\n  - name: eth0\n"), "network.yaml"), t);
    expect(a).toEqual({ networkChanged: true, timesyncdChanged: true, notes: [] });
    expect(readdirSync(t.networkDir).sort()).toEqual(["10-fieldgate-00-name-eth0.network", "other.network"]);
    expect(readFileSync(join(t.timesyncdDir, "fieldgate.conf"), "utf8")).toContain("NTP=ntp.local\n");
    expect(readFileSync(t.hostnameFile!, "utf8")).toBe("line3\n");
    expect(readlinkSync(t.localtime!)).toBe(join(t.zoneinfo, "Europe/Berlin"));
    // The same again: nothing to tell networkd.
    expect(writeNetwork(renderNetwork(settings("hostname: line3\ntimeZone: Europe/Berlin\nntp: [ntp.local]\nports:\n  - name: eth0\n"), "network.yaml"), t)).toEqual({ networkChanged: false, timesyncdChanged: false, notes: [] });
    // Back to the defaults: the image's hostname, UTC, no drop-in.
    const b = writeNetwork(renderNetwork(settings("timeZone: Asia/Tokyo\nports: []\n"), "network.yaml"), t);
    expect(b.notes).toEqual([`time zone Asia/Tokyo: this system has no ${join(t.zoneinfo, "Asia/Tokyo")} (tzdata); the clock stays in UTC`]);
    expect(readdirSync(t.networkDir)).toEqual(["other.network"]);
    expect(existsSync(join(t.timesyncdDir, "fieldgate.conf")) || existsSync(t.localtime!)).toBe(false);
    expect(readFileSync(t.hostnameFile!, "utf8")).toBe("fieldgate\n");
  });
});

describe("network try, confirm, revert", () => {
  const CONFIRMED = "ports:\n  - name: eth0\n    addresses: [192.168.10.20/24]\n";
  const CANDIDATE = "ports:\n  - name: eth0\n    addresses: [192.168.10.99/24]\n";
  let t: NetworkTargets;
  let paths: TrialPaths;
  let timer: { armed: number[]; disarmed: number } & RevertTimer;
  let reloads: AppliedNetwork[];
  let now: number;
  let trial: NetworkTrial;
  const live = (): string => readFileSync(join(t.networkDir, "10-fieldgate-00-name-eth0.network"), "utf8");

  beforeEach(() => {
    t = targets();
    const base = join(t.networkDir, "../..");
    paths = { config: join(base, "etc/network.yaml"), runDir: join(base, "run/fieldgate/network-trial"), statusFile: join(base, "var/network-trial.json") };
    mkdirSync(join(base, "etc"), { recursive: true });
    writeFileSync(paths.config, CONFIRMED);
    writeNetwork(renderNetwork(settings(CONFIRMED), paths.config), t); // as the boot left it
    timer = { armed: [], disarmed: 0, arm: (s) => void timer.armed.push(s), disarm: () => void timer.disarmed++ };
    reloads = [];
    now = Date.parse("2026-12-05T14:00:00Z");
    trial = new NetworkTrial({ paths, targets: t, timer, reloader: { reload: (a) => void reloads.push(a) }, now: () => now });
  });

  it("applies the change with the revert armed first, and keeps network.yaml as it was until confirmed", () => {
    const r = trial.start(CANDIDATE, "new.yaml", 120, "alice");
    expect(r).toEqual({ ok: true, notes: [], pending: { started: "2026-12-05T14:00:00.000Z", deadline: "2026-12-05T14:02:00.000Z", timeoutSeconds: 120, by: "alice" } });
    expect(timer.armed).toEqual([120]);
    expect(live()).toContain("Address=192.168.10.99/24");
    expect(reloads).toEqual([{ networkChanged: true, timesyncdChanged: false, notes: [] }]);
    expect(readFileSync(paths.config, "utf8")).toBe(CONFIRMED);
    expect(trial.status().pending?.by).toBe("alice");
    // What the page reads without root.
    expect(readTrialStatus(paths.statusFile).pending?.deadline).toBe("2026-12-05T14:02:00.000Z");
    // A second change waits for the first to be settled.
    const busy = trial.start(CONFIRMED, "other.yaml", 120, "bob");
    expect(busy.ok).toBe(false);
    expect(!busy.ok && busy.issues[0]!.message).toBe("a network change by alice is on trial until 2026-12-05T14:02:00.000Z: confirm or revert it first");
  });

  it("not confirmed: the timer puts the confirmed settings back, and a late confirm finds nothing", () => {
    trial.start(CANDIDATE, "new.yaml", 120, "alice");
    now += 120_000;
    // The timer fires (systemd runs `fieldgate network revert`).
    const r = trial.revert("not confirmed within 120 s");
    expect(r.ok).toBe(true);
    expect(live()).toContain("Address=192.168.10.20/24");
    expect(reloads).toHaveLength(2);
    expect(readFileSync(paths.config, "utf8")).toBe(CONFIRMED);
    expect(existsSync(paths.runDir)).toBe(false);
    expect(trial.status()).toEqual({ format: 1, last: { result: "reverted", at: "2026-12-05T14:02:00.000Z", reason: "not confirmed within 120 s", started: "2026-12-05T14:00:00.000Z", by: "alice" } });
    expect(trial.confirm("alice")).toEqual({ ok: false, message: "no network change is on trial (the last one was reverted at 2026-12-05T14:02:00.000Z: not confirmed within 120 s)" });
    expect(readFileSync(paths.config, "utf8")).toBe(CONFIRMED);
  });

  it("confirmed: the change becomes network.yaml (the old one kept), the timer is stopped, nothing reloads", () => {
    trial.start(CANDIDATE, "new.yaml", 120, "alice");
    now += 30_000;
    expect(trial.confirm("alice")).toMatchObject({ ok: true });
    expect(readFileSync(paths.config, "utf8")).toBe(CANDIDATE);
    expect(readFileSync(`${paths.config}.previous`, "utf8")).toBe(CONFIRMED);
    expect(timer.disarmed).toBe(1);
    expect(reloads).toHaveLength(1);
    expect(live()).toContain("Address=192.168.10.99/24");
    expect(trial.status().last).toMatchObject({ result: "confirmed", reason: "confirmed by alice" });
    // The timer's revert, had it raced the confirm: nothing to undo.
    expect(trial.revert("not confirmed within 120 s").ok).toBe(false);
    expect(live()).toContain("Address=192.168.10.99/24");
  });

  it("a reboot before the confirmation: the boot renders network.yaml, and the status says the change was undone", () => {
    trial.start(CANDIDATE, "new.yaml", 120, "alice");
    // The reboot: /run is empty again, and the boot renders the confirmed file.
    rmSync(join(t.networkDir, ".."), { recursive: true, force: true });
    writeNetwork(renderNetwork(settings(readFileSync(paths.config, "utf8")), paths.config), t);
    expect(live()).toContain("Address=192.168.10.20/24");
    expect(trial.afterBoot()?.by).toBe("alice");
    expect(trial.status()).toMatchObject({ last: { result: "reverted", reason: "the gateway restarted before the change was confirmed" } });
    expect(trial.status().pending).toBeUndefined();
    expect(trial.afterBoot()).toBeUndefined();
  });

  it("an invalid change is refused with file:line:column, nothing applied and no timer armed", () => {
    const r = trial.start("ports:\n  - name: eth0\n    addresses: [192.168.10.99]\n", "new.yaml", 120, "alice");
    expect(r.ok).toBe(false);
    expect(!r.ok && r.issues[0]).toMatchObject({ file: "new.yaml", line: 3, column: 17 });
    expect(timer.armed).toEqual([]);
    expect(reloads).toEqual([]);
    expect(existsSync(paths.runDir)).toBe(false);
  });

  it("a change that cannot be applied is undone at once", () => {
    let first = true;
    trial = new NetworkTrial({
      paths,
      targets: t,
      timer,
      now: () => now,
      reloader: {
        reload: () => {
          if (first) {
            first = false;
            throw new Error("networkctl: Failed to reload network settings");
          }
        },
      },
    });
    expect(() => trial.start(CANDIDATE, "new.yaml", 120, "alice")).toThrow(/Failed to reload/);
    expect(live()).toContain("Address=192.168.10.20/24");
    expect(trial.status()).toMatchObject({ last: { result: "reverted", reason: "applying the change failed: networkctl: Failed to reload network settings" } });
    expect(timer.disarmed).toBe(1);
  });

  it("the gateway's requests (unprivileged) are carried out by root's `fieldgate network serve`, one at a time", () => {
    const requests = join(paths.runDir, "../../../var/network-request");
    const sent = submitNetworkRequest(requests, { action: "try", by: "ops (page)", text: CANDIDATE, timeoutSeconds: 120 });
    expect(sent.ok).toBe(true);
    expect(submitNetworkRequest(requests, { action: "confirm", by: "ops (page)" })).toEqual({ ok: false, message: "another network request is waiting to be carried out" });
    const id = sent.ok ? sent.id : "";
    expect(networkResponse(requests, id)).toBeUndefined();
    expect(serveNetworkRequest(requests, trial)).toMatchObject({ id, ok: true, pending: { by: "ops (page)", timeoutSeconds: 120 } });
    expect(networkResponse(requests, id)).toMatchObject({ id, ok: true });
    expect(live()).toContain("Address=192.168.10.99/24");
    expect(serveNetworkRequest(requests, trial)).toBeUndefined();
    // A bad file: its issues go back to the page, nothing changes.
    const bad = submitNetworkRequest(requests, { action: "try", by: "ops (page)", text: "ports: [", timeoutSeconds: 120 });
    expect(serveNetworkRequest(requests, trial)).toMatchObject({ ok: false, issues: [expect.objectContaining({ file: "network.yaml", path: "" })] });
    expect(networkResponse(requests, bad.ok ? bad.id : "")?.ok).toBe(false);
    const confirm = submitNetworkRequest(requests, { action: "confirm", by: "ops (page)" });
    expect(serveNetworkRequest(requests, trial)).toEqual({ id: confirm.ok ? confirm.id : "", ok: true });
    expect(readFileSync(paths.config, "utf8")).toBe(CANDIDATE);
  });
});
