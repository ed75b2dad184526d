// The notifier (src/server/systemd-notify.ts): what it sends and when, with a fake spawn and a
// fake clock; then the real thing: `fieldgate run` under a NOTIFY_SOCKET served by a small
// python3 datagram receiver, through Debian's own systemd-notify (skips without python3 or
// systemd-notify).
import { spawn, spawnSync } from "node:child_process";
import type { ChildProcess } from "node:child_process";
import { EventEmitter } from "node:events";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { requirePeers, skipWithout } from "../helpers/ci.js";
import { FakeClock } from "../../src/sampling/clock.js";
import { DeadlineScheduler } from "../../src/sampling/scheduler.js";
import { SystemdNotifier, watchdogInterval } from "../../src/server/systemd-notify.js";
import type { SpawnFunction } from "../../src/server/systemd-notify.js";

interface FakeChild {
  args: string[];
  child: EventEmitter;
}

function fakeSpawn(): { spawn: SpawnFunction; children: FakeChild[] } {
  const children: FakeChild[] = [];
  const fn: SpawnFunction = (_command, args) => {
    const child = new EventEmitter();
    children.push({ args: [...args], child });
    return child as unknown as ChildProcess;
  };
  return { spawn: fn, children };
}

function setup(env: NodeJS.ProcessEnv) {
  const clock = new FakeClock();
  const scheduler = new DeadlineScheduler(clock);
  const { spawn: sp, children } = fakeSpawn();
  const logs: string[] = [];
  const notifier = SystemdNotifier.fromEnv({ env, scheduler, spawn: sp, pid: 1234, log: (m) => logs.push(m) });
  return { clock, notifier, children, logs };
}

const SOCKET_ENV = { NOTIFY_SOCKET: "/run/systemd/notify" };

describe("SystemdNotifier", () => {
  it("does nothing when NOTIFY_SOCKET is unset (run by hand)", () => {
    expect(SystemdNotifier.fromEnv({ env: {} })).toBeUndefined();
    expect(SystemdNotifier.fromEnv({ env: { NOTIFY_SOCKET: "" } })).toBeUndefined();
  });

  it("reads WATCHDOG_USEC as sd_watchdog_enabled(3) does: half the interval, for our pid only", () => {
    expect(watchdogInterval({ WATCHDOG_USEC: "20000000" }, 7)).toBe(10_000);
    expect(watchdogInterval({ WATCHDOG_USEC: "20000000", WATCHDOG_PID: "7" }, 7)).toBe(10_000);
    expect(watchdogInterval({ WATCHDOG_USEC: "20000000", WATCHDOG_PID: "8" }, 7)).toBeUndefined();
    expect(watchdogInterval({}, 7)).toBeUndefined();
    expect(watchdogInterval({ WATCHDOG_USEC: "0" }, 7)).toBeUndefined();
    expect(watchdogInterval({ WATCHDOG_USEC: "junk" }, 7)).toBeUndefined();
  });

  it("sends READY=1 with a status, then WATCHDOG=1 every half interval, then STOPPING=1", () => {
    const { clock, notifier, children } = setup({ ...SOCKET_ENV, WATCHDOG_USEC: "2000000" });
    expect(notifier!.watchdogIntervalMs).toBe(1000);
    notifier!.ready("listening on opc.tcp://x:4840");
    expect(children.map((c) => c.args)).toEqual([["READY=1", "STATUS=listening on opc.tcp://x:4840"]]);
    clock.advance(999);
    expect(children).toHaveLength(1);
    children[0].child.emit("exit", 0);
    for (let i = 0; i < 3; i++) {
      clock.advance(1000);
      const last = children[children.length - 1];
      expect(last.args).toEqual(["WATCHDOG=1"]);
      last.child.emit("exit", 0);
    }
    expect(children).toHaveLength(4);
    notifier!.stopping();
    expect(children[children.length - 1].args).toEqual(["STOPPING=1"]);
    clock.advance(10_000);
    expect(children).toHaveLength(5); // no pings after STOPPING
    expect(notifier!.stats).toEqual({ sent: 5, failed: 0, skippedPings: 0 });
  });

  it("skips a ping while the previous one still runs, never queues it", () => {
    const { clock, notifier, children } = setup({ ...SOCKET_ENV, WATCHDOG_USEC: "2000000" });
    notifier!.ready();
    clock.advance(1000);
    clock.advance(1000);
    clock.advance(1000);
    expect(children.filter((c) => c.args[0] === "WATCHDOG=1")).toHaveLength(1);
    expect(notifier!.stats.skippedPings).toBe(2);
    children[1].child.emit("exit", 0);
    clock.advance(1000);
    expect(children.filter((c) => c.args[0] === "WATCHDOG=1")).toHaveLength(2);
  });

  it("a hung event loop sends no ping (the manager then restarts the service)", () => {
    const { clock, notifier, children } = setup({ ...SOCKET_ENV, WATCHDOG_USEC: "2000000" });
    notifier!.ready();
    clock.stall(5000); // the loop was blocked for 5 s: one late ping, not five
    expect(children.filter((c) => c.args[0] === "WATCHDOG=1")).toHaveLength(1);
  });

  it("no pings without a watchdog, or when the watchdog is for another pid", () => {
    for (const env of [SOCKET_ENV, { ...SOCKET_ENV, WATCHDOG_USEC: "2000000", WATCHDOG_PID: "99" }]) {
      const { clock, notifier, children } = setup(env);
      notifier!.ready();
      clock.advance(60_000);
      expect(children.map((c) => c.args[0])).toEqual(["READY=1"]);
    }
  });

  it("RELOADING=1 then READY=1 around a reload, in order, without a second watchdog", () => {
    const { clock, notifier, children } = setup({ ...SOCKET_ENV, WATCHDOG_USEC: "2000000" });
    notifier!.ready();
    notifier!.reloading();
    notifier!.ready();
    // One state message at a time: the next starts when the previous one was delivered (its
    // systemd-notify exited), so READY=1 cannot overtake RELOADING=1.
    expect(children.map((c) => c.args[0])).toEqual(["READY=1"]);
    children[0].child.emit("exit", 0);
    expect(children.map((c) => c.args[0])).toEqual(["READY=1", "RELOADING=1"]);
    clock.advance(1000); // a watchdog ping does not wait for state messages
    expect(children.map((c) => c.args[0])).toEqual(["READY=1", "RELOADING=1", "WATCHDOG=1"]);
    children[1].child.emit("error", new Error("EAGAIN"));
    children[1].child.emit("exit", 1); // both events of one failed child count once
    expect(children.map((c) => c.args[0])).toEqual(["READY=1", "RELOADING=1", "WATCHDOG=1", "READY=1"]);
    children[3].child.emit("exit", 0);
    expect(children.filter((c) => c.args[0] === "WATCHDOG=1")).toHaveLength(1);
    expect(notifier!.stats.failed).toBe(1);
  });

  it("without systemd-notify it reports once and stops trying", () => {
    const { clock, notifier, children, logs } = setup({ ...SOCKET_ENV, WATCHDOG_USEC: "2000000" });
    notifier!.ready();
    const enoent = Object.assign(new Error("spawn systemd-notify ENOENT"), { code: "ENOENT" });
    children[0].child.emit("error", enoent);
    clock.advance(10_000);
    notifier!.stopping();
    expect(children).toHaveLength(1);
    expect(logs).toHaveLength(1);
    expect(logs[0]).toMatch(/ENOENT/);
  });

  it("a failing systemd-notify is counted and reported once", () => {
    const { clock, notifier, children, logs } = setup({ ...SOCKET_ENV, WATCHDOG_USEC: "2000000" });
    notifier!.ready();
    children[0].child.emit("exit", 1);
    clock.advance(1000);
    children[1].child.emit("exit", 1);
    clock.advance(1000);
    expect(children).toHaveLength(3);
    expect(children[2].args).toEqual(["WATCHDOG=1"]);
    expect(notifier!.stats.failed).toBe(2);
    expect(logs).toHaveLength(1);
  });
});

// --- The real thing. ---------------------------------------------------------------------------

const cli = resolve(__dirname, "../../dist/src/cli.js");
function has(cmd: string): boolean {
  return spawnSync("sh", ["-c", `command -v ${cmd}`], { stdio: "ignore" }).status === 0;
}
const realOk = existsSync(cli) && has("python3") && has("systemd-notify");
if (!realOk) console.warn("systemd-notify round trip skipped: needs dist/ (npm run build), python3 and systemd-notify (Debian: systemd)");

// One datagram per line on stdout; file descriptors passed with BARRIER=1 are closed, which is
// what releases systemd-notify's wait (sd_notify_barrier(3)).
const RECEIVER = `
import socket, os, sys, array, json
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
print(json.dumps("BOUND"), flush=True)
while True:
    msg, anc, flags, addr = s.recvmsg(4096, socket.CMSG_SPACE(4 * 16))
    for level, kind, data in anc:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds = array.array("i")
            fds.frombytes(data[: len(data) - len(data) % fds.itemsize])
            for fd in fds:
                os.close(fd)
    print(json.dumps(msg.decode()), flush=True)
`;

const notifyMissing = realOk ? "" : "dist/ (npm run build), python3 and systemd-notify (Debian: systemd)";

describe.skipIf(skipWithout(notifyMissing))("fieldgate run under a notify socket", () => {
  beforeAll(() => requirePeers(notifyMissing));
  const dir = mkdtempSync(join(tmpdir(), "fieldgate-notify-"));
  const config = join(dir, "gateway.yaml");
  writeFileSync(config, "server:\n  host: 127.0.0.1\n  port: 0\ndataDir: ./data\n");
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("READY=1, WATCHDOG=1, RELOADING=1/READY=1 on SIGHUP, STOPPING=1 on SIGTERM", async () => {
    const socketPath = join(dir, "notify.sock");
    const receiver = spawn("python3", ["-c", RECEIVER, socketPath], { stdio: ["ignore", "pipe", "inherit"] });
    const messages: string[] = [];
    let waiters: (() => void)[] = [];
    let buffered = "";
    receiver.stdout.on("data", (d: Buffer) => {
      buffered += d.toString();
      let nl;
      while ((nl = buffered.indexOf("\n")) >= 0) {
        messages.push(JSON.parse(buffered.slice(0, nl)) as string);
        buffered = buffered.slice(nl + 1);
      }
      const due = waiters;
      waiters = [];
      for (const w of due) w();
    });
    const until = (pred: () => boolean, what: string): Promise<void> =>
      new Promise((res, rej) => {
        const timer = setTimeout(() => rej(new Error(`timed out waiting for ${what}; got ${JSON.stringify(messages)}`)), 20_000);
        const check = (): void => {
          if (pred()) {
            clearTimeout(timer);
            res();
          } else waiters.push(check);
        };
        check();
      });
    let gateway: ChildProcess | undefined;
    try {
      await until(() => messages.includes("BOUND"), "the receiver");
      gateway = spawn(process.execPath, [cli, "run", "--config", config], {
        // 200 ms watchdog: pings every 100 ms, so the test sees some without waiting long.
        env: { ...process.env, NOTIFY_SOCKET: socketPath, WATCHDOG_USEC: "200000" },
        stdio: ["ignore", "pipe", "pipe"],
      });
      const exited = new Promise<number | null>((r) => gateway!.once("exit", (code) => r(code)));
      await until(() => messages.some((m) => m.startsWith("READY=1\nSTATUS=listening on opc.tcp://")), "READY=1");
      await until(() => messages.filter((m) => m === "WATCHDOG=1").length >= 2, "two WATCHDOG=1");
      gateway.kill("SIGHUP");
      await until(() => messages.includes("RELOADING=1"), "RELOADING=1");
      await until(() => messages.filter((m) => m.startsWith("READY=1")).length >= 2, "READY=1 after the reload");
      expect(gateway.exitCode).toBeNull(); // SIGHUP did not end it
      gateway.kill("SIGTERM");
      await until(() => messages.includes("STOPPING=1"), "STOPPING=1");
      expect(await exited).toBe(0);
      const order = messages.filter((m) => m !== "BARRIER=1" && m !== "BOUND" && m !== "WATCHDOG=1").map((m) => m.split("\n")[0]);
      expect(order).toEqual(["READY=1", "RELOADING=1", "READY=1", "STOPPING=1"]);
    } finally {
      if (gateway && gateway.exitCode === null) gateway.kill("SIGKILL");
      receiver.kill("SIGKILL");
    }
  }, 60_000);
});
