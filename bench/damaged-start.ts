// `node dist/bench/damaged-start.js [--rounds N] [--size-mb M] [--target DIR ...]`: the start of a
// gateway whose history.db is intact, has 20 pages overwritten (it opens; quick_check finds the
// damage) or is random bytes (SQLite refuses it), from spawn to its "listening" line and to the
// first Good value of a device tag read over OPC UA, and when the damage was reported. Each start
// is a fresh process of the built CLI with its shipped flags, pinned to the first CPU (taskset),
// on a copy of one history.db of --size-mb; the modes (and targets, e.g. a build of main with
// --target) alternate within each round. Also the time of PRAGMA quick_check alone on that file
// (the check the history's writer thread runs before its first write). bench/RESULTS.md has the
// figures (issue 28).
import { spawn } from "node:child_process";
import { copyFileSync, closeSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, statSync, writeFileSync, writeSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { randomBytes } from "node:crypto";
import { parseArgs } from "node:util";
import { HISTORY_FILE, HistoryStore } from "../src/history/store.js";
import { quickCheck } from "../src/storage/sqlite-check.js";
import { stringNodeId, type NodeId } from "../src/ua/builtins.js";
import { StatusCodes } from "../src/ua/generated/status-codes.js";
import { UaClientChannel } from "./client/channel.js";
import { readValues, valueReadOf } from "./client/nodes.js";
import { allowedCpus, pinnedCommand } from "./harness/proc.js";
import { fieldgateCli, shippedRuntime } from "./targets/fieldgate.js";

type Mode = "intact" | "20 pages" | "random";
const MODES: readonly Mode[] = ["intact", "20 pages", "random"];

const { values } = parseArgs({
  options: {
    rounds: { type: "string", default: "3" },
    "size-mb": { type: "string", default: "50" },
    target: { type: "string", multiple: true },
  },
});
const rounds = Number(values.rounds);
const sizeMb = Number(values["size-mb"]);
const here = resolve(new URL("../..", import.meta.url).pathname);
const targets = values.target?.length ? values.target.map((t) => resolve(t)) : [here];

const work = mkdtempSync(join(tmpdir(), "fieldgate-damaged-start-"));
const template = join(work, "history.db");
const DEVICES = `devices:
  - name: sim
    driver: simulator
    rate: 100ms
    tags:
${Array.from({ length: 16 }, (_, i) => `      - { name: t${i}, address: "input:${i}", type: uint16, history: true }`).join("\n")}
`;

/** A history of 16 tags, filled to about `mb` MiB. */
function makeTemplate(mb: number): void {
  const store = new HistoryStore(template);
  const perSeries = Math.ceil((mb * 1024 * 1024) / 16 / 14);
  const t0 = Date.now() - perSeries * 1000;
  for (let s = 0; s < 16; s++) {
    const series = store.ensureSeries(stringNodeId(`sim.t${s}`, 1));
    const insert = store.prepare(`INSERT INTO ${series.table}(ts, v, st) VALUES (?, ?, NULL)`);
    store.transaction(() => {
      for (let i = 0; i < perSeries; i++) insert.run(t0 + i * 1000, i & 0xffff);
    });
  }
  store.close();
}

function damage(file: string, mode: Mode): void {
  if (mode === "intact") return;
  const size = statSync(file).size;
  if (mode === "random") {
    writeFileSync(file, randomBytes(size));
    return;
  }
  const pageSize = readFileSync(file).readUInt16BE(16);
  const pages = Math.floor(size / pageSize);
  const fd = openSync(file, "r+");
  for (let i = 1; i <= 20; i++) writeSync(fd, randomBytes(pageSize), 0, pageSize, Math.floor((i * pages) / 21) * pageSize);
  closeSync(fd);
}

interface Start {
  readonly listening: number;
  readonly firstGood: number;
  readonly reported: number | undefined;
}

async function start(root: string, mode: Mode, n: number): Promise<Start> {
  const dir = join(work, `run-${n}`);
  mkdirSync(join(dir, "data"), { recursive: true });
  copyFileSync(template, join(dir, "data", "history.db"));
  damage(join(dir, "data", "history.db"), mode);
  writeFileSync(join(dir, "devices.yaml"), DEVICES);
  const config = join(dir, "gateway.yaml");
  writeFileSync(config, "server:\n  host: 127.0.0.1\n  port: 0\ndataDir: ./data\ndevices: ./devices.yaml\nsecurity:\n  securityPolicies: [None]\n");
  const { nodeFlags, env } = shippedRuntime(root);
  const cpu = allowedCpus()[0];
  const cmd = pinnedCommand(cpu, process.execPath, [...nodeFlags, fieldgateCli(root), "run", "--config", config]);
  const t0 = performance.now();
  const spawnedAt = Date.now();
  const child = spawn(cmd.command, cmd.args, { env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  let listening: number | undefined;
  let reported: number | undefined;
  let port = 0;
  const seen = (d: Buffer): void => {
    out += d.toString();
    const m = /listening on opc\.tcp:\/\/[^:]+:(\d+)/.exec(out);
    if (m && listening === undefined) {
      listening = performance.now() - t0;
      port = Number(m[1]);
    }
    if (reported === undefined && out.includes("moved aside to")) reported = performance.now() - t0;
  };
  child.stdout!.on("data", seen);
  child.stderr!.on("data", seen);
  const exited = new Promise<number | null>((r) => child.once("exit", (code) => r(code)));
  const deadline = Date.now() + 30_000;
  while (listening === undefined) {
    if (Date.now() > deadline || child.exitCode !== null) throw new Error(`${mode}: no listening line: ${out}`);
    await new Promise((r) => setTimeout(r, 1));
  }
  const channel = await UaClientChannel.open({ host: "127.0.0.1", port, endpointUrl: `opc.tcp://127.0.0.1:${port}` });
  await channel.openSecureChannel();
  await channel.createAndActivateSession("damaged-start");
  const ramp: NodeId = stringNodeId("sim.t0", 1);
  let firstGood: number | undefined;
  while (firstGood === undefined) {
    const [dv] = await readValues(channel, [valueReadOf(ramp)]);
    if ((dv?.statusCode ?? StatusCodes.Good) === StatusCodes.Good && (dv?.sourceTimestamp ?? 0) > spawnedAt) firstGood = performance.now() - t0;
    else if (Date.now() > deadline) throw new Error(`${mode}: no Good value: ${out}`);
    else await new Promise((r) => setTimeout(r, 1));
  }
  // The damage is reported by the writer thread's check: wait for it (bounded) before stopping.
  while (mode !== "intact" && reported === undefined && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
  await channel.close();
  child.kill("SIGTERM");
  const code = await exited;
  rmSync(dir, { recursive: true, force: true });
  if (code !== 0) throw new Error(`${mode}: exit ${code}: ${out}`);
  return { listening, firstGood, reported };
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

async function main(): Promise<void> {
  const made = performance.now();
  makeTemplate(sizeMb);
  const bytes = statSync(template).size;
  console.log(`history.db of ${(bytes / 1048576).toFixed(1)} MiB (16 tags) made in ${((performance.now() - made) / 1000).toFixed(1)} s`);
  const checks: number[] = [];
  for (let i = 0; i < 3; i++) {
    const t = performance.now();
    if (quickCheck(template, HISTORY_FILE) !== undefined) throw new Error("the template is not sound");
    checks.push(performance.now() - t);
  }
  console.log(`quick_check alone (page cache warm): ${checks.map((c) => c.toFixed(0)).join(", ")} ms`);
  const results = new Map<string, Start[]>();
  const load0 = loadavg()[0]!;
  let n = 0;
  for (let r = 0; r < rounds; r++) {
    for (const root of targets) {
      for (const mode of MODES) {
        const key = `${root === here ? "this build" : root}: ${mode}`;
        // A build without the damaged-file handling stops on a damaged database: intact only.
        if (root !== here && mode !== "intact") continue;
        const s = await start(root, mode, n++);
        results.set(key, [...(results.get(key) ?? []), s]);
        console.log(`round ${r + 1} ${key}: listening ${s.listening.toFixed(0)} ms, first Good ${s.firstGood.toFixed(0)} ms${s.reported === undefined ? "" : `, reported ${s.reported.toFixed(0)} ms`}`);
      }
    }
  }
  const load1 = loadavg()[0]!;
  console.log(`\nmedians (load average ${load0.toFixed(2)} before, ${load1.toFixed(2)} after; ${rounds} rounds):`);
  for (const [key, list] of results) {
    const rep = list.map((s) => s.reported).filter((x): x is number => x !== undefined);
    console.log(`${key}: listening ${median(list.map((s) => s.listening)).toFixed(0)} ms, first Good ${median(list.map((s) => s.firstGood)).toFixed(0)} ms${rep.length ? `, reported ${median(rep).toFixed(0)} ms` : ""}`);
  }
  rmSync(work, { recursive: true, force: true });
}

main().catch((err: unknown) => {
  console.error(err);
  rmSync(work, { recursive: true, force: true });
  process.exitCode = 1;
});
