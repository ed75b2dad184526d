// `fieldgate run` killed with SIGKILL: the broker sends the edge node's will (NDEATH with the
// session's bdSeq), the next start births with the next bdSeq (kept in dataDir), and what the
// gateway had stored while the broker was down is replayed after a second kill -9: every row
// committed to the store reaches the host as historical data.
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { repoRoot } from "../../src/ua/generator/schema.js";
import { sparkplugYaml, writeGatewayFiles } from "./gateway.js";
import { HostApp, metricNamed, MOSQUITTO_MISSING, num, SKIP_BROKER, startBroker, type Broker } from "./peers.js";
import { counterDevices, dataValues, startCounter, type Counter } from "./counter.js";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function run(config: string): ChildProcess {
  const cli = join(repoRoot(), "dist", "src", "cli.js");
  const child = spawn(process.execPath, [cli, "run", "--config", config], { stdio: ["ignore", "pipe", "pipe"] });
  child.stdout!.resume();
  child.stderr!.resume();
  return child;
}

function kill9(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve();
    child.once("exit", () => resolve());
    child.kill("SIGKILL");
  });
}

describe.skipIf(SKIP_BROKER)("kill -9 of the gateway (fieldgate run, mosquitto)", { timeout: 90_000 }, () => {
  let broker: Broker;
  let counter: Counter;
  let dir: string;
  const children: ChildProcess[] = [];
  const host = () => new HostApp(broker.url);

  beforeAll(async () => {
    if (SKIP_BROKER) throw new Error(MOSQUITTO_MISSING);
    broker = await startBroker();
    counter = await startCounter();
    dir = mkdtempSync(join(tmpdir(), "fieldgate-nb-kill-"));
  });

  afterAll(async () => {
    for (const c of children) await kill9(c);
    await counter?.close();
    await broker?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("NDEATH from the broker, the next NBIRTH with the next bdSeq, and stored changes replayed after a kill -9", async () => {
    const config = writeGatewayFiles(dir, counterDevices(counter.port), sparkplugYaml(broker.url, "gwK"));
    const h = host();
    await h.connect();
    let gw = run(config);
    children.push(gw);
    const first = await h.waitFor("NBIRTH", () => h.of("NBIRTH")[0], 20_000);
    const bdSeq = num(metricNamed(first.payload, "bdSeq")!.value);
    await h.waitFor("DBIRTH", () => h.of("DBIRTH")[0]);

    await kill9(gw);
    const death = await h.waitFor("NDEATH (the will)", () => h.of("NDEATH")[0]);
    expect(num(metricNamed(death.payload, "bdSeq")!.value)).toBe(bdSeq);

    gw = run(config);
    children.push(gw);
    const second = await h.waitFor("second NBIRTH", () => h.of("NBIRTH")[1], 20_000);
    expect(num(metricNamed(second.payload, "bdSeq")!.value)).toBe((bdSeq + 1) & 255);
    await h.waitFor("second DBIRTH", () => h.of("DBIRTH")[1]);

    // Broker down: changes go to the store; then kill -9 with them in it.
    await h.close();
    await broker.stop();
    counter.start(200);
    await sleep(4000);
    counter.halt();
    await sleep(500);
    await kill9(gw);
    const db = new Database(join(dir, "data", "northbound.db"), { readonly: true });
    const rows = db.prepare("SELECT v FROM buffer ORDER BY id").raw(true).all() as [number][];
    db.close();
    expect(rows.length).toBeGreaterThan(10);

    await broker.start();
    const h2 = host();
    await h2.connect();
    gw = run(config);
    children.push(gw);
    const third = await h2.waitFor("third NBIRTH", () => h2.of("NBIRTH")[0], 20_000);
    expect(num(metricNamed(third.payload, "bdSeq")!.value)).toBe((bdSeq + 2) & 255);
    await h2.waitFor(`${rows.length} historical values`, () => dataValues(h2.received, "meter", "count").filter((v) => v.historical).length >= rows.length || undefined, 20_000);
    const historical = dataValues(h2.received, "meter", "count").filter((v) => v.historical).map((v) => v.value);
    // Every stored row, in order, once; then what the new process polled before its births
    // (stored as well): the counter's last value.
    expect(historical.slice(0, rows.length)).toEqual(rows.map((r) => r[0]));
    for (const v of historical.slice(rows.length)) expect(v).toBe(counter.value);
    await h2.close();
    await kill9(gw);
  });
});
