// A device's tags read once, for a person checking a map before it is applied (the status page's
// "test read"): a DevicePoller of the device's config runs each of its poll groups one cycle,
// through the very read path polling takes (block plan, driver, refused blocks split until the
// tags at fault are found, decoding), into a value cache of its own: nothing of the running
// gateway's values, nodes, subscribers or history sees it. The driver is the caller's: the
// running link when the device's link is up already (its requests queue behind the polls, as a
// serial bus needs), or one opened for this read and closed after (device-runtime.ts chooses).
//
// What failed is said as the driver said it (its DriverError's message: the device's refusal of
// an address, a time-out, a refused connection), for each tag whose request failed, and for the
// device when the cycle stopped at a link failure.
import type { DeviceConfig } from "../config/device-map.js";
import type { Clock } from "../sampling/clock.js";
import type { DataValue } from "../ua/builtins.js";
import { StatusCodes } from "../ua/generated/status-codes.js";
import { ValueCache } from "../values/value-cache.js";
import { DevicePoller } from "./device-poller.js";
import type { BlockRequest, Driver } from "./driver.js";
import type { DriverProtocol } from "./registry.js";
import type { Slicer } from "../sampling/slices.js";

export interface TagReading {
  readonly name: string;
  /** The value read, or the last status it took (BadNoCommunication when nothing was read). */
  readonly value: DataValue;
  /** The driver's words for the failed request that covered this tag. */
  readonly error?: string;
}

export interface DeviceReading {
  readonly device: string;
  readonly tags: readonly TagReading[];
  /** Requests sent, and the round trip of the last one answered (ms). */
  readonly requests: number;
  readonly roundTrip: number;
  /** Set when the device could not be reached: the cycle stopped there. */
  readonly error?: string;
}

interface Failure {
  readonly request: BlockRequest;
  readonly message: string;
}

/** `driver` as the poller sees it, noting every failed read; it neither writes nor closes the link. */
function noting(driver: Driver, failures: Failure[]): Driver {
  return {
    get connected() {
      return driver.connected;
    },
    connect: () => driver.connect(),
    readBlock: (request) =>
      driver.readBlock(request).catch((err: unknown) => {
        failures.push({ request, message: err instanceof Error ? err.message : String(err) });
        throw err;
      }),
    write: () => Promise.reject(new Error("a test read does not write")),
    close: () => Promise.resolve(),
    health: () => driver.health(),
  };
}

/**
 * Reads every tag of `config` once through `driver`, as `protocol` (its driver's) plans and
 * decodes them; resolves when every poll group has run its cycle.
 */
export async function readDeviceOnce(config: DeviceConfig, driver: Driver, o: { readonly clock: Clock; readonly protocol: DriverProtocol; readonly slicer: Slicer }): Promise<DeviceReading> {
  const values = new ValueCache();
  const slots = config.tags.map((t) => values.acquire(`${config.name}.${t.name}`, { builtinType: o.protocol.tag(t, config).codec.builtinType, rate: t.rate }));
  const failures: Failure[] = [];
  const poller = new DevicePoller({ config, protocol: o.protocol, driver: noting(driver, failures), clock: o.clock, values, slots, slicer: o.slicer });
  let unreachable: string | undefined;
  poller.onStateChange = (p) => {
    if (p.state === "failing" || p.state === "demoted") unreachable = p.lastError;
  };
  for (const group of poller.groups) {
    // A cycle that could not reach the device stops there: the other groups would only wait
    // for their own time-outs.
    if (unreachable !== undefined) break;
    const now = o.clock.now();
    await group.sample(now, now);
  }
  const tags = poller.tags.map((tag, i): TagReading => {
    const slot = slots[i]!;
    const value = values.hasValue(slot) || values.statusOf(slot) !== StatusCodes.BadWaitingForInitialData ? values.get(slot) : { statusCode: StatusCodes.BadNoCommunication };
    const end = tag.start + tag.width;
    const failed = failures.find((f) => f.request.area === tag.area && f.request.start <= tag.start && end <= f.request.start + f.request.count);
    const error = failed?.message ?? (value.statusCode !== undefined && value.statusCode !== StatusCodes.Good ? unreachable : undefined);
    return error === undefined ? { name: tag.name, value } : { name: tag.name, value, error };
  });
  const base = { device: config.name, tags, requests: poller.requests, roundTrip: Math.round(poller.lastRoundTrip * 100) / 100 };
  return unreachable === undefined ? base : { ...base, error: unreachable };
}
