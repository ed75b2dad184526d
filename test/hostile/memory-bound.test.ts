// The memory bound under a chunk flood, measured where it matters: on a gateway process of its
// own (the built CLI, started as the service starts it), its RSS read from /proc, with a small
// budget so that it runs fast. 50 connections send intermediate chunks without a final one, 2 MiB
// each: 100 MB, 25 times transport.memoryLimit. Each must be refused with exactly
// BadTcpNotEnoughResources, long before the incomplete-message deadline (a minute here, so a
// refusal seen is the budget's); the gateway's RSS may rise by the budget and a margin, not by
// what was sent; and a healthy session reads ServerStatus while the flood runs.
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { createInterface } from "node:readline";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GATEWAY_ENV, GATEWAY_NODE_FLAGS } from "../../src/runtime-flags.js";
import { StatusCodes } from "../../src/ua/generated/status-codes.js";
import { ChannelClient, msg } from "../transport/raw-client.js";
import { Healthy } from "./helpers.js";

const cli = resolve(__dirname, "../../dist/src/cli.js");
const MiB = 1 << 20;
const FLOODERS = 50;
const PER_FLOODER = 2 * MiB;
/**
 * What the gateway's RSS may grow by: the 4 MiB budget and socket reads in flight (each freed
 * once handled), the heap's share of 50 new channels. Measured here: 6-8 MB; 100 MB when nothing
 * bounds the bytes held for unfinished messages.
 */
const RSS_MARGIN = 16 * MiB;

let child: ChildProcess | undefined;
let dir = "";
let port = 0;

function rssOf(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "latin1"));
  return m ? Number(m[1]) * 1024 : NaN;
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

describe.skipIf(!existsSync(cli))("the memory bound on a gateway process of its own", () => {
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "fieldgate-memory-"));
    const config = join(dir, "gateway.yaml");
    writeFileSync(
      config,
      [
        "server:",
        "  host: 127.0.0.1",
        "  port: 0",
        "dataDir: ./data",
        "transport:",
        "  memoryLimit: 4MiB",
        "  maxPendingBytesPerChannel: 1MiB",
        "  incompleteMessageTimeout: 60s",
        "  helloTimeout: 60s",
        "",
      ].join("\n"),
    );
    // As the service runs it (src/cli.ts's shebang).
    child = spawn(process.execPath, [...GATEWAY_NODE_FLAGS, cli, "run", "--config", config], {
      env: { ...process.env, ...GATEWAY_ENV },
      stdio: ["ignore", "pipe", "inherit"],
    });
    port = await new Promise<number>((resolvePort, reject) => {
      const t = setTimeout(() => reject(new Error("the gateway did not listen within 30 s")), 30_000);
      createInterface({ input: child!.stdout! }).on("line", (line) => {
        const m = /listening on opc\.tcp:\/\/[^:]+:(\d+)/.exec(line);
        if (m) {
          clearTimeout(t);
          resolvePort(Number(m[1]));
        }
      });
      child!.once("exit", (code) => reject(new Error(`the gateway exited (${code})`)));
    });
  }, 40_000);

  afterAll(() => {
    if (child && child.exitCode === null) child.kill("SIGKILL");
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("a chunk flood of 25 times memoryLimit: every connection refused with BadTcpNotEnoughResources, RSS within the bound, a healthy session served throughout", async () => {
    const pid = child!.pid!;
    const healthy = await Healthy.open(port);
    await healthy.check();
    const samples: number[] = [];
    for (let i = 0; i < 10; i++) {
      samples.push(rssOf(pid));
      await sleep(50);
    }
    const baseline = samples.sort((a, b) => a - b)[samples.length >> 1];

    const flooders = await Promise.all(Array.from({ length: FLOODERS }, () => ChannelClient.open(port)));
    let peak = baseline;
    let attacking = true;
    const sampler = (async () => {
      while (attacking) {
        peak = Math.max(peak, rssOf(pid));
        await sleep(20);
      }
    })();
    // The healthy session, while the flood runs: each read answered, Good.
    let served = 0;
    const prober = (async () => {
      while (attacking) {
        await healthy.check();
        served++;
        await sleep(20);
      }
    })();
    const chunk = Math.min(flooders[0].ack.receiveBufferSize, 65536);
    const body = Buffer.alloc(chunk - 24, 0x41);
    const flood = flooders.map(async (c) => {
      const id = c.requestId++;
      for (let sent = 0; sent < PER_FLOODER && !c.raw.closed; sent += chunk) await c.raw.write(msg(c.next(id, "C"), body));
      return c.raw.expectErr(20_000);
    });
    const codes = await Promise.all(flood);
    // Let the sampler and the prober see the gateway right after the refusals too.
    await sleep(200);
    attacking = false;
    await Promise.all([sampler, prober]);
    for (const c of flooders) c.raw.destroy();

    expect(new Set(codes)).toEqual(new Set([StatusCodes.BadTcpNotEnoughResources]));
    expect(served).toBeGreaterThan(0);
    await healthy.check();
    expect(peak - baseline).toBeLessThan(RSS_MARGIN);
    healthy.close();
  }, 60_000);
});
