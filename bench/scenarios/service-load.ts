// The load side of the write and browse scenarios, with the request given as data (it crosses the
// IPC channel to the load process) and built into a ServiceShape there. Also the parts every
// windowed pipeline load shares (read-load.ts too): sessions, the measurement window, closing.
import type { NodeId } from "../../src/ua/builtins.js";
import { UaClientChannel } from "../client/channel.js";
import { Histogram } from "../client/histogram.js";
import { resolveNodes } from "../client/nodes.js";
import { ServicePipeline, type ServiceShape } from "../client/service-pipeline.js";
import { browseShape, writeShape } from "../client/shapes.js";
import type { WindowLoadResult } from "../harness/case.js";
import { cpuTimeMicros, memoryOf } from "../harness/proc.js";
import { markWindowEdge } from "../harness/window.js";

export type ServiceRequestSpec =
  /** Write `values` Int32 values to `nodes`, round robin (`changing`: every request new values). */
  | { service: "write"; nodes: string[]; values: number; changing?: boolean }
  /** Browse the forward hierarchical references of each of `nodes`. */
  | { service: "browse"; nodes: string[] };

export interface ServiceLoadParams extends SessionTarget, WindowParams {
  connections: number;
  outstanding: number;
  request: ServiceRequestSpec;
  verifyEvery?: number;
}

export interface ServiceLoadResult extends WindowLoadResult {
  params: ServiceLoadParams;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

function shapeOf(spec: ServiceRequestSpec, nodes: NodeId[]): ServiceShape {
  return spec.service === "write" ? writeShape(nodes, spec.values, spec.changing === true) : browseShape(nodes);
}

/** Where the sessions of a load go. */
export interface SessionTarget {
  host: string;
  port: number;
  endpointUrl: string;
}

/**
 * A session on a new channel. With `runMs`, a token lifetime shorter than the run is said on
 * stderr: not an error (the channel renews its token), but worth knowing when figures look odd.
 */
export async function openSession(params: SessionTarget, name: string, runMs?: number): Promise<UaClientChannel> {
  const channel = await UaClientChannel.open({ host: params.host, port: params.port, endpointUrl: params.endpointUrl });
  try {
    await channel.openSecureChannel();
    if (runMs !== undefined && channel.revisedLifetimeMs > 0 && channel.revisedLifetimeMs < runMs) {
      process.stderr.write(`bench: token lifetime ${channel.revisedLifetimeMs} ms is shorter than the run; renewing under load\n`);
    }
    await channel.createAndActivateSession(name);
    return channel;
  } catch (err) {
    channel.destroy();
    throw err;
  }
}

/** `count` sessions opened at once, named `${prefix}-${i}`; all or none (the first failure is thrown). */
export async function openSessions(params: SessionTarget, count: number, prefix: string, runMs?: number): Promise<UaClientChannel[]> {
  const opened = await Promise.allSettled(Array.from({ length: count }, (_, i) => openSession(params, `${prefix}-${i}`, runMs)));
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
  return channels;
}

export async function closeAll(channels: readonly UaClientChannel[]): Promise<void> {
  await Promise.all(
    channels.map((c) =>
      Promise.race([c.close(), sleep(2000)]).finally(() => {
        if (!c.closed) c.destroy();
      }),
    ),
  );
}

/** How long a windowed load runs, and the server it samples at the window edges. */
export interface WindowParams {
  warmupSeconds: number;
  durationSeconds: number;
  /** The server process, for its CPU time and RSS over the window; omitted when not local. */
  serverPid?: number;
  /** The server prints a diagnostics line on SIGUSR2: signal it at both edges of the window. */
  serverDiagnostics?: boolean;
  drainTimeoutMs?: number;
}

/**
 * Fills every pipeline, warms up, measures one window, drains, and adds the pipelines' figures
 * up. The server's /proc figures are sampled at the window edges, from the same clock as the
 * request counts, so that CPU per request divides like by like.
 */
export async function measureWindow(pipelines: readonly ServicePipeline[], params: WindowParams): Promise<WindowLoadResult> {
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
  const lost = await Promise.all(pipelines.map((p) => p.stop(params.drainTimeoutMs ?? 5000)));

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
    server: memory === null ? null : { cpuMicros: serverCpu1 - serverCpu0, rssBytesAtEnd: memory.rss, peakRssBytes: memory.peakRss },
    loadCpuMicros: loadCpu.user + loadCpu.system,
  };
}

export async function runServiceLoad(params: ServiceLoadParams): Promise<ServiceLoadResult> {
  if (!(params.connections >= 1 && params.outstanding >= 1)) throw new RangeError("connections and outstanding must be at least 1");
  const channels = await openSessions(params, params.connections, `bench-${params.request.service}`);
  try {
    const nodeIds = await resolveNodes(channels[0], params.request.nodes);
    const shape = shapeOf(params.request, nodeIds);
    const pipelines = channels.map((c) => new ServicePipeline(c, { shape, outstanding: params.outstanding, verifyEvery: params.verifyEvery }));
    return { params, ...(await measureWindow(pipelines, params)) };
  } finally {
    await closeAll(channels);
  }
}
