// The boots of image/test.sh's update test, each a fresh qemu process on the same disk (the
// guest's reboot ends qemu, -no-reboot, and the next boot is a new power-on with a disk grown by
// --grow MiB, so that every boot also proves the data partition's growth):
//   1  version N in slot A: the boot-check.mjs checks; a bundle with a wrong signature and one
//      for another version are refused with nothing written; a broken N+1 (fieldgate fails to
//      start) goes into the inbox and is installed, the gateway reboots by itself
//   2  the broken N+1's trial boot in slot B: not healthy, the gateway reboots by itself
//   3  N again, in slot A, with the failure on the System object and in the log; the good N+1
//      is installed with `fieldgate update`
//   4  N+1's trial boot in slot B: the new version answers, its trial is confirmed, the tag's
//      history from boot 1 is still there; the same bundle again is refused
//   5  N+1 stays: the confirmed entry is started again
// and, on the way, the FIELDGATE drive (settings-check.mjs): boot 1 finds a broken devices.yaml
// there, refuses it and serves the map it had; boot 5 finds a network.yaml with a static address
// and authorized_keys, and runs on a network of the test's own without DHCP (a tap in a network
// namespace that test.sh made, which this process runs in), where the checks reach it.
// Prints the figures (bundle sizes come from test.sh); exit 0 = pass.
import { spawn, spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { createServer } from "node:net";
import { parseArgs } from "node:util";
import { AttributeIds } from "node-opcua-client";
import { check, configure, failures, figures, onTheGateway, openShell, opcua, sleep, waitForSession } from "./boot-check.mjs";
import { SettingsCheck, STATIC_URL, MAC, unitTime } from "./settings-check.mjs";

const { values: opt } = parseArgs({
  options: {
    qemu: { type: "string" },
    args: { type: "string" }, // JSON: qemu arguments common to every boot
    shell: { type: "string" }, // JSON: the debug shell's qemu arguments, @SOCK@ for its socket
    "shell-tty": { type: "string" },
    disk: { type: "string" },
    work: { type: "string" },
    grow: { type: "string", default: "256" },
    timeout: { type: "string", default: "600" },
    version: { type: "string" },
    next: { type: "string" },
    image: { type: "string" }, // the raw image: where the settings partition is
    tap: { type: "string", default: "" }, // a tap in this process's network namespace, for boot 5
    "tap-error": { type: "string", default: "" }, // why there is none
  },
});
const N = opt.version;
const NEXT = opt.next;
const common = JSON.parse(opt.args);
const shellArgs = JSON.parse(opt.shell);
const TAG = "ns=1;s=simulator.temperature";
const log = (m) => console.log(`     ${m}`);
const iso = (ms) => new Date(ms).toISOString();

function freePort() {
  return new Promise((resolve) => {
    const s = createServer().listen(0, "127.0.0.1", () => {
      const p = s.address().port;
      s.close(() => resolve(p));
    });
  });
}

let bootNo = 0;
/** The emulator running now: powered off when the test fails, or it would outlive the test and hold its output open. */
let running;
/**
 * Powers the gateway on; the promise `exited` settles when it reboots or powers off (qemu ends).
 * Its port is on qemu's user network (DHCP, opc.tcp forwarded to 127.0.0.1), or with `tap` on
 * the test's own network without DHCP, reached at the static address of the drive's network.yaml.
 */
async function powerOn({ tap } = {}) {
  bootNo++;
  if (bootNo > 1) {
    const r = spawnSync("qemu-img", ["resize", "-q", opt.disk, `+${opt.grow}M`], { encoding: "utf8" });
    if (r.status !== 0) throw new Error(`qemu-img resize: ${r.error?.message ?? r.stderr ?? `ended by ${r.signal}`}`);
  }
  const port = await freePort();
  const sock = `${opt.work}/shell-${bootNo}.sock`;
  const consoleLog = `${opt.work}/console-${bootNo}.log`;
  const args = [
    ...common,
    "-netdev", tap ? `tap,id=n0,ifname=${tap},script=no,downscript=no` : `user,id=n0,restrict=on,hostfwd=tcp:127.0.0.1:${port}-:4840`,
    "-device", `virtio-net-pci,netdev=n0,mac=${MAC}`,
    "-serial", `file:${consoleLog}`,
    ...shellArgs.map((a) => a.replace("@SOCK@", sock)),
    // systemd-boot appends this to the entry's command line (SMBIOS type 11): the debug shell
    // exists in this test only; the image's entries stay as they are.
    "-smbios", `type=11,value=io.systemd.boot.kernel-cmdline-extra=systemd.debug_shell=/dev/${opt["shell-tty"]}`,
  ];
  const t0 = Date.now();
  const proc = spawn(opt.qemu, args, { stdio: ["ignore", "inherit", "inherit"] });
  running = proc;
  const exited = new Promise((resolve) => proc.on("exit", () => resolve(Date.now())));
  const url = tap ? STATIC_URL : `opc.tcp://127.0.0.1:${port}`;
  console.log(`boot ${bootNo}: power on at ${iso(t0)}, opc.tcp at ${url}${tap ? ` (tap ${tap}, no DHCP)` : ""}`);
  configure({ url, t0: String(t0), timeout: opt.timeout, shell: sock, console: consoleLog });
  return { proc, port, sock, consoleLog, t0, exited };
}

async function waitExit(boot, seconds, what) {
  const t = await Promise.race([boot.exited, sleep(seconds * 1000).then(() => undefined)]);
  if (t === undefined) {
    check(false, `${what}: the gateway did not reboot within ${seconds} s`);
    boot.proc.kill();
    await boot.exited;
    throw new Error(`boot ${bootNo} did not end`);
  }
  log(`boot ${bootNo} ended (the guest rebooted) ${((t - boot.t0) / 1000).toFixed(0)} s after power-on`);
  return t;
}

/** The System object's update variables, once sampled (it samples every 10 s). */
async function systemVars(session) {
  const names = ["RunningVersion", "RootSlot", "LastUpdateResult"];
  for (let i = 0; i < 30; i++) {
    const dvs = await session.read(names.map((n) => ({ nodeId: `ns=1;s=System/${n}`, attributeId: AttributeIds.Value })));
    if (dvs[0].statusCode.isGood()) return Object.fromEntries(names.map((n, k) => [n, dvs[k].statusCode.isGood() ? dvs[k].value.value : dvs[k].statusCode.name]));
    await sleep(1000);
  }
  return { RunningVersion: "(never sampled)", RootSlot: "?", LastUpdateResult: "?" };
}

async function history(session, end = Date.now() + 3600_000) {
  const r = await session.readHistoryValue(TAG, new Date(Date.UTC(2000, 0, 1)), new Date(end));
  // Only stored samples: a bound at the start of the range (BadBoundNotFound) is not one.
  const dvs = (r.historyData?.dataValues ?? []).filter((d) => d.statusCode.name !== "BadBoundNotFound");
  return { count: dvs.length, first: dvs[0]?.sourceTimestamp?.getTime(), last: dvs.at(-1)?.sourceTimestamp?.getTime() };
}

async function withSession(fn) {
  for (let attempt = 1; ; attempt++) {
    const { client, session } = await waitForSession();
    const started = Date.now();
    try {
      return await fn(session);
    } catch (err) {
      // An emulated guest on a busy host can miss the service's watchdog, and systemd restarts
      // the gateway under the session: said in the log and asked again once, on a new session.
      if (attempt > 1 || !/BadConnectionClosed|BadSecureChannelClosed|Invalid Channel|socket has been disconnected|Connection Break/.test(String(err?.message ?? err))) throw err;
      // The client's own transportTimeout (boot-check.mjs, 10 s without a byte) ends in the same
      // "Connection Break" as a close by the gateway: how long the session had been at work tells them apart.
      log(`the connection closed under the session (${String(err?.message ?? err).split("\n")[0]}) ${((Date.now() - started) / 1000).toFixed(1)} s into its work: connecting again`);
      await whyClosed();
    } finally {
      await session.close().catch(() => {});
      await client.disconnect().catch(() => {});
    }
  }
}

/** What the guest says about a gateway that closed a session under the client: its restarts and last journal lines, into the log. */
async function whyClosed() {
  const s = await openShell(`${opt.work}/shell-${bootNo}.sock`).catch(() => undefined);
  if (!s) return log("(the debug shell did not answer: no more is known of why)");
  const out = await s
    .run("systemctl show fieldgate -p NRestarts -p Result -p ExecMainStatus -p ActiveEnterTimestamp; journalctl -b -u fieldgate --no-pager -o short-monotonic | tail -n 15", 30_000)
    .catch((e) => `(the shell failed: ${e?.message ?? e})`);
  s.close();
  log(`the guest: ${out.replace(/\n/g, "\n       ")}`);
}

/** The data partition fills the (grown) disk, and the first-boot unit did not fail. */
async function grownToTheEnd(sh) {
  const out = await sh.run(
    "d=$(basename $(readlink -f /sys/dev/block/$(findmnt -n -o MAJ:MIN /data | tr -d ' '))); " +
      "echo $(( $(cat /sys/block/vda/size) - $(cat /sys/block/vda/$d/start) - $(cat /sys/block/vda/$d/size) )) " +
      "$(( $(cat /sys/block/vda/$d/size) / 2048 )) $(df -m --output=size /data | tail -n 1) $(systemctl is-failed fieldgate-firstboot.service)",
  );
  const [room, partMiB, fsMiB, failed] = out.split(/\s+/);
  const ok = Number(room) < 2048 + 34 && Number(fsMiB) > Number(partMiB) * 0.9 && failed !== "failed";
  check(ok, `boot ${bootNo}: data partition fills the disk (${partMiB} MiB partition, ${fsMiB} MiB file system, ${room} sectors left; fieldgate-firstboot ${failed})`);
  return Number(partMiB);
}

async function main() {
  const settings = new SettingsCheck(opt.disk, opt.image, opt.work);
  // ---- Boot 1: N in slot A, with a broken devices.yaml on the FIELDGATE drive.
  settings.putBrokenMap();
  let boot = await powerOn();
  await opcua();
  await withSession((s) => settings.previousMapServes(s, TAG));
  let before;
  await withSession(async (s) => {
    const v = await systemVars(s);
    check(v.RunningVersion === N && v.RootSlot === "A" && v.LastUpdateResult === "none", `boot 1: System object: RunningVersion ${v.RunningVersion}, RootSlot ${v.RootSlot}, LastUpdateResult ${v.LastUpdateResult}`);
  });
  await onTheGateway(boot.sock, async (sh) => {
    // History is stored at once (no NTP server in the emulator), and new versions start at once.
    const edit = await sh.run(
      "sed -i -e 's/^  # clockSyncWait: 5m /  clockSyncWait: 0s /' -e 's/^  reboot: window /  reboot: now    /' /etc/fieldgate/gateway.yaml && " +
        "grep -c -e '^  clockSyncWait: 0s' -e '^  reboot: now' /etc/fieldgate/gateway.yaml && fieldgate validate --config /etc/fieldgate/gateway.yaml >/dev/null && echo valid",
    );
    check(edit.endsWith("2\nvalid"), `gateway.yaml: history.clockSyncWait 0s, update.reboot now (${edit.replace(/\n/g, " ")})`);
  });
  let sh = await openShell(boot.sock);
  await settings.refusedOnTheGateway(sh);
  const grown = [await grownToTheEnd(sh)];
  // History of the tag before any update: the samples since the restart.
  await withSession(async (s) => {
    for (let i = 0; i < 60 && !((before = await history(s)).count >= 5); i++) await sleep(2000);
  });
  check(before.count >= 5, `boot 1: ${before.count} samples of ${TAG} in history (${before.first ? iso(before.first) : "-"} .. ${before.last ? iso(before.last) : "-"})`);

  // Refusals: nothing written to slot B or the boot partition.
  const written = "head -c 67108864 /dev/disk/by-partlabel/fieldgate-rootB | sha256sum | cut -c1-16; find /efi -type f | sort | xargs sha256sum | sha256sum | cut -c1-16";
  await sh.run("mkdir -p /run/stick && mount -o ro /dev/vdb /run/stick && ls /run/stick");
  const w0 = await sh.run(written);
  const bad = await sh.run("fieldgate update /run/stick/badsig.fgu --reboot now 2>&1; echo rc=$?", 300_000);
  const w1 = await sh.run(written);
  check(/bad signature/.test(bad) && /rc=1$/.test(bad) && w0 === w1, `a bundle signed with another key is refused, nothing written (slot B and boot partition hashes ${w0.replace("\n", " ")} unchanged: ${w0 === w1}): ${(bad.split("\n").find((l) => /refused/.test(l)) ?? bad).trim()}`);

  // The broken N+1, through the inbox: installed, then the gateway reboots into its trial.
  const tInbox = Date.now();
  await sh.run("cp /run/stick/broken.fgu /data/update/inbox/.broken.part && mv /data/update/inbox/.broken.part /data/update/inbox/broken.fgu");
  log("the broken N+1 copied into /data/update/inbox; waiting for the gateway to install it and reboot");
  sh.close();
  const tTrial = await waitExit(boot, 900, "broken N+1 from the inbox");
  figures.inboxToRebootSeconds = Math.round((tTrial - tInbox) / 1000);
  // The card in the laptop: IMPORT-RESULT.txt says what to fix; the broken file is taken away.
  settings.refusedOnTheDrive();

  // ---- Boot 2: the broken N+1's trial in slot B; it must reboot by itself.
  boot = await powerOn();
  // The shell comes up with systemd, some seconds after power-on: asked until it answers. Not
  // before Linux runs: the shell's serial port is also a console of the firmware and of
  // systemd-boot, which would take what is written as key presses (and stop in its menu).
  let seen = "";
  let ended = false;
  boot.exited.then(() => (ended = true));
  const linuxUp = () => {
    try {
      // The initramfs checks the data partition at every boot (scripts/local-bottom/fieldgate-data).
      return /fieldgate-data: /.test(readFileSync(boot.consoleLog, "latin1"));
    } catch {
      return false;
    }
  };
  while (!ended && !linuxUp()) await sleep(1000);
  while (!ended && seen === "") {
    await sleep(3000);
    const s = await openShell(boot.sock).catch(() => undefined);
    if (!s) continue;
    // The shell starts before the boot partition's automount is set up: asked again until it is.
    const out = await s.run("systemctl is-active efi.automount; cat /proc/cmdline; ls -1 /efi/loader/entries", 8000).catch(() => "");
    if (out.startsWith("active\n")) seen = out.slice("active\n".length);
    s.close();
  }
  check(/root=PARTLABEL=fieldgate-rootB/.test(seen) && /fieldgate-b\+0-1\.conf/.test(seen), `boot 2: the trial boot of slot B, its try counted by systemd-boot (${seen.split("\n").slice(1).join(" ") || "the debug shell never answered"})`);
  await waitExit(boot, 900, "broken N+1's trial boot");

  // ---- Boot 3: back on N by itself.
  boot = await powerOn();
  await withSession(async (s) => {
    figures.fallbackSeconds = Math.round((Date.now() - tTrial) / 1000);
    const v = await systemVars(s);
    check(v.RunningVersion === N && v.RootSlot === "A", `boot 3: back on ${v.RunningVersion} in slot ${v.RootSlot} by itself, ${figures.fallbackSeconds} s after the trial boot started`);
    const h = await history(s);
    check(h.first !== undefined && h.first <= before.first && h.count >= before.count, `boot 3: history kept (${h.count} samples from ${h.first ? iso(h.first) : "-"})`);
  });
  sh = await openShell(boot.sock);
  grown.push(await grownToTheEnd(sh));
  // fieldgate-trial.service records the fall-back once the gateway has started.
  const trial = await sh.run("for i in $(seq 150); do [ \"$(systemctl is-active fieldgate-trial.service)\" = activating ] || break; sleep 2; done; systemctl is-active fieldgate-trial.service", 330_000);
  const logs = await sh.run("journalctl -b -u fieldgate-trial --no-pager -o cat | grep -m1 'failed its trial boot'; grep 'not healthy\\|failed its trial boot' /data/update/update.log | cut -c1-160; ls -1 /efi/loader/entries; systemctl --failed --no-legend --plain");
  check(trial === "active" && /went back to .* by itself/.test(logs) && /not healthy: fieldgate.service did not start/.test(logs) && /fieldgate-a\.conf/.test(logs) && !/fieldgate-b/.test(logs) && !/ failed /.test(logs.split("\n").at(-1)),
    `boot 3: the failure in the journal and update.log (from both boots), slot B's used-up entry removed, no failed unit:\n       ${logs.replace(/\n/g, "\n       ")}`);
  await withSession(async (s) => {
    let v = await systemVars(s);
    for (let i = 0; i < 3 && !/by itself/.test(v.LastUpdateResult); i++) {
      await sleep(10_000); // the System object samples every 10 s
      v = await systemVars(s);
    }
    check(/^failed: .*failed its trial boot: fieldgate.service did not start.*went back to .* by itself/.test(v.LastUpdateResult), `boot 3: LastUpdateResult: ${v.LastUpdateResult}`);
  });
  // The good N+1 with the command.
  await sh.run("mkdir -p /run/stick && mount -o ro /dev/vdb /run/stick");
  const tUpdate = Date.now();
  // The command ends in a reboot: its output is read from the shell as it comes, no end marker.
  sh.socket.write("fieldgate update /run/stick/next.fgu --reboot now 2>&1\n");
  const tRebooted = await waitExit(boot, 900, "fieldgate update next.fgu");
  for (const l of sh.buffer.replace(/\r/g, "").split("\n").filter((x) => x.startsWith("fieldgate update:"))) log(l);
  sh.close();
  figures.installSeconds = Math.round((tRebooted - tUpdate) / 1000);

  // ---- Boot 4: N+1's trial in slot B.
  boot = await powerOn();
  await withSession(async (s) => {
    let v = await systemVars(s);
    figures.updateToNewVersionSeconds = Math.round((Date.now() - tUpdate) / 1000);
    check(v.RunningVersion === NEXT && v.RootSlot === "B", `boot 4: ${v.RunningVersion} answers from slot ${v.RootSlot}, ${figures.updateToNewVersionSeconds} s after \`fieldgate update\``);
    for (let i = 0; i < 90 && !/^succeeded/.test(v.LastUpdateResult); i++) {
      await sleep(5000);
      v = await systemVars(s);
    }
    figures.confirmedSeconds = Math.round((Date.now() - boot.t0) / 1000);
    check(/^succeeded: /.test(v.LastUpdateResult), `boot 4: trial confirmed ${figures.confirmedSeconds} s after power-on; LastUpdateResult: ${v.LastUpdateResult}`);
    const dv = await s.read({ nodeId: TAG, attributeId: AttributeIds.Value });
    const h = await history(s);
    check(dv.statusCode.isGood() && h.first <= before.first && h.count > before.count,
      `boot 4: ${TAG} = ${dv.value.value} (${dv.statusCode.name}); history intact: ${h.count} samples from ${h.first ? iso(h.first) : "-"} (boot 1 had ${before.count} from ${iso(before.first)})`);
  });
  sh = await openShell(boot.sock);
  grown.push(await grownToTheEnd(sh));
  // The settings unit at a boot whose drive brings nothing: a look, and network.yaml rendered.
  figures.settingsUnitNothing = await unitTime(sh);
  const after = await sh.run("ls -1 /efi/loader/entries; systemctl --failed --no-legend --plain");
  check(/fieldgate-b\.conf/.test(after) && /fieldgate-a\.conf/.test(after) && after.split("\n").length === 2,
    `boot 4: slot B's entry confirmed, slot A's kept as the previous version, no failed unit: ${after.replace(/\n/g, " ")}`);
  const same = await sh.run("mkdir -p /run/stick && mount -o ro /dev/vdb /run/stick 2>/dev/null; fieldgate update /run/stick/next.fgu 2>&1; echo rc=$?", 300_000);
  check(/the version running now/.test(same) && /rc=1$/.test(same), `the same version again is refused: ${(same.split("\n").find((l) => /refused/.test(l)) ?? same).trim()}`);
  sh.socket.write("systemctl reboot\n");
  await waitExit(boot, 300, "systemctl reboot");
  sh.close();

  // ---- Boot 5: the confirmed N+1 stays; the drive brings a static address and SSH keys, on a
  // network without DHCP.
  settings.putStaticNetwork();
  if (!opt.tap) check(false, `boot 5: no network of the test's own (${opt["tap-error"] || "no tap given"}): the static address is not checked`);
  boot = await powerOn({ tap: opt.tap || undefined });
  await withSession(async (s) => {
    const v = await systemVars(s);
    check(v.RunningVersion === NEXT && v.RootSlot === "B", `boot 5: still ${v.RunningVersion} from slot ${v.RootSlot} after a plain reboot`);
    if (opt.tap) await settings.tagAtStaticAddress(s, TAG);
  });
  sh = await openShell(boot.sock);
  grown.push(await grownToTheEnd(sh));
  figures.dataPartitionMiB = grown;
  await settings.appliedOnTheGateway(sh);
  if (opt.tap) {
    await settings.sshLogin();
    await settings.driveVersionsOnThePage();
    await settings.unconfirmedChangeReverts(sh);
  }
  sh.socket.write("systemctl poweroff\n");
  await waitExit(boot, 120, "systemctl poweroff");
  sh.close();
  settings.appliedOnTheDrive();
}

try {
  await main();
} catch (err) {
  failures.push(err instanceof Error ? err.message : String(err));
  console.log(`FAIL ${failures.at(-1)}`);
  await guestReport();
}

/** What the running guest says about its gateway when a check gave up on it: its units and journal. */
async function guestReport() {
  if (running === undefined || running.exitCode !== null || running.signalCode !== null) return;
  const s = await openShell(`${opt.work}/shell-${bootNo}.sock`).catch(() => undefined);
  if (!s) return log("(the debug shell did not answer)");
  const out = await s
    .run("systemctl --failed --no-legend --plain; systemctl status fieldgate fieldgate-settings fieldgate-trial --no-pager -l | head -60; journalctl -b -u fieldgate -u fieldgate-settings -u fieldgate-trial -u systemd-networkd --no-pager -o short-monotonic | tail -80", 120_000)
    .catch((e) => `(the shell failed: ${e?.message ?? e})`);
  s.close();
  log(`boot ${bootNo}, the guest:\n       ${out.replace(/\n/g, "\n       ")}`);
}
if (running !== undefined && running.exitCode === null && running.signalCode === null) running.kill("SIGKILL");
console.log(`figures: ${JSON.stringify(figures)}`);
console.log(failures.length === 0 ? "update test: passed" : `update test: ${failures.length} failed`);
process.exit(failures.length === 0 ? 0 : 1);
