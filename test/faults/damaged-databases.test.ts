// A damaged database never stops the live gateway (DESIGN: Damaged files). history.db and
// northbound.db, each damaged the three ways an SD card after a power cut damages a file (random
// bytes in its place, cut to half its size, 20 of its pages overwritten), under the built gateway
// (`fieldgate run` from dist/, `npm test` builds it): node-opcua-client reads Good live values
// within 15 s of the start; the damaged file is beside, at <name>.damaged-<time>, byte for byte
// what it was; the log names it and says what to do; /metrics counts it and the status page shows
// it; history written after the fresh start reads back (HistoryRead), the fresh store of the
// northbound takes the changes the broker did not; SIGTERM ends the gateway with status 0.
import { createHash, randomBytes } from "node:crypto";
import { existsSync, mkdirSync, mkdtempSync, openSync, readdirSync, readFileSync, rmSync, truncateSync, writeFileSync, writeSync, closeSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import Database from "better-sqlite3";
import { AttributeIds, type ClientSession, type HistoryData } from "node-opcua-client";
import { afterAll, describe, expect, it } from "vitest";
import { HistoryStore } from "../../src/history/store.js";
import { ForwardStore, StoredKind } from "../../src/northbound/forward-store.js";
import { stringNodeId } from "../../src/ua/builtins.js";
import { runCliGateway, type CliGateway } from "../helpers/child-output.js";

const cli = resolve(__dirname, "../../dist/src/cli.js");
const root = mkdtempSync(join(tmpdir(), "fieldgate-damaged-"));
const gateways: CliGateway[] = [];
afterAll(() => {
  // A test that failed before its stop leaves its gateway running: ended here.
  for (const g of gateways) if (g.child.exitCode === null && g.child.signalCode === null) g.child.kill("SIGKILL");
  rmSync(root, { recursive: true, force: true });
});

/** The built gateway on `config`, listening, with a node-opcua-client session (test/helpers/child-output.ts). */
async function run(config: string): Promise<CliGateway> {
  const g = await runCliGateway(cli, config);
  gateways.push(g);
  return g;
}

const DEVICES = `devices:
  - name: sim
    driver: simulator
    rate: 100ms
    tags:
      - { name: ramp, address: "input:0", type: uint16, history: true }
      - { name: level, address: "input:1", type: uint16, history: true }
`;

type Damage = "random bytes" | "cut to half" | "20 pages overwritten";
const DAMAGES: readonly Damage[] = ["random bytes", "cut to half", "20 pages overwritten"];

/** A history database as the gateway leaves it: 8 tags of 5,000 samples (about 1.5 MB). */
function historyDb(file: string): void {
  const store = new HistoryStore(file);
  const t0 = Date.now() - 86_400_000;
  store.transaction(() => {
    for (let s = 0; s < 8; s++) {
      const series = store.ensureSeries(stringNodeId(`old.t${s}`, 1));
      const insert = store.prepare(`INSERT INTO ${series.table}(ts, v, st) VALUES (?, ?, NULL)`);
      for (let i = 0; i < 5000; i++) insert.run(t0 + i * 1000, i * (s + 1));
    }
  });
  store.close();
}

/** A store-and-forward database with 30,000 changes waiting for a broker. */
function northboundDb(file: string): void {
  const store = new ForwardStore(file, { maxAge: 30 * 86_400_000, maxSize: 1 << 30, sliceRows: 30_000, maxStaged: 100_000 });
  const m = store.metricId("sim", "ramp");
  for (let i = 0; i < 30_000; i++) store.append(m, Date.now() - 30_000 + i, 192, StoredKind.Number, i, undefined);
  while (store.commit() > 0);
  store.close();
}

function damage(file: string, how: Damage): void {
  const size = readFileSync(file).length;
  if (how === "random bytes") writeFileSync(file, randomBytes(size));
  else if (how === "cut to half") truncateSync(file, Math.floor(size / 2));
  else {
    // The page size from the header (offset 16, big-endian; 1 stands for 65536); page 1, the
    // header itself, is left: the file still opens, and only quick_check finds the damage.
    const header = readFileSync(file).subarray(0, 100);
    const raw = header.readUInt16BE(16);
    const pageSize = raw === 1 ? 65536 : raw;
    const pages = Math.floor(size / pageSize);
    expect(pages).toBeGreaterThan(40);
    const fd = openSync(file, "r+");
    for (let i = 1; i <= 20; i++) writeSync(fd, randomBytes(pageSize), 0, pageSize, Math.floor((i * pages) / 21) * pageSize);
    closeSync(fd);
  }
}

const sha256 = (bytes: Buffer): string => createHash("sha256").update(bytes).digest("hex");

/** Reads `id` until it is Good with a source time after `after`, or `until` passes. */
async function goodValue(session: ClientSession, id: string, after: number, until: number): Promise<void> {
  for (;;) {
    const dv = await session.read({ nodeId: id, attributeId: AttributeIds.Value });
    if (dv.statusCode.value === 0 && (dv.sourceTimestamp?.getTime() ?? 0) > after) return;
    if (Date.now() > until) throw new Error(`${id} not Good and fresh: ${dv.toString()}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe.skipIf(!existsSync(cli))("a damaged database under the built gateway", () => {
  const cases = [
    ...DAMAGES.map((how) => ({ db: "history.db", kind: "history", how })),
    ...DAMAGES.map((how) => ({ db: "northbound.db", kind: "northbound", how })),
  ] as const;

  it.each(cases)("$db, $how: served within 15 s, moved aside as it was, named in the log, /metrics and the page, SIGTERM 0", async ({ db, kind, how }) => {
    const dir = join(root, `${kind}-${how.replaceAll(" ", "-")}`);
    const data = join(dir, "data");
    mkdirSync(data, { recursive: true });
    const file = join(data, db);
    if (kind === "history") historyDb(file);
    else northboundDb(file);
    damage(file, how);
    const damagedBytes = readFileSync(file);
    writeFileSync(join(dir, "devices.yaml"), DEVICES);
    const config = join(dir, "gateway.yaml");
    writeFileSync(
      config,
      [
        "server:\n  host: 127.0.0.1\n  port: 0",
        "dataDir: ./data\ndevices: ./devices.yaml",
        "security:\n  securityPolicies: [None]",
        "history:\n  flushInterval: 100ms",
        "web:\n  enabled: true\n  tls: false\n  host: 127.0.0.1\n  port: 0",
        // A broker nobody listens at (loopback): the edge node stores every change.
        kind === "northbound" ? "northbound:\n  sparkplug:\n    broker: mqtt://127.0.0.1:1\n    groupId: plant1\n    edgeNodeId: gw1\n    retryBackoff: 1s\n    maxBackoff: 1s" : "",
        "",
      ].join("\n"),
    );

    const started = Date.now();
    const deadline = started + 15_000;
    const gw = await run(config);
    const session = gw.session;
    try {
      await goodValue(session, "ns=1;s=sim.ramp", started, deadline);
      await goodValue(session, "ns=1;s=sim.level", started, deadline);

      // Beside, under its new name, byte for byte.
      const moved = (await gw.waitFor(new RegExp(`moved aside to (${data.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&")}/${db.replace(".", "\\.")}\\.damaged-\\d{8}T\\d{6}Z)`), "moved-aside line"))[1]!;
      expect(readdirSync(data).filter((f) => f.startsWith(`${db}.damaged-`) && !f.endsWith("-wal") && !f.endsWith("-shm"))).toEqual([moved.slice(data.length + 1)]);
      expect(sha256(readFileSync(moved))).toBe(sha256(damagedBytes));
      const line = gw.output().split("\n").find((l) => l.includes(`moved aside to ${moved}`))!;
      expect(line).toMatch(/^fieldgate: error: /);
      expect(line).toContain(`${file} is damaged (`);
      expect(line).toContain(`sqlite3 ${moved} .recover`);
      if (kind === "northbound") {
        const lost = /lost with it: (\d+|an unknown number of) stored change\(s\) not yet replayed/.exec(line);
        expect(lost).not.toBeNull();
        // What the damaged store held is counted as dropped; the new store takes the changes the broker does not.
        // node-opcua gives a UInt64 as [high, low].
        const counter = async (name: string) => {
          const v = (await session.read({ nodeId: `ns=1;s=Northbound/${name}`, attributeId: AttributeIds.Value })).value.value as [number, number] | null;
          return v === null ? 0 : v[0] * 2 ** 32 + v[1];
        };
        for (let i = 0; (await counter("Buffered")) === 0; i++) {
          expect(i).toBeLessThan(300);
          await new Promise((r) => setTimeout(r, 50));
        }
        expect(await counter("Dropped")).toBeGreaterThanOrEqual(/^\d+$/.test(lost![1]!) ? Number(lost![1]) : 0);
      }

      const web = (await gw.waitFor(/status page on (http:\/\/\S+)/, "status page line"))[1]!;
      const metrics = await (await fetch(new URL("/metrics", web))).text();
      expect(metrics).toContain(`fieldgate_damaged_files_total{kind="${kind}"} 1\n`);
      expect(metrics).toContain(`fieldgate_part_up{part="${kind}"} 1\n`);
      const state = (await (await fetch(new URL("/api/state", web))).json()) as { gateway: { attention: string[] } };
      expect(state.gateway.attention.some((a) => a.includes(`moved aside to ${moved}`))).toBe(true);

      if (kind === "history") {
        // The fresh database takes samples and gives them back.
        const nodeId = "ns=1;s=sim.ramp";
        let values = 0;
        for (let i = 0; i < 100 && values === 0; i++) {
          const r = await session.readHistoryValue(nodeId, new Date(started - 1000), new Date(Date.now() + 1000));
          expect(r.statusCode.value === 0 || r.statusCode.name === "GoodNoData").toBe(true);
          values = (r.historyData as HistoryData | null)?.dataValues?.length ?? 0;
          if (values === 0) await new Promise((r) => setTimeout(r, 100));
        }
        expect(values).toBeGreaterThan(0);
      }
    } finally {
      expect(await gw.stop()).toBe(0);
    }
    if (kind === "northbound") {
      // The new store kept what the broker did not take.
      const fresh = new Database(file, { readonly: true });
      const rows = (fresh.prepare("SELECT count(*) AS n FROM buffer").get() as { n: number }).n;
      fresh.close();
      expect(rows).toBeGreaterThan(0);
    }
  }, 60_000);
});

describe.skipIf(!existsSync(cli))("a database that cannot be opened and is not damaged", () => {
  it("history of a newer schema, a northbound store that is a folder: left where they are, logged, shown, the rest runs, SIGTERM 0", async () => {
    const dir = join(root, "not-damaged");
    const data = join(dir, "data");
    mkdirSync(join(data, "store-is-a-folder"), { recursive: true });
    // A history written by a build of a schema this one cannot read (store.ts checkSchema).
    const history = join(data, "history.db");
    const db = new Database(history);
    db.pragma(`user_version = ${(900 << 16) | 900}`);
    db.close();
    const before = sha256(readFileSync(history));
    writeFileSync(join(dir, "devices.yaml"), DEVICES);
    const config = join(dir, "gateway.yaml");
    writeFileSync(
      config,
      "server:\n  host: 127.0.0.1\n  port: 0\ndataDir: ./data\ndevices: ./devices.yaml\nsecurity:\n  securityPolicies: [None]\n" +
        "web:\n  enabled: true\n  tls: false\n  host: 127.0.0.1\n  port: 0\n" +
        "northbound:\n  sparkplug:\n    broker: mqtt://127.0.0.1:1\n    groupId: plant1\n    edgeNodeId: gw1\n    storeAndForward:\n      database: ./data/store-is-a-folder\n",
    );
    const started = Date.now();
    const gw = await run(config);
    const session = gw.session;
    try {
      await goodValue(session, "ns=1;s=sim.ramp", started, started + 15_000);
      await gw.waitFor(/northbound: not started: store-and-forward database \S+store-is-a-folder could not be opened/, "northbound line");
      expect(gw.output()).toContain(`history database ${history} could not be opened (history database ${history} has schema 900`);
      // HistoryRead says why instead of serving nothing: the whole request is answered so.
      await expect(session.readHistoryValue("ns=1;s=sim.ramp", new Date(started - 1000), new Date())).rejects.toThrow(/BadResourceUnavailable/);
      const web = (await gw.waitFor(/status page on (http:\/\/\S+)/, "status page line"))[1]!;
      const metrics = await (await fetch(new URL("/metrics", web))).text();
      expect(metrics).toContain('fieldgate_part_up{part="history"} 0\n');
      expect(metrics).toContain('fieldgate_part_up{part="northbound"} 0\n');
      expect(metrics).toContain('fieldgate_damaged_files_total{kind="history"} 0\n');
      const state = (await (await fetch(new URL("/api/state", web))).json()) as { gateway: { attention: string[] } };
      expect(state.gateway.attention).toHaveLength(2);
    } finally {
      expect(await gw.stop()).toBe(0);
    }
    // Nothing was moved or written.
    expect(sha256(readFileSync(history))).toBe(before);
    expect(readdirSync(data).filter((f) => f.includes(".damaged-"))).toEqual([]);
  }, 60_000);
});
