// The one interface every device driver implements (DESIGN: Devices). Drivers live in drivers/
// and import nothing from the server but this file, the driver registry's types, the tag codec's
// and src/ua types. Poll groups call them; they know nothing of OPC UA nodes, and nothing outside
// drivers/ knows a protocol's details: areas and stations are the driver's own names and values,
// and a driver says what went wrong as a DriverError's `kind`.

/**
 * One read request: `count` units of the device's data area `area` from `start`, as the
 * driver's definition placed its tags (DriverProtocol.tag): a run of words or bits, or, for a
 * driver of records, a whole answer (a telegram of records) as one block.
 */
export interface BlockRequest<Station = unknown> {
  /** The device's address on its link, as the driver's definition gives it (DriverProtocol.station). */
  readonly station: Station;
  /** The data area, by the driver's name for it. */
  readonly area: string;
  readonly start: number;
  readonly count: number;
}

/**
 * What one read gives: 16-bit words (a Uint16Array), bits (a Uint8Array of 0/1), or a driver's
 * own form of the answer (its decoded records): the tags' codecs, which its definition made,
 * read it. Valid until the next turn of the event loop: a poll decodes it at once.
 */
export type BlockData = Uint16Array | Uint8Array | object;

/**
 * What went wrong, in the words the poll groups act on:
 * - the device cannot be reached: `timeout` (no answer), `refused` (a connect failed),
 *   `closed` (the link went down or was closed), `unreachable` (a gateway in between could not
 *   reach it), `malformed` (answers that make no sense), `overloaded` (the link's queue is
 *   full): the device is failing at once, its values go Bad, it backs off;
 * - the device answered that it cannot serve: `busy` (busy after the driver's own retries),
 *   `deviceFailure` (it failed to do it): the affected values go Bad; a poll cycle in which
 *   every request ends so (nothing read) makes the device failing like a silent one;
 * - the device answered that the request is wrong: `badAddress` (the addresses do not exist:
 *   the block is split until the tags that fail alone are found), `badValue` (a value or
 *   quantity it will not take), `unsupported` (a request it does not know): the tags' own
 *   fault, which a retry cannot mend; the device is up, only the affected values go Bad.
 */
export type DriverErrorKind =
  | "timeout"
  | "refused"
  | "closed"
  | "unreachable"
  | "malformed"
  | "overloaded"
  | "badAddress"
  | "badValue"
  | "unsupported"
  | "busy"
  | "deviceFailure";

/** Kinds after which the device counts as not answering (DeviceState failing, backoff). */
export function isLinkFailure(kind: DriverErrorKind): boolean {
  switch (kind) {
    case "timeout":
    case "refused":
    case "closed":
    case "unreachable":
    case "malformed":
    case "overloaded":
      return true;
    default:
      return false;
  }
}

/**
 * Kinds by which the device says it cannot serve now, whatever it is asked: a cycle of nothing
 * else is a failed cycle. The others of a device that answers (badAddress, badValue,
 * unsupported) are about the request, that is the tag, and never fail the device.
 */
export function isDeviceFault(kind: DriverErrorKind): boolean {
  return kind === "deviceFailure" || kind === "busy";
}

/**
 * A driver failure of one request. `statusCode` is the OPC UA StatusCode the affected values
 * (or a refused write) take: BadCommunicationError for a time-out, BadConfigurationError for an
 * address the device lacks, BadDeviceFailure, ...; `retryable` says whether retrying can help.
 */
export class DriverError extends Error {
  readonly kind: DriverErrorKind;
  readonly statusCode: number;
  readonly retryable: boolean;
  constructor(kind: DriverErrorKind, statusCode: number, message: string, retryable: boolean) {
    super(message);
    this.name = "DriverError";
    this.kind = kind;
    this.statusCode = statusCode;
    this.retryable = retryable;
  }
}

export interface DriverHealth {
  readonly connected: boolean;
  readonly requests: number;
  readonly errors: number;
  readonly lastError: string | undefined;
  /** Round-trip time of the last successful request, ms. */
  readonly lastRoundTrip: number | undefined;
}

/** Counters a driver keeps per device on its link (a shared link serves several devices). */
export interface DeviceLinkCounters {
  /**
   * Replies received while the device's request was in flight that were not its answer: another
   * transaction, another device, another function. The request waits on for its own answer
   * (until its time-out) or fails, as the driver's framing allows.
   */
  readonly mismatchedReplies: number;
}

/** The driver of one link: every device on it (stations) shares it. */
export interface Driver<Station = unknown> {
  /** Whether the link is open now (no request needs to open it first). */
  readonly connected: boolean;
  /** Opens the link (TCP connection, serial port). Rejects with DriverError. Idempotent. */
  connect(): Promise<void>;
  /** Reads one block (BlockData). Rejects with DriverError. */
  readBlock(request: BlockRequest<Station>): Promise<BlockData>;
  /**
   * Writes words or bits (as the tag's codec encoded them) to `area` from `start`; the driver
   * picks the requests. Rejects with DriverError (`unsupported` where the area cannot be written).
   */
  write(station: Station, area: string, start: number, values: Uint16Array | Uint8Array): Promise<void>;
  close(): Promise<void>;
  health(): DriverHealth;
  /** The link's counters of the device at `station`; undefined before its first request (or a driver that keeps none). */
  countersOf?(station: Station): DeviceLinkCounters | undefined;
}
