// The load side of the connect scenario: cycles of opening `sessions` sessions (each its own
// connection: Hello, OpenSecureChannel, CreateSession, ActivateSession), `parallel` at a time,
// holding them all while the server's RSS is read, then closing them (CloseSession,
// CloseSecureChannel). Repeats until the window ends. A "request" is one session's whole
// life; its latency is the time from connect to the ActivateSession response.
import type { UaClientChannel } from "../client/channel.js";
import { Histogram } from "../client/histogram.js";
import type { WindowLoadResult } from "../harness/case.js";
import { cpuTimeMicros, memoryOf } from "../harness/proc.js";
import { markWindowEdge } from "../harness/window.js";
import { closeAll, openSession } from "./service-load.js";

export interface ConnectLoadParams {
  host: string;
  port: number;
  endpointUrl: string;
  /** Sessions opened and held at once in each cycle. */
  sessions: number;
  /** Opens under way at once. */
  parallel: number;
  warmupSeconds: number;
  durationSeconds: number;
  serverPid?: number;
  serverDiagnostics?: boolean;
}

export interface ConnectLoadResult extends WindowLoadResult {
  params: ConnectLoadParams;
  cycles: number;
  /** Largest server RSS with all sessions of a cycle held, bytes. */
  heldRssBytes: number;
}

function describe(err: unknown): string {
  const e = err as { code?: string; message?: string };
  // Strip per-connection details (ports) so that equal failures count as one kind.
  return `open failed: ${(e.message ?? String(err)).replace(/\d+\.\d+\.\d+\.\d+:\d+/g, "<addr>")}`;
}

export async function runConnectLoad(params: ConnectLoadParams): Promise<ConnectLoadResult> {
  if (!(params.sessions >= 1 && params.parallel >= 1)) throw new RangeError("sessions and parallel must be at least 1");
  const latency = new Histogram();
  const errorKinds: Record<string, number> = {};
  let recording = false;
  let requests = 0;
  let errors = 0;
  let errorsTotal = 0;
  let channelFaults = 0;
  let heldRss = NaN;
  let cycles = 0;
  const fail = (kind: string): void => {
    errorsTotal++;
    if (recording) errors++;
    errorKinds[kind] = (errorKinds[kind] ?? 0) + 1;
  };

  const cycle = async (): Promise<void> => {
    const held: UaClientChannel[] = [];
    let next = 0;
    const opener = async (): Promise<void> => {
      while (next < params.sessions) {
        next++;
        const t = performance.now();
        try {
          const ch = await openSession(params, `bench-connect-${next}`);
          held.push(ch);
          if (recording) {
            requests++;
            latency.record((performance.now() - t) * 1000);
          }
        } catch (err) {
          fail(describe(err));
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(params.parallel, params.sessions) }, opener));
    if (recording && params.serverPid !== undefined) {
      const rss = memoryOf(params.serverPid).rss;
      if (!(rss <= heldRss)) heldRss = rss;
    }
    // A held session whose channel died (evicted, timed out) is a fault of the server's.
    for (const ch of held) if (ch.closed) channelFaults++;
    await closeAll(held);
    cycles++;
  };

  const warmEnd = performance.now() + params.warmupSeconds * 1000;
  do await cycle();
  while (performance.now() < warmEnd);

  recording = true;
  const t0 = performance.now();
  const serverCpu0 = params.serverPid === undefined ? NaN : cpuTimeMicros(params.serverPid);
  const loadCpu0 = process.cpuUsage();
  markWindowEdge(params.serverPid, params.serverDiagnostics);
  const end = t0 + params.durationSeconds * 1000;
  do await cycle();
  while (performance.now() < end);
  recording = false;
  const t1 = performance.now();
  const serverCpu1 = params.serverPid === undefined ? NaN : cpuTimeMicros(params.serverPid);
  const loadCpu = process.cpuUsage(loadCpu0);
  markWindowEdge(params.serverPid, params.serverDiagnostics);
  const memory = params.serverPid === undefined ? null : memoryOf(params.serverPid);
  return {
    params,
    cycles,
    heldRssBytes: heldRss,
    windowSeconds: (t1 - t0) / 1000,
    requests,
    errors,
    errorsTotal,
    errorKinds,
    channelFaults,
    lostInFlight: 0,
    verifiedResponses: 0,
    latencyMicros: latency.snapshot(),
    requestBytes: 0,
    server: memory === null ? null : { cpuMicros: serverCpu1 - serverCpu0, rssBytesAtEnd: heldRss, peakRssBytes: memory.peakRss },
    loadCpuMicros: loadCpu.user + loadCpu.system,
  };
}
