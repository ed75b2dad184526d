// The memory bound under a chunk flood, measured where it matters: on a gateway process of its
// own (the built CLI, started as the service starts it), its RSS read from /proc, with a small
// budget so that it runs fast. 50 connections send intermediate chunks without a final one, 2 MiB
// each: 100 MB, 25 times transport.memoryLimit. Each must be refused with exactly
// BadTcpNotEnoughResources, long before the incomplete-message deadline (a minute here, so a
// refusal seen is the budget's); the gateway's RSS may rise by the budget and a margin, not by
// what was sent; and a healthy session reads ServerStatus while the flood runs. Then slow readers:
// sessions that send Reads of 10,000 nodes and never read their socket; the gateway does the
// Reads its sockets take (tens of megabytes of answers), and its RSS may rise by the same bound.
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { createInterface } from "node:readline";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CLI as cli, missingBuild, requirePeers, skipWithout } from "../helpers/built.js";
import { GATEWAY_ENV, GATEWAY_NODE_FLAGS } from "../../src/runtime-flags.js";
import { StatusCodes } from "../../src/ua/generated/status-codes.js";
import { BinaryWriter } from "../../src/ua/binary-writer.js";
import { encodeNodeId } from "../../src/ua/builtin-codec.js";
import { numericNodeId } from "../../src/ua/builtins.js";
import { TimestampsToReturn } from "../../src/ua/generated/enums.js";
import { ObjectIds, VariableIds } from "../../src/ua/generated/node-ids.js";
import { encodeReadRequest } from "../../src/ua/generated/types.js";
import { header, readValueId, ServiceClient } from "../server/service-client.js";
import { ChannelClient, msg } from "../transport/raw-client.js";
import { Healthy } from "./helpers.js";

const unbuilt = missingBuild("src/cli.js");
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

describe.skipIf(skipWithout(unbuilt))("the memory bound on a gateway process of its own", () => {
  beforeAll(() => requirePeers(unbuilt));
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

  it("slow readers sending Reads of 10,000 nodes and never reading: RSS within the bound, a healthy session served throughout", async () => {
    const pid = child!.pid!;
    const healthy = await Healthy.open(port);
    const baseline = await medianRss(pid);
    const readers = await Promise.all(Array.from({ length: SLOW_READERS }, () => slowReader(port)));
    let peak = baseline;
    let attacking = true;
    const sampler = (async () => {
      while (attacking) {
        peak = Math.max(peak, rssOf(pid));
        await sleep(20);
      }
    })();
    let served = 0;
    const prober = (async () => {
      while (attacking) {
        await healthy.check();
        served++;
        await sleep(20);
      }
    })();
    // Each writes Reads until the gateway stops reading it (its answers fill the sockets).
    const sent = await Promise.all(readers.map((r) => r.flood(READS_PER_READER)));
    await sleep(500);
    attacking = false;
    await Promise.all([sampler, prober]);
    for (const r of readers) r.client.close();

    // The gateway did the Reads (tens of megabytes of answers) before it stopped reading them.
    expect(sent.reduce((a, b) => a + b, 0)).toBeGreaterThanOrEqual(SLOW_READERS * 10);
    expect(served).toBeGreaterThan(0);
    await healthy.check();
    expect(peak - baseline).toBeLessThan(RSS_MARGIN);
    healthy.close();
  }, 60_000);
});

const SLOW_READERS = 10;
const READ_NODES = 10_000;
/** Reads each slow reader writes (~160 KB each): far more than the sockets take. */
const READS_PER_READER = 100;

async function medianRss(pid: number): Promise<number> {
  const samples: number[] = [];
  for (let i = 0; i < 10; i++) {
    samples.push(rssOf(pid));
    await sleep(50);
  }
  return samples.sort((a, b) => a - b)[samples.length >> 1];
}

/**
 * A session that pauses its socket and writes Reads of READ_NODES nodes (CurrentTime, timestamps
 * Both: ~260 KB of answer each) in chunks, until the socket takes no more.
 */
async function slowReader(gatewayPort: number): Promise<{ client: ServiceClient; flood(n: number): Promise<number> }> {
  const client = await ServiceClient.open(gatewayPort);
  await client.createSession();
  await client.activate();
  const w = new BinaryWriter(Buffer.alloc(READ_NODES * 16 + 256), 1 << 30);
  encodeNodeId(w, numericNodeId(ObjectIds.ReadRequest_Encoding_DefaultBinary));
  const node = readValueId(VariableIds.Server_ServerStatus_CurrentTime);
  encodeReadRequest(w, { requestHeader: header(client.token), maxAge: 0, timestampsToReturn: TimestampsToReturn.Both, nodesToRead: Array.from({ length: READ_NODES }, () => node) });
  const body = Buffer.from(w.view());
  const c = client.channel;
  const room = Math.min(c.ack.receiveBufferSize, 65536) - 24;
  c.raw.socket.pause();
  return {
    client,
    async flood(n: number): Promise<number> {
      for (let k = 0; k < n; k++) {
        const id = c.requestId++;
        let ok = true;
        for (let at = 0; at < body.length; at += room) {
          const last = at + room >= body.length;
          ok = c.raw.socket.write(msg(c.next(id, last ? "F" : "C"), body.subarray(at, Math.min(body.length, at + room))));
        }
        // Stopped reading: what is in the sockets is all the gateway gets.
        if (!ok && !(await drained(c.raw.socket, 1000))) return k + 1;
      }
      return n;
    },
  };
}

function drained(socket: import("node:net").Socket, ms: number): Promise<boolean> {
  return new Promise((resolve) => {
    const t = setTimeout(() => {
      socket.off("drain", done);
      resolve(false);
    }, ms);
    function done(): void {
      clearTimeout(t);
      resolve(true);
    }
    socket.once("drain", done);
  });
}
