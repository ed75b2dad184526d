// `node dist/bench/restart.js [--rounds N] [--tags N] [--target DIR ...]`: back in service after a
// restart (a watchdog's, under systemd): the shipped config (page, security policies) of each
// target with a map of --tags simulator tags polled every second, from the spawn of a fresh
// process to its "listening" line and to the first Good value of the map's first and last tag
// read over OPC UA (source time after the spawn). Each target keeps its data directory across its
// starts, as a gateway does: the first start (the certificate made, the map validated) is shown
// apart, every later one is a restart (the certificate on disk, the map from the validated cache).
// Each start is the built CLI with its shipped flags, pinned to the first CPU (taskset); the
// targets (this checkout and e.g. a build of main) alternate within each round.
import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { basename, join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { parseDocument } from "yaml";
import { stringNodeId, type NodeId } from "../src/ua/builtins.js";
import { StatusCodes } from "../src/ua/generated/status-codes.js";
import { UaClientChannel } from "./client/channel.js";
import { readValues, valueReadOf } from "./client/nodes.js";
import { allowedCpus, pinnedCommand } from "./harness/proc.js";
import { fieldgateCli, shippedRuntime } from "./targets/fieldgate.js";
import { deviceMapYaml, TAGS_PER_DEVICE } from "./targets/fieldgate-config.js";

const { values } = parseArgs({
  options: {
    rounds: { type: "string", default: "5" },
    tags: { type: "string", default: "10000" },
    target: { type: "string", multiple: true },
  },
});
const rounds = Number(values.rounds);
const tags = Number(values.tags);
const here = resolve(new URL("../..", import.meta.url).pathname);
const targets = values.target?.length ? values.target.map((t) => resolve(t)) : [here];
const work = mkdtempSync(join(tmpdir(), "fieldgate-restart-"));

interface Start {
  readonly listening: number;
  /** The first Good value of the map's first tag, and of its last. */
  readonly firstGood: number;
  readonly lastGood: number;
}

/** The target's shipped gateway.yaml with its data and map in `dir`, ports chosen by the system. */
function configFor(root: string, dir: string): string {
  const doc = parseDocument(readFileSync(join(root, "config", "gateway.yaml"), "utf8"));
  doc.setIn(["dataDir"], join(dir, "data"));
  doc.setIn(["server", "port"], 0);
  doc.setIn(["web", "port"], 0);
  writeFileSync(join(dir, "devices.yaml"), deviceMapYaml(tags, "1s"));
  doc.setIn(["devices"], join(dir, "devices.yaml"));
  const file = join(dir, "gateway.yaml");
  writeFileSync(file, doc.toString());
  return file;
}

async function start(root: string, config: string): Promise<Start> {
  const { nodeFlags, env } = shippedRuntime(root);
  const cmd = pinnedCommand(allowedCpus()[0], process.execPath, [...nodeFlags, fieldgateCli(root), "run", "--config", config]);
  const t0 = performance.now();
  const spawnedAt = Date.now();
  const child = spawn(cmd.command, cmd.args, { env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  let listening: number | undefined;
  let port = 0;
  const seen = (d: Buffer): void => {
    out += d.toString();
    const m = /listening on opc\.tcp:\/\/[^:]+:(\d+)/.exec(out);
    if (m && listening === undefined) {
      listening = performance.now() - t0;
      port = Number(m[1]);
    }
  };
  child.stdout!.on("data", seen);
  child.stderr!.on("data", seen);
  const exited = new Promise<number | null>((r) => child.once("exit", (code) => r(code)));
  const deadline = Date.now() + 60_000;
  while (listening === undefined) {
    if (Date.now() > deadline || child.exitCode !== null) throw new Error(`no listening line: ${out}`);
    await new Promise((r) => setTimeout(r, 1));
  }
  const channel = await UaClientChannel.open({ host: "127.0.0.1", port, endpointUrl: `opc.tcp://127.0.0.1:${port}` });
  await channel.openSecureChannel();
  await channel.createAndActivateSession("restart");
  const devices = Math.ceil(tags / TAGS_PER_DEVICE);
  const lastTag = (tags - 1) % TAGS_PER_DEVICE;
  const nodes: NodeId[] = [stringNodeId("plc0.tag0", 1), stringNodeId(`plc${devices - 1}.tag${lastTag}`, 1)];
  const good: (number | undefined)[] = [undefined, undefined];
  while (good.includes(undefined)) {
    const dvs = await readValues(channel, nodes.map((n) => valueReadOf(n)));
    const at = performance.now() - t0;
    dvs.forEach((dv, i) => {
      if (good[i] === undefined && (dv?.statusCode ?? StatusCodes.Good) === StatusCodes.Good && (dv?.sourceTimestamp ?? 0) > spawnedAt) good[i] = at;
    });
    if (good.includes(undefined)) {
      if (Date.now() > deadline) throw new Error(`no Good value: ${out}`);
      await new Promise((r) => setTimeout(r, 1));
    }
  }
  await channel.close();
  child.kill("SIGTERM");
  const code = await exited;
  if (code !== 0) throw new Error(`exit ${code}: ${out}`);
  return { listening, firstGood: good[0]!, lastGood: good[1]! };
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

function line(s: Start): string {
  return `listening ${s.listening.toFixed(0)} ms, first Good ${s.firstGood.toFixed(0)} ms (first tag), ${s.lastGood.toFixed(0)} ms (last tag)`;
}

async function main(): Promise<void> {
  const load0 = loadavg()[0]!;
  const configs = targets.map((root, i) => {
    const dir = join(work, `${i}-${basename(root)}`);
    mkdirSync(dir, { recursive: true });
    return configFor(root, dir);
  });
  for (let t = 0; t < targets.length; t++) console.log(`${targets[t]}: first start: ${line(await start(targets[t]!, configs[t]!))}`);
  const results = targets.map((): Start[] => []);
  for (let r = 0; r < rounds; r++) {
    for (let t = 0; t < targets.length; t++) {
      const s = await start(targets[t]!, configs[t]!);
      results[t]!.push(s);
      console.log(`round ${r + 1} ${targets[t]}: restart: ${line(s)}`);
    }
  }
  console.log(`\nrestart medians, ${tags} tags (load average ${load0.toFixed(2)} before, ${loadavg()[0]!.toFixed(2)} after; ${rounds} rounds):`);
  for (let t = 0; t < targets.length; t++) {
    const list = results[t]!;
    console.log(`${targets[t]}: listening ${median(list.map((s) => s.listening)).toFixed(0)} ms, first Good ${median(list.map((s) => s.firstGood)).toFixed(0)} ms (first tag), ${median(list.map((s) => s.lastGood)).toFixed(0)} ms (last tag)`);
  }
}

main()
  .catch((err: unknown) => {
    console.error(err);
    process.exitCode = 1;
  })
  .finally(() => rmSync(work, { recursive: true, force: true }));
