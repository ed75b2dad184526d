// The one interface every device driver implements (DESIGN: Devices). Drivers live in drivers/
// and import nothing from the server but this file, the driver registry's types and src/ua
// types. Poll groups call them; they know nothing of OPC UA nodes, and nothing outside drivers/
// knows a protocol's details: a driver says what went wrong as a DriverError's `kind`.

/** Data areas (Modbus's four; other fieldbus drivers map their objects onto the same four). */
export type DataArea = "coil" | "discrete" | "input" | "holding";

/** One contiguous block request: bits for coil/discrete, 16-bit registers for input/holding. */
export interface BlockRequest {
  /** The device's address on its link (Modbus unit id). */
  readonly unitId: number;
  readonly area: DataArea;
  readonly start: number;
  readonly count: number;
}

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

export interface Driver {
  /** Whether the link is open now (no request needs to open it first). */
  readonly connected: boolean;
  /** Opens the link (TCP connection, serial port). Rejects with DriverError. Idempotent. */
  connect(): Promise<void>;
  /** Reads one block: registers as a Uint16Array, bits as a Uint8Array of 0/1. */
  readBlock(request: BlockRequest): Promise<Uint16Array | Uint8Array>;
  /**
   * Writes registers (holding) or bits (coil) from `start`. The driver picks the requests
   * (Modbus: FC5/FC6 for one, FC15/FC16 for more, FC6 one by one where the device needs it).
   */
  write(unitId: number, area: "coil" | "holding", start: number, values: Uint16Array | Uint8Array): Promise<void>;
  close(): Promise<void>;
  health(): DriverHealth;
  /** The link's counters of the device at `unitId`; undefined before its first request (or a driver that keeps none). */
  countersOf?(unitId: number): DeviceLinkCounters | undefined;
}
