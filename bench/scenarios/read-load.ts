// The load side of the read scenario: opens the connections, checks the nodes read once with
// the full decoder, then runs the Read shape through the pipelines for one window
// (service-load.ts: measureWindow). It runs in the load process (bench/harness/load-worker.ts)
// or, for tests, in the caller's process.
import { TimestampsToReturn } from "../../src/ua/generated/enums.js";
import { DEFAULT_READ_NODE, checkReadable, resolveNodes, valueReadOf } from "../client/nodes.js";
import { ServicePipeline } from "../client/service-pipeline.js";
import { readShape } from "../client/shapes.js";
import type { WindowLoadResult } from "../harness/case.js";
import { closeAll, measureWindow, openSessions, type SessionTarget, type WindowParams } from "./service-load.js";

export type TimestampsName = "source" | "server" | "both" | "neither";

const TIMESTAMPS: Record<TimestampsName, TimestampsToReturn> = {
  source: TimestampsToReturn.Source,
  server: TimestampsToReturn.Server,
  both: TimestampsToReturn.Both,
  neither: TimestampsToReturn.Neither,
};

export interface ReadLoadParams extends SessionTarget, WindowParams {
  connections: number;
  /** Requests in flight per connection. */
  outstanding: number;
  /** Values (ReadValueIds) per request, taken round robin from `nodes`. */
  values: number;
  /** NodeId texts (`i=2258`, `ns=2;s=...`, `nsu=<uri>;s=...`); default Server_ServerStatus_CurrentTime. */
  nodes?: string[];
  timestampsToReturn?: TimestampsName;
  /** Decode every Nth response in full (default 1024, 0 never). */
  verifyEvery?: number;
}

export interface ReadLoadResult extends WindowLoadResult {
  params: ReadLoadParams;
}

export async function runReadLoad(params: ReadLoadParams): Promise<ReadLoadResult> {
  if (!(params.connections >= 1 && params.outstanding >= 1 && params.values >= 1)) {
    throw new RangeError("connections, outstanding and values must be at least 1");
  }
  const runMs = (params.warmupSeconds + params.durationSeconds) * 1000;
  const channels = await openSessions(params, params.connections, "bench-read", runMs);
  try {
    const texts = params.nodes?.length ? params.nodes : [DEFAULT_READ_NODE];
    const nodeIds = await resolveNodes(channels[0], texts);
    const nodesToRead = Array.from({ length: params.values }, (_, i) => valueReadOf(nodeIds[i % nodeIds.length]));
    await checkReadable(channels[0], nodesToRead, texts);
    const shape = readShape({ nodesToRead, timestampsToReturn: TIMESTAMPS[params.timestampsToReturn ?? "both"] });
    const pipelines = channels.map((c) => new ServicePipeline(c, { shape, outstanding: params.outstanding, verifyEvery: params.verifyEvery }));
    return { params, ...(await measureWindow(pipelines, params)) };
  } finally {
    await closeAll(channels);
  }
}
