// Options and diagnostics of a Modbus link, and their defaults.
import type { DriverHealth } from "../../src/devices/driver.js";

export type ModbusLinkKind = "tcp" | "rtu" | "ascii" | "rtu-over-tcp";

/** The kinds on a serial line (the others are TCP connections). */
export function isSerialKind(kind: ModbusLinkKind): boolean {
  return kind === "rtu" || kind === "ascii";
}

export interface ModbusLinkOptions {
  /** tcp: Modbus TCP (MBAP); rtu, ascii: a serial line in RTU or ASCII mode; rtu-over-tcp: RTU frames through a TCP gateway. */
  kind: ModbusLinkKind;
  /** tcp, rtu-over-tcp. */
  host?: string;
  /** tcp, rtu-over-tcp; default 502. */
  port?: number;
  /** rtu, ascii: the serial device, e.g. /dev/ttyUSB0. */
  path?: string;
  /** rtu; default 19200 (serial spec §2.5.1: the default rate devices must support). */
  baudRate?: number;
  /** rtu; default "even" (serial spec §2.5.1: even parity is the required default). */
  parity?: "none" | "even" | "odd";
  /** rtu, ascii; default 8 for rtu (RTU frames are 8-bit), 7 for ascii (serial spec §2.5.2.1). */
  dataBits?: 7 | 8;
  /** rtu; default 1. */
  stopBits?: 1 | 2;
  /** Per request, ms: from sending the request to its last byte. Also bounds a connect or open. */
  timeout: number;
  /**
   * Silence after each answer (or time-out) before the next request, ms. Default for rtu: the
   * 3.5-character inter-frame gap of the line settings, rounded up to whole ms (serial spec
   * §2.5.1.1: 1.75 ms above 19200 baud); 0 for the TCP kinds.
   */
  interRequestDelay?: number;
  /**
   * Write several holding registers as a sequence of FC6 requests (devices without FC16): true
   * for every unit id on the link, or the unit ids that need it (devices on one bus may differ).
   */
  forceSingleRegisterWrite?: boolean | readonly number[];
  /** Exceptions 05/06 (busy) are retried this many times per request; default 3. */
  busyRetries?: number;
  /** First busy backoff, ms, doubling per retry; default 100. Other requests go meanwhile. */
  busyBackoff?: number;
  /** First reconnect delay, ms, doubling per failed attempt; default 500. */
  reconnectDelay?: number;
  /** Cap of the reconnect delay, ms; default 30000. */
  maxReconnectDelay?: number;
  /** TCP kinds: this many time-outs in a row, with no answer between, drop the connection; default 3. */
  maxConsecutiveTimeouts?: number;
  /** Requests waiting on the link beyond this are refused (BadResourceUnavailable); default 256. */
  queueLimit?: number;
}

export interface ResolvedLinkOptions {
  readonly kind: ModbusLinkKind;
  /** A serial line (rtu, ascii): the connection opens `path`, else a TCP connection. */
  readonly serial: boolean;
  readonly host: string;
  readonly port: number;
  readonly path: string;
  readonly baudRate: number;
  readonly parity: "none" | "even" | "odd";
  readonly dataBits: 7 | 8;
  readonly stopBits: 1 | 2;
  readonly timeout: number;
  readonly interRequestDelay: number;
  readonly forceSingleRegisterWrite: boolean | readonly number[];
  readonly busyRetries: number;
  readonly busyBackoff: number;
  readonly reconnectDelay: number;
  readonly maxReconnectDelay: number;
  readonly maxConsecutiveTimeouts: number;
  readonly queueLimit: number;
}

/** Per unit id (one device of the map) on a link. */
export interface ModbusUnitHealth {
  /** Requests sent to this unit. */
  readonly requests: number;
  /** Operations that failed: exceptions, time-outs, link down. */
  readonly errors: number;
  readonly timeouts: number;
  readonly exceptions: number;
  /** Replies received while its request was in flight that answered another (transaction id, unit id, function code). */
  readonly mismatchedReplies: number;
  readonly lastError: string | undefined;
  /** ms, of the last answered request. */
  readonly lastRoundTrip: number | undefined;
}

export interface ModbusLinkHealth extends DriverHealth {
  readonly state: "idle" | "connecting" | "open" | "closed";
  readonly timeouts: number;
  /** Exception answers (busy answers that were retried are counted in busyRetries instead). */
  readonly exceptions: number;
  /** Time-outs, lost connections, failed connects, 0A/0B gateway exceptions, malformed answers. */
  readonly communicationErrors: number;
  readonly busyRetries: number;
  /** RTU: bytes skipped while looking for a frame (noise, other slaves' answers, stale input). */
  readonly discardedBytes: number;
  /** Frames with a bad CRC, a malformed MBAP header, or a wrong echo/byte count. */
  readonly badFrames: number;
  /** Well-formed answers to earlier requests (TCP transaction id mismatch, RTU wrong echo). */
  readonly staleFrames: number;
  /** Connections (or port opens) made. */
  readonly connects: number;
  /** Requests waiting or in flight. */
  readonly queued: number;
}

function positive(name: string, v: number | undefined, fallback: number, min = 0): number {
  if (v === undefined) return fallback;
  if (!Number.isFinite(v) || v < min) throw new RangeError(`modbus link: ${name} must be a number >= ${min}, got ${v}`);
  return v;
}

/** Fills defaults and checks what the link needs; a programming error throws RangeError. */
export function resolveLinkOptions(o: ModbusLinkOptions): ResolvedLinkOptions {
  const kind = o.kind;
  if (kind !== "tcp" && kind !== "rtu" && kind !== "ascii" && kind !== "rtu-over-tcp") throw new RangeError(`modbus link: unknown kind ${String(kind)}`);
  const serial = isSerialKind(kind);
  if (serial ? !o.path : !o.host) throw new RangeError(`modbus link: ${kind} needs ${serial ? "path" : "host"}`);
  const baudRate = positive("baudRate", o.baudRate, 19200, 1);
  const parity = o.parity ?? "even";
  const dataBits = o.dataBits ?? (kind === "ascii" ? 7 : 8);
  const stopBits = o.stopBits ?? 1;
  let gap = 0;
  if (kind === "rtu") {
    const charBits = 1 + dataBits + (parity === "none" ? 0 : 1) + stopBits;
    gap = Math.ceil(baudRate > 19200 ? 1.75 : (3.5 * charBits * 1000) / baudRate);
  }
  return {
    kind,
    serial,
    host: o.host ?? "",
    port: positive("port", o.port, 502, 1),
    path: o.path ?? "",
    baudRate,
    parity,
    dataBits,
    stopBits,
    timeout: positive("timeout", o.timeout ?? NaN, NaN, 1),
    interRequestDelay: positive("interRequestDelay", o.interRequestDelay, gap),
    forceSingleRegisterWrite: o.forceSingleRegisterWrite ?? false,
    busyRetries: positive("busyRetries", o.busyRetries, 3),
    busyBackoff: positive("busyBackoff", o.busyBackoff, 100, 1),
    reconnectDelay: positive("reconnectDelay", o.reconnectDelay, 500, 1),
    maxReconnectDelay: positive("maxReconnectDelay", o.maxReconnectDelay, 30_000, 1),
    maxConsecutiveTimeouts: positive("maxConsecutiveTimeouts", o.maxConsecutiveTimeouts, 3, 1),
    queueLimit: positive("queueLimit", o.queueLimit, 256, 1),
  };
}

/**
 * The identity of the physical link: devices whose options give the same key must share one
 * driver (one queue), e.g. every unit id on one serial bus or behind one gateway address.
 */
export function modbusLinkKey(o: Pick<ModbusLinkOptions, "kind" | "host" | "port" | "path">): string {
  return isSerialKind(o.kind) ? `${o.kind}:${o.path}` : `${o.kind}:${o.host}:${o.port ?? 502}`;
}
