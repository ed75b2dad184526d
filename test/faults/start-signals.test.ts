// Signals from the first instruction on (src/signals.ts, server/gateway-run.ts), on the built
// gateway (`fieldgate run` from dist/). A signal is sent at three points of the start:
// - right after spawn: the moment the process has its SIGHUP listener (SigCgt in
//   /proc/<pid>/status, src/cli.ts's first statement), before it has loaded the gateway;
// - at "listening on opc.tcp", while the status page is still being started (its certificate
//   made on this first start);
// - after "status page on", when the gateway is up.
// SIGTERM and SIGINT end the gateway with status 0 wherever they land; a SIGHUP that came before
// the gateway was up is applied once it is: the device map written after the start began is the
// one served, and the log says the reload was the queued one.
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { AttributeIds, OPCUAClient } from "node-opcua-client";
import { afterAll, describe, expect, it } from "vitest";
import { waitFor } from "../helpers/child-output.js";

const cli = resolve(__dirname, "../../dist/src/cli.js");
const root = mkdtempSync(join(tmpdir(), "fieldgate-signals-"));
const children: ChildProcess[] = [];
afterAll(() => {
  // A test that failed half-way leaves its gateway running: ended here.
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill("SIGKILL");
  rmSync(root, { recursive: true, force: true });
});

const map = (tags: string[]) =>
  `devices:\n  - name: sim\n    driver: simulator\n    rate: 100ms\n    tags:\n${tags.map((t, i) => `      - { name: ${t}, address: "input:${i}" }\n`).join("")}`;

interface Run {
  readonly child: ChildProcess;
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  readonly devices: string;
  output(): string;
  waitFor(pattern: RegExp, what: string): Promise<RegExpExecArray>;
}

let n = 0;

function start(): Run {
  const dir = join(root, String(++n));
  mkdirSync(dir);
  const devices = join(dir, "devices.yaml");
  writeFileSync(devices, map(["a"]));
  const config = join(dir, "gateway.yaml");
  // The page over TLS with no signing policy: its first start makes a certificate, a start of
  // the page long enough for a signal to land in it.
  writeFileSync(config, "server:\n  host: 127.0.0.1\n  port: 0\ndataDir: ./data\ndevices: ./devices.yaml\nsecurity:\n  securityPolicies: [None]\nweb:\n  enabled: true\n  tls: true\n  host: 127.0.0.1\n  port: 0\n");
  const child = spawn(process.execPath, [cli, "run", "--config", config], { stdio: ["ignore", "pipe", "pipe"] });
  children.push(child);
  let out = "";
  child.stdout!.on("data", (d: Buffer) => (out += d.toString()));
  child.stderr!.on("data", (d: Buffer) => (out += d.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((r) => child.once("exit", (code, signal) => r({ code, signal })));
  const output = () => out;
  return { child, exited, devices, output, waitFor: (pattern, what) => waitFor(child, output, pattern, what) };
}

/** Waits until the process catches SIGHUP (bit 0 of SigCgt): src/cli.ts has held the signals. */
async function signalsHeld(child: ChildProcess): Promise<void> {
  const end = Date.now() + 20_000;
  for (;;) {
    let caught = 0n;
    try {
      const m = /^SigCgt:\s*([0-9a-f]+)$/m.exec(readFileSync(`/proc/${child.pid}/status`, "latin1"));
      caught = m ? BigInt(`0x${m[1]}`) : 0n;
    } catch {
      // Not there yet, or gone.
    }
    if ((caught & 1n) !== 0n) return;
    if (child.exitCode !== null || child.signalCode !== null || Date.now() > end) throw new Error("the gateway never caught SIGHUP");
    await new Promise((r) => setImmediate(r));
  }
}

/** tag `name` of the gateway at `port` reads Good. */
async function readsGood(port: string, name: string): Promise<void> {
  const client = OPCUAClient.create({ endpointMustExist: false, connectionStrategy: { maxRetry: 0 } });
  await client.connect(`opc.tcp://127.0.0.1:${port}`);
  try {
    const session = await client.createSession();
    try {
      for (let i = 0; ; i++) {
        const dv = await session.read({ nodeId: `ns=1;s=sim.${name}`, attributeId: AttributeIds.Value });
        if (dv.statusCode.value === 0) return;
        if (i > 200) throw new Error(`sim.${name}: ${dv.statusCode.name}`);
        await new Promise((r) => setTimeout(r, 50));
      }
    } finally {
      await session.close();
    }
  } finally {
    await client.disconnect();
  }
}

const hasProc = existsSync("/proc/self/status");

describe.skipIf(!existsSync(cli) || !hasProc)("signals during the start of the built gateway", () => {
  it.each(["SIGTERM", "SIGINT"] as const)("%s right after spawn: a clean stop, status 0", async (signal) => {
    const run = start();
    await signalsHeld(run.child);
    run.child.kill(signal);
    expect(await run.exited).toEqual({ code: 0, signal: null });
    expect(run.output()).toMatch(new RegExp(`${signal}(: stopped before anything started|, closing channels and sessions)`));
    // It came before the gateway was up: nothing more was started once it was seen.
    expect(run.output()).not.toContain("status page on");
  }, 30_000);

  it.each(["SIGTERM", "SIGINT"] as const)("%s at 'listening on opc.tcp', the page still starting: a clean stop, status 0", async (signal) => {
    const run = start();
    await run.waitFor(/listening on opc\.tcp/, "listening line");
    run.child.kill(signal);
    expect(await run.exited).toEqual({ code: 0, signal: null });
    expect(run.output()).toContain(`${signal}, closing channels and sessions`);
    expect(run.output()).toMatch(/fieldgate: stopped\n/);
  }, 30_000);

  it("SIGTERM once up: status 0", async () => {
    const run = start();
    await run.waitFor(/status page on/, "status page line");
    run.child.kill("SIGTERM");
    expect(await run.exited).toEqual({ code: 0, signal: null });
  }, 30_000);

  it("SIGHUP right after spawn is kept and applied once the gateway is up: a reload then", async () => {
    const run = start();
    await signalsHeld(run.child);
    writeFileSync(run.devices, map(["a", "b"]));
    run.child.kill("SIGHUP");
    const port = (await run.waitFor(/listening on opc\.tcp:\/\/[^:]+:(\d+)/, "listening line"))[1]!;
    await run.waitFor(/SIGHUP during the start: reloading the gateway config and the device map now that it is up/, "queued reload");
    // After the page: the reload waited for the whole start.
    const out = run.output();
    expect(out.indexOf("status page on")).toBeGreaterThan(-1);
    expect(out.indexOf("SIGHUP during the start")).toBeGreaterThan(out.indexOf("status page on"));
    await run.waitFor(/device map: .*unchanged\n[\s\S]*device map: .*unchanged/, "the reload's device map line");
    await readsGood(port, "b");
    expect(run.child.exitCode).toBeNull();
    run.child.kill("SIGTERM");
    expect(await run.exited).toEqual({ code: 0, signal: null });
  }, 40_000);

  it("SIGHUP at 'listening on opc.tcp', the page still starting: the process lives, the new map is served", async () => {
    const run = start();
    const port = (await run.waitFor(/listening on opc\.tcp:\/\/[^:]+:(\d+)/, "listening line"))[1]!;
    writeFileSync(run.devices, map(["a", "b"]));
    run.child.kill("SIGHUP");
    // Queued when the page was still starting, at once when it was up already.
    await run.waitFor(/SIGHUP( during the start)?: reloading the gateway config and the device map/, "reload line");
    await run.waitFor(/device map: changed sim/, "the reload's change");
    await readsGood(port, "b");
    run.child.kill("SIGTERM");
    expect(await run.exited).toEqual({ code: 0, signal: null });
  }, 40_000);
});
