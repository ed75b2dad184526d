// A history worker runs below the event loop (src/worker-serve.ts): SCHED_IDLE where
// util-linux's chrt may set it, else nice +WORKER_NICE, on its own thread only. Read off
// /proc/self/task, the kernel's own account of each thread of this process, so a worker that
// forgot to lower itself (or lowered the whole process) fails here.
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { loadGatewayConfig } from "../../src/config/load.js";
import { GatewayHistory } from "../../src/history/history.js";
import { WORKER_NICE } from "../../src/thread-priority.js";
import { T0, dbl, node } from "./helpers.js";

const DIST = resolve(dirname(fileURLToPath(import.meta.url)), "../../dist/src/history");
const built = existsSync(resolve(DIST, "write-worker.js"));
const SCHED_IDLE = 5;

interface TaskSched {
  readonly tid: number;
  readonly nice: number;
  readonly policy: number;
}

/** Each thread's nice value and scheduling policy (proc(5): stat fields 19 and 41). */
function tasks(): TaskSched[] {
  const out: TaskSched[] = [];
  for (const tid of readdirSync("/proc/self/task")) {
    let stat: string;
    try {
      stat = readFileSync(`/proc/self/task/${tid}/stat`, "latin1");
    } catch {
      continue; // ended between the listing and the read
    }
    // The command name may hold spaces and parentheses: the fields start after the last ")".
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    out.push({ tid: Number(tid), nice: Number(fields[16]), policy: Number(fields[38]) });
  }
  return out;
}

async function until<T>(what: string, probe: () => T | undefined, ms = 10_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = probe();
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

const cleanups: Array<() => unknown> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

describe.skipIf(!built || process.platform !== "linux")("a history worker's priority", () => {
  it("is lowered on the worker's thread alone, not on the event loop's", async () => {
    const dir = mkdtempSync(join(tmpdir(), "fg-prio-"));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    writeFileSync(join(dir, "gateway.yaml"), "dataDir: ./data\nhistory:\n  flushInterval: 60s\n");
    const config = loadGatewayConfig(join(dir, "gateway.yaml"));
    const main = tasks().find((t) => t.tid === process.pid)!;
    const before = new Set(tasks().map((t) => t.tid));
    const h = new GatewayHistory(config.history, config.dataDir, () => undefined);
    cleanups.push(() => h.close());
    h.start();
    h.writer.declare(node("t"));
    h.writer.record(node("t"), dbl(1, T0));
    h.writer.timerTick();
    h.writer.flushAll();
    expect(h.writer.threads).toBe(1);
    const chrt = ["/usr/bin/chrt", "/bin/chrt"].some((p) => existsSync(p));
    // chrt runs as a child of the worker, without waiting: poll for its effect.
    const lowered = await until("a new thread at a lower priority", () =>
      tasks().find((t) => !before.has(t.tid) && (chrt ? t.policy === SCHED_IDLE : t.nice >= main.nice + WORKER_NICE)),
    );
    expect(lowered.tid).not.toBe(process.pid);
    if (chrt) expect(lowered.policy).toBe(SCHED_IDLE);
    else expect(lowered.nice).toBe(Math.min(19, main.nice + WORKER_NICE));
    // The event loop's thread keeps what it had.
    const after = tasks().find((t) => t.tid === process.pid)!;
    expect(after).toEqual(main);
    await h.close();
  }, 30_000);
});
