// The client side of image/test.sh: waits for the booted appliance to accept an OPC UA session,
// checks what a SCADA client would (GetEndpoints, session, ServerStatus, a device tag), then
// asks the gateway itself, through systemd's debug shell on a serial port, for the figures of
// the issue (RSS, security exposure, boot time) and the layout checks (read-only root, grown
// data partition, SSH off, no failed unit, watchdog restart). Prints a summary; exit 0 = pass.
// image/update-check.mjs imports its parts for the boots of the update test (`configure` sets
// the boot they talk to).
import { createConnection } from "node:net";
import { readFileSync, existsSync } from "node:fs";
import { parseArgs } from "node:util";
import { fileURLToPath } from "node:url";
import { AttributeIds, BrowseDirection, NodeClass, OPCUAClient } from "node-opcua-client";

export const values = { url: "", t0: String(Date.now()), timeout: "600", shell: undefined, console: undefined };
let t0 = Date.now();
let deadline = t0 + 600_000;
export const failures = [];
export const figures = {};
/** Points the checks at one boot: its endpoint, power-on time, time-out, debug shell and console log. */
export function configure(v) {
  Object.assign(values, v);
  t0 = Number(values.t0 ?? Date.now());
  deadline = t0 + Number(values.timeout) * 1000;
  seenLogin = false;
}
export const since = () => ((Date.now() - t0) / 1000).toFixed(1);
export const check = (ok, what) => {
  console.log(`${ok ? "ok  " : "FAIL"} ${what}`);
  if (!ok) failures.push(what);
};
export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

export async function connectOnce() {
  const client = OPCUAClient.create({
    endpointMustExist: false,
    connectionStrategy: { maxRetry: 0, initialDelay: 100, maxDelay: 100 },
    transportTimeout: 10_000,
    requestedSessionTimeout: 60_000,
  });
  try {
    await client.connect(values.url);
    const session = await client.createSession();
    return { client, session };
  } catch (err) {
    await client.disconnect().catch(() => {});
    throw err;
  }
}

/** One UA-TCP Hello (Part 6 §7.1.2.3); true when the answer is an Acknowledge. Cheap to repeat. */
export function helloAnswered(url) {
  const { hostname, port } = new URL(url.replace(/^opc\.tcp:/, "http:"));
  const body = Buffer.from(url, "utf8");
  const hel = Buffer.alloc(32 + body.length);
  hel.write("HELF", 0, "latin1");
  hel.writeUInt32LE(hel.length, 4);
  hel.writeUInt32LE(0, 8); // ProtocolVersion
  hel.writeUInt32LE(65536, 12); // ReceiveBufferSize
  hel.writeUInt32LE(65536, 16); // SendBufferSize
  hel.writeUInt32LE(0, 20); // MaxMessageSize
  hel.writeUInt32LE(0, 24); // MaxChunkCount
  hel.writeInt32LE(body.length, 28);
  body.copy(hel, 32);
  return new Promise((resolve) => {
    const socket = createConnection({ host: hostname, port: Number(port) });
    const done = (ok) => {
      clearTimeout(timer);
      socket.destroy();
      resolve(ok);
    };
    const timer = setTimeout(() => done(false), 3000);
    socket.once("connect", () => socket.write(hel));
    socket.once("data", (d) => done(d.subarray(0, 3).toString("latin1") === "ACK"));
    socket.once("error", () => done(false));
    socket.once("close", () => done(false));
  });
}

let seenLogin = false;

export async function waitForSession() {
  let last = "";
  while (Date.now() < deadline) {
    if (await helloAnswered(values.url)) {
      try {
        return await connectOnce();
      } catch (err) {
        last = err instanceof Error ? err.message : String(err);
      }
    } else {
      last = "no Acknowledge to a Hello";
    }
    if (!seenLogin && values.console && existsSync(values.console) && /login:|Reached target.*Multi-User/.test(readFileSync(values.console, "utf8"))) {
      seenLogin = true;
      console.log(`     ${since()} s: the guest reached multi-user; waiting for opc.tcp`);
    }
    await sleep(1000);
  }
  throw new Error(`no OPC UA session within ${values.timeout} s (last error: ${last})`);
}

/** A tag of the device map: a Variable right under a device object of Objects/Devices. */
export async function findDeviceTag(session) {
  const objects = await session.browse({ nodeId: "i=85", browseDirection: BrowseDirection.Forward, resultMask: 63 });
  const folder = (objects.references ?? []).find((r) => r.browseName.name === "Devices");
  if (folder === undefined) return undefined;
  const devices = await session.browse({ nodeId: folder.nodeId, browseDirection: BrowseDirection.Forward, resultMask: 63 });
  for (const device of devices.references ?? []) {
    if (device.nodeClass !== NodeClass.Object) continue;
    const children = await session.browse({ nodeId: device.nodeId, browseDirection: BrowseDirection.Forward, resultMask: 63 });
    const tag = (children.references ?? []).find((c) => c.nodeClass === NodeClass.Variable && c.nodeId.namespace !== 0);
    if (tag !== undefined) return tag.nodeId.toString();
  }
  return undefined;
}

export async function opcua() {
  const { client, session } = await waitForSession();
  figures.sessionSeconds = Number(since());
  console.log(`ok   OPC UA session after ${figures.sessionSeconds} s from power-on`);
  try {
    const endpoints = await client.getEndpoints();
    check(endpoints.length > 0, `GetEndpoints: ${endpoints.map((e) => e.securityPolicyUri.split("#")[1]).join(", ")}`);
    const [status, state, nsArray] = await session.read([
      { nodeId: "i=2256", attributeId: AttributeIds.Value },
      { nodeId: "i=2259", attributeId: AttributeIds.Value },
      { nodeId: "i=2255", attributeId: AttributeIds.Value },
    ]);
    const s = status.value.value;
    check(status.statusCode.isGood() && s !== null, `ServerStatus: product ${s?.buildInfo?.productName} ${s?.buildInfo?.softwareVersion}, current time ${s?.currentTime?.toISOString?.()}`);
    check(state.value.value === 0, `ServerStatus.State = ${state.value.value} (0 = Running)`);
    const namespaces = nsArray.value.value ?? [];
    const testNs = namespaces.indexOf("urn:fieldgate:test");
    const tag = await findDeviceTag(session);
    if (tag !== undefined) {
      // The first poll may still be on its way (BadWaitingForInitialData): a few tries.
      let dv = await session.read({ nodeId: tag, attributeId: AttributeIds.Value });
      for (let i = 0; i < 20 && !dv.statusCode.isGood(); i++) {
        await sleep(1000);
        dv = await session.read({ nodeId: tag, attributeId: AttributeIds.Value });
      }
      check(dv.statusCode.isGood(), `device tag ${tag} = ${dv.value.value} (${dv.statusCode.name}, source time ${dv.sourceTimestamp?.toISOString?.()})`);
      figures.tag = tag;
    } else if (testNs > 0) {
      const nodeId = `ns=${testNs};s=Scalar.Int32`;
      const dv = await session.read({ nodeId, attributeId: AttributeIds.Value });
      check(dv.statusCode.isGood(), `no device tag in the image's device map: read the test namespace instead, ${nodeId} = ${dv.value.value}`);
      figures.tag = `${nodeId} (test namespace; no device tag in the image)`;
    } else {
      check(false, "neither a device tag nor the test namespace to read");
    }
  } finally {
    await session.close().catch(() => {});
    await client.disconnect().catch(() => {});
  }
}

/** A line-oriented conversation with the debug shell; each command's output between two markers. */
export class Shell {
  constructor(path) {
    this.buffer = "";
    this.n = 0;
    this.socket = createConnection(path);
    this.socket.setEncoding("utf8");
    this.socket.on("data", (d) => (this.buffer += d));
    // qemu ends when the guest reboots: a command then gets no answer, and waiting is pointless.
    this.closed = false;
    this.socket.on("close", () => (this.closed = true));
    this.socket.on("error", () => (this.closed = true));
  }
  async run(command, timeoutMs = 60_000) {
    const n = ++this.n;
    // $((n+0)) makes the marker appear only in the output, never in the echo of the command.
    this.socket.write(`echo @@B$((${n}+0))@@; ${command}; echo @@E$((${n}+0))@@\n`);
    const begin = `@@B${n}@@`;
    const end = `@@E${n}@@`;
    const stop = Date.now() + timeoutMs;
    while (Date.now() < stop && !this.closed) {
      const e = this.buffer.lastIndexOf(end);
      const b = this.buffer.lastIndexOf(begin);
      if (b >= 0 && e > b) {
        const out = this.buffer.slice(b + begin.length, e).replace(/\r/g, "").trim();
        this.buffer = this.buffer.slice(e + end.length);
        return out;
      }
      await sleep(100);
    }
    throw new Error(`debug shell: no answer to ${command}`);
  }
  close() {
    this.socket.destroy();
  }
}

/** How long after the first session the service's memory is read again, at rest. */
const REST_AFTER_SESSION_MS = 75_000;

/** The debug shell of the booted gateway, made quiet for scripted use. */
export async function openShell(path) {
  const sh = new Shell(path);
  await sleep(500);
  sh.socket.write("\nstty -echo 2>/dev/null; export SYSTEMD_PAGER= SYSTEMD_COLORS=0 TERM=dumb\n");
  return sh;
}

/**
 * The checks of a booted gateway through its debug shell; `beforeWatchdog(sh)` runs before the
 * watchdog test (which restarts the service, so that a changed gateway.yaml takes effect).
 */
export async function onTheGateway(path, beforeWatchdog = async () => {}) {
  const sh = await openShell(path);
  const sessionEnded = Date.now();
  try {
    check((await sh.run("systemctl is-active fieldgate.service")) === "active", "fieldgate.service is active");
    const pid = await sh.run("systemctl show -p MainPID --value fieldgate.service");
    // VmRSS and its parts: RssFile is mostly libnode's and the shared libraries' pages (the
    // kernel can drop them under pressure), RssAnon what the gateway itself holds.
    const [rss, anon, file] = (await sh.run(`awk '/^(VmRSS|RssAnon|RssFile):/ { print $2 }' /proc/${pid}/status`)).split("\n").map((kb) => Number((Number(kb) / 1024).toFixed(1)));
    figures.rssMiB = rss;
    figures.rssAnonMiB = anon;
    figures.rssFileMiB = file;
    console.log(`     RSS of fieldgate (pid ${pid}): ${rss} MiB (RssAnon ${anon} MiB, RssFile ${file} MiB)`);
    const security = await sh.run("systemd-analyze security --no-pager fieldgate.service | tail -n 1");
    figures.security = security.replace(/^→\s*/, "");
    console.log(`     ${figures.security}`);
    figures.boot = await sh.run("systemd-analyze --no-pager time 2>&1 | head -n 1");
    console.log(`     ${figures.boot}`);
    const failed = await sh.run("systemctl --failed --no-legend --plain --no-pager");
    check(failed === "", `no failed units${failed ? `: ${failed}` : ""}`);
    for (const unit of failed.split("\n").map((l) => l.split(" ")[0]).filter((u) => u.endsWith(".service"))) {
      console.log(`     journal of ${unit}:\n${(await sh.run(`journalctl -b -u ${unit} --no-pager -o short-monotonic | tail -n 20`)).replace(/^/gm, "       ")}`);
    }
    const rootOpts = await sh.run("findmnt -n -o OPTIONS /");
    check(/(^|,)ro(,|$)/.test(rootOpts), `root mounted read-only (${rootOpts.split(",")[0]})`);
    const mounts = await sh.run("for m in /data /etc/fieldgate /var/lib/fieldgate /var/lib/systemd /tmp /var/tmp; do findmnt -n -o TARGET,SOURCE,FSTYPE --mountpoint $m || echo \"$m NOT MOUNTED\"; done | tr -s ' '");
    check(!mounts.includes("NOT MOUNTED"), `mutable folders on the data partition, tmpfs for /tmp:\n       ${mounts.split("\n").join("\n       ")}`);
    const dataMiB = Number(await sh.run("df -m --output=size /data | tail -n 1"));
    check(dataMiB > 512, `data partition grown at first boot: ${dataMiB} MiB`);
    // Nothing mounted over it: a transient id (tmpfs) would change at every boot.
    const machineId = await sh.run("readlink /etc/machine-id; cat /data/etc/machine-id; findmnt -n /data/etc/machine-id || echo persistent");
    check(/^\/data\/etc\/machine-id\n[0-9a-f]{32}\npersistent$/.test(machineId), `machine-id on the data partition, persistent: ${machineId.replace(/\n/g, " ")}`);
    const groups = await sh.run("id -nG fieldgate");
    check(groups.split(" ").includes("dialout"), `user fieldgate in groups: ${groups}`);
    const ssh = await sh.run("systemctl is-active ssh.service; ls /data/etc/ssh");
    check(ssh.split("\n")[0] !== "active", `SSH off (${ssh.split("\n")[0]}), no host keys made: ${ssh.split("\n").length === 1}`);
    console.log(`     first boot: ${(await sh.run("journalctl -b -u fieldgate-firstboot --no-pager -o cat | grep firstboot: | tr '\\n' ' '")) || "(no message)"}`);
    console.log(`     ${await sh.run("node --version | sed 's/^/node /'; uname -rm | tr '\\n' ' '; free -m | awk '/Mem:/ { print \"memory used \" $3 \" MiB of \" $2 }'")}`.replace(/\n/g, ", "));
    console.log(`     timesync: ${await sh.run("test -e /run/systemd/timesync/synchronized && echo synchronized || echo 'not synchronized (no NTP server reachable from the emulator)'")}`);
    // At rest: the threads the first session started (the history's reader stays 60 s after a
    // HistoryRead, the writer 10 s after its last need) have ended.
    await sleep(Math.max(0, sessionEnded + REST_AFTER_SESSION_MS - Date.now()));
    const [restRss, restAnon, restFile, threads] = (await sh.run(`awk '/^(VmRSS|RssAnon|RssFile|Threads):/ { print $2 }' /proc/${pid}/status`)).split("\n").map(Number);
    figures.restRssMiB = Number((restRss / 1024).toFixed(1));
    figures.restRssAnonMiB = Number((restAnon / 1024).toFixed(1));
    figures.restRssFileMiB = Number((restFile / 1024).toFixed(1));
    console.log(`     RSS at rest, ${REST_AFTER_SESSION_MS / 1000} s after the first session (${threads} threads): ${figures.restRssMiB} MiB (RssAnon ${figures.restRssAnonMiB} MiB, RssFile ${figures.restRssFileMiB} MiB)`);
    // Type=notify: the unit is "reloading" from RELOADING=1 until READY=1 (the map re-read).
    const reload = await sh.run(
      "systemctl reload fieldgate.service; for i in $(seq 60); do s=$(systemctl is-active fieldgate.service); [ \"$s\" = reloading ] || break; sleep 1; done; echo $s",
      90_000,
    );
    check(reload === "active", `systemctl reload (SIGHUP: RELOADING=1, the device map re-read, READY=1): ${reload}`);
    await beforeWatchdog(sh);
    // A hung event loop: SIGSTOP the process; the watchdog (WatchdogSec=20s) must restart it.
    const before = await sh.run("systemctl show -p NRestarts --value fieldgate.service");
    await sh.run(`kill -STOP ${pid}`);
    let after = before;
    const stop = Date.now() + 90_000;
    while (Date.now() < stop && after === before) {
      await sleep(5000);
      after = await sh.run("systemctl show -p NRestarts --value fieldgate.service");
    }
    const reason = await sh.run("journalctl -b -u fieldgate --no-pager -o cat | grep -m1 -i watchdog");
    check(Number(after) === Number(before) + 1, `watchdog restarted a stopped service (NRestarts ${before} -> ${after}): ${reason}`);
  } finally {
    sh.close();
  }
}

async function main() {
  const { values: v } = parseArgs({
    options: {
      url: { type: "string" },
      t0: { type: "string" },
      timeout: { type: "string", default: "600" },
      shell: { type: "string" },
      console: { type: "string" },
    },
  });
  configure(v);
  try {
    await opcua();
    if (values.shell) {
      await onTheGateway(values.shell);
      if (failures.length === 0) {
        // After the watchdog restart, a client gets in again.
        const { client, session } = await waitForSession();
        check(true, `a new session after the restart, ${since()} s from power-on`);
        await session.close().catch(() => {});
        await client.disconnect().catch(() => {});
      }
    }
  } catch (err) {
    failures.push(err instanceof Error ? err.message : String(err));
    console.log(`FAIL ${failures[failures.length - 1]}`);
  }
  console.log(`figures: ${JSON.stringify(figures)}`);
  console.log(failures.length === 0 ? "boot test: passed" : `boot test: ${failures.length} failed`);
  process.exit(failures.length === 0 ? 0 : 1);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await main();
