// The load side of the read scenario: opens the connections, checks the nodes read once with
// the full decoder, fills every pipeline, warms up, then measures one window. It runs in the
// load process (bench/harness/load-worker.ts) or, for tests, in the caller's process.
// It also samples the server's /proc figures at the window edges, from the same clock as
// the request counts, so that CPU per request divides like by like.
import { TimestampsToReturn } from "../../src/ua/generated/enums.js";
import { UaClientChannel } from "../client/channel.js";
import { Histogram, type HistogramSnapshot } from "../client/histogram.js";
import { DEFAULT_READ_NODE, checkReadable, resolveNodes, valueReadOf } from "../client/nodes.js";
import { ReadPipeline } from "../client/read-pipeline.js";
import { markWindowEdge } from "../harness/window.js";
import { cpuTimeMicros, memoryOf } from "../harness/proc.js";

export type TimestampsName = "source" | "server" | "both" | "neither";

const TIMESTAMPS: Record<TimestampsName, TimestampsToReturn> = {
  source: TimestampsToReturn.Source,
  server: TimestampsToReturn.Server,
  both: TimestampsToReturn.Both,
  neither: TimestampsToReturn.Neither,
};

export interface ReadLoadParams {
  host: string;
  port: number;
  endpointUrl: string;
  connections: number;
  /** Requests in flight per connection. */
  outstanding: number;
  /** Values (ReadValueIds) per request, taken round robin from `nodes`. */
  values: number;
  /** NodeId texts (`i=2258`, `ns=2;s=...`, `nsu=<uri>;s=...`); default Server_ServerStatus_CurrentTime. */
  nodes?: string[];
  timestampsToReturn?: TimestampsName;
  warmupSeconds: number;
  durationSeconds: number;
  /** The server process, for its CPU time and RSS over the window; omitted when not local. */
  serverPid?: number;
  /** The server prints a diagnostics line on SIGUSR2: signal it at both edges of the window. */
  serverDiagnostics?: boolean;
  drainTimeoutMs?: number;
  /** Decode every Nth response in full (default 1024, 0 never). */
  verifyEvery?: number;
}

export interface ServerWindowFigures {
  /** utime + stime of the server over the window, µs. */
  cpuMicros: number;
  rssBytesAtEnd: number;
  peakRssBytes: number;
}

export interface ReadLoadResult {
  params: ReadLoadParams;
  windowSeconds: number;
  /** Responses within the window. */
  requests: number;
  /** Errors within the window (non-Good service result, ServiceFault, bad result count, ...). */
  errors: number;
  /** Errors over the whole run, warm-up and drain included. */
  errorsTotal: number;
  errorKinds: Record<string, number>;
  /** Channels that died during the run. */
  channelFaults: number;
  /** Requests still unanswered when the drain gave up. */
  lostInFlight: number;
  /** Responses decoded in full and checked result by result (warm-up included). */
  verifiedResponses: number;
  latencyMicros: HistogramSnapshot;
  requestBytes: number;
  server: ServerWindowFigures | null;
  /** CPU time of the load process over the window, µs: near the window length means the client was the limit. */
  loadCpuMicros: number;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

async function openChannel(params: ReadLoadParams, index: number): Promise<UaClientChannel> {
  const channel = await UaClientChannel.open({ host: params.host, port: params.port, endpointUrl: params.endpointUrl });
  try {
    await channel.openSecureChannel();
    const needMs = (params.warmupSeconds + params.durationSeconds) * 1000;
    if (channel.revisedLifetimeMs > 0 && channel.revisedLifetimeMs < needMs) {
      // Not an error: the channel renews its token. Worth knowing when figures look odd.
      process.stderr.write(`bench: token lifetime ${channel.revisedLifetimeMs} ms is shorter than the run; renewing under load\n`);
    }
    await channel.createAndActivateSession(`bench-read-${index}`);
    return channel;
  } catch (err) {
    channel.destroy();
    throw err;
  }
}

export async function runReadLoad(params: ReadLoadParams): Promise<ReadLoadResult> {
  if (!(params.connections >= 1 && params.outstanding >= 1 && params.values >= 1)) {
    throw new RangeError("connections, outstanding and values must be at least 1");
  }
  const opened = await Promise.allSettled(Array.from({ length: params.connections }, (_, i) => openChannel(params, i)));
  const channels: UaClientChannel[] = [];
  let failure: unknown;
  for (const r of opened) {
    if (r.status === "fulfilled") channels.push(r.value);
    else failure ??= r.reason;
  }
  if (failure !== undefined) {
    for (const c of channels) c.destroy();
    throw failure;
  }
  try {
    const texts = params.nodes?.length ? params.nodes : [DEFAULT_READ_NODE];
    const nodeIds = await resolveNodes(channels[0], texts);
    const nodesToRead = Array.from({ length: params.values }, (_, i) => valueReadOf(nodeIds[i % nodeIds.length]));
    await checkReadable(channels[0], nodesToRead, texts);
    const timestampsToReturn = TIMESTAMPS[params.timestampsToReturn ?? "both"];
    const pipelines = channels.map((c) => new ReadPipeline(c, { nodesToRead, outstanding: params.outstanding, timestampsToReturn, verifyEvery: params.verifyEvery }));
    for (const p of pipelines) p.start();

    await sleep(params.warmupSeconds * 1000);

    for (const p of pipelines) {
      p.resetWindow();
      p.recording = true;
    }
    const t0 = performance.now();
    const serverCpu0 = params.serverPid === undefined ? NaN : cpuTimeMicros(params.serverPid);
    const loadCpu0 = process.cpuUsage();
    markWindowEdge(params.serverPid, params.serverDiagnostics);

    await sleep(params.durationSeconds * 1000);

    for (const p of pipelines) p.recording = false;
    const t1 = performance.now();
    const serverCpu1 = params.serverPid === undefined ? NaN : cpuTimeMicros(params.serverPid);
    const loadCpu = process.cpuUsage(loadCpu0);
    markWindowEdge(params.serverPid, params.serverDiagnostics);
    const memory = params.serverPid === undefined ? null : memoryOf(params.serverPid);

    const drainMs = params.drainTimeoutMs ?? 5000;
    const lost = await Promise.all(pipelines.map((p) => p.stop(drainMs)));

    const latency = new Histogram();
    const errorKinds: Record<string, number> = {};
    let requests = 0;
    let errors = 0;
    let errorsTotal = 0;
    let channelFaults = 0;
    let verifiedResponses = 0;
    for (const p of pipelines) {
      verifiedResponses += p.verified;
      latency.add(p.latency);
      requests += p.completed;
      errors += p.errors;
      errorsTotal += p.errorsTotal;
      if (p.channelError !== null) channelFaults++;
      for (const [kind, n] of p.errorKinds) errorKinds[kind] = (errorKinds[kind] ?? 0) + n;
    }
    return {
      params,
      windowSeconds: (t1 - t0) / 1000,
      requests,
      errors,
      errorsTotal,
      errorKinds,
      channelFaults,
      lostInFlight: lost.reduce((a, b) => a + b, 0),
      verifiedResponses,
      latencyMicros: latency.snapshot(),
      requestBytes: pipelines[0].requestSize,
      server:
        memory === null
          ? null
          : { cpuMicros: serverCpu1 - serverCpu0, rssBytesAtEnd: memory.rss, peakRssBytes: memory.peakRss },
      loadCpuMicros: loadCpu.user + loadCpu.system,
    };
  } finally {
    await Promise.all(
      channels.map((c) =>
        Promise.race([c.close(), sleep(2000)]).finally(() => {
          if (!c.closed) c.destroy();
        }),
      ),
    );
  }
}
