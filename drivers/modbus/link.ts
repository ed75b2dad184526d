// One Modbus link (a TCP connection, a serial bus, or a TCP-to-RTU gateway connection) as one
// serialized queue for every unit id on it (DESIGN: Devices; issue 4). Strictly one request is
// outstanding; each waits at most `timeout`, so a dead slave delays the others by at most that.
//
// This file is the request path: the Driver API, the queue, one request on the wire, its answer
// or time-out. Beside it: framing.ts with mbap.ts, rtu.ts and ascii.ts (ADUs per transport),
// queue.ts, pdu.ts; under drivers/stream/, connection.ts (opening, reconnect backoff) and
// streams.ts (socket and serial handlers), which the M-Bus link shares.
//
// Framing is ours, on `net` and `serialport`, not modbus-serial's client: its RTU port does not
// drop stale input before a request (a late answer to a timed-out request is taken as the next
// answer), it cuts frames by header scan and then fails the request on a bad CRC instead of
// resynchronising, its client keeps several transactions open at once, and it allocates a
// closure, a timer and concatenated buffers per request.
//
// Allocation on the request path: the Promise the Driver interface returns (with its resolve and
// reject functions, captured without a closure of ours) and the result array the caller keeps.
// Jobs are pooled (queue.ts); one receive buffer (framing.ts) and one transmit buffer per link;
// the time-out timer is one Node timer re-armed with refresh(); stream handlers are module-level
// functions that reach the connection through a symbol (streams.ts).
import { StatusCodes } from "../../src/ua/generated/status-codes.js";
import type { BlockRequest, DeviceLinkCounters, Driver, DriverError } from "../../src/devices/driver.js";
import {
  FunctionCode, MAX_READ_BITS, MAX_READ_REGISTERS, MAX_WRITE_BITS, MAX_WRITE_REGISTERS,
  checkResponsePdu, decodeReadData, exceptionError, isBusyException, isGatewayException,
  isReadFunction, ModbusError,
} from "./pdu.js";
import type { ModbusLinkHealth, ModbusUnitHealth, ResolvedLinkOptions } from "./options.js";
import { JobQueue, noteMismatch, UnitStats } from "./queue.js";
import type { Job, JobResult } from "./queue.js";
import { MALFORMED, NEED_MORE, sentAddress, type Framing } from "./framing.js";
import { MbapFraming } from "./mbap.js";
import { RtuFraming } from "./rtu.js";
import { AsciiFraming } from "./ascii.js";
import { LINK_STATE_NAMES, LinkConnection, LinkState, type ConnectionOwner } from "../stream/connection.js";
import type { LinkStream } from "../stream/streams.js";

function onLinkTimer(link: ModbusLink): void {
  link.timerFired();
}
function onPacingTimer(link: ModbusLink): void {
  link.pump();
}

export class ModbusLink implements Driver<number>, ConnectionOwner {
  readonly options: ResolvedLinkOptions;
  private readonly conn: LinkConnection;

  private readonly queue = new JobQueue();
  private inFlight: Job | null = null;

  private tx: Buffer;
  private txViews: (Buffer | undefined)[] = [];
  private readonly rx: Framing;
  private inReceive = false;

  /** The request time-out (the connect time-out is the connection's). */
  private timer: NodeJS.Timeout | null = null;
  private timerDeadline = 0;
  private pacing: NodeJS.Timeout | null = null;
  private pacingDelay = 0;
  private nextSendAt = 0;

  private consecutiveTimeouts = 0;

  private readonly units = new Map<number, UnitStats>();
  private requests = 0;
  private errors = 0;
  private lastError: string | undefined = undefined;
  private lastRoundTrip: number | undefined = undefined;
  private timeouts = 0;
  private exceptions = 0;
  private communicationErrors = 0;
  private busyRetries = 0;

  constructor(options: ResolvedLinkOptions) {
    this.options = options;
    this.rx = options.kind === "tcp" ? new MbapFraming() : options.kind === "ascii" ? new AsciiFraming() : new RtuFraming();
    this.tx = Buffer.allocUnsafe(this.rx.maxAdu);
    this.conn = new LinkConnection(options, this);
  }

  // ---------------------------------------------------------------- Driver

  connect(): Promise<void> {
    return this.conn.connect();
  }

  readBlock(request: BlockRequest<number>): Promise<Uint16Array | Uint8Array> {
    const { station: unitId, area, start, count } = request;
    let fc: number;
    let max: number;
    switch (area) {
      case "coil": fc = FunctionCode.ReadCoils; max = MAX_READ_BITS; break;
      case "discrete": fc = FunctionCode.ReadDiscreteInputs; max = MAX_READ_BITS; break;
      case "holding": fc = FunctionCode.ReadHoldingRegisters; max = MAX_READ_REGISTERS; break;
      case "input": fc = FunctionCode.ReadInputRegisters; max = MAX_READ_REGISTERS; break;
      default: return Promise.reject(invalid(`unknown area ${String(area)}`));
    }
    const bad = this.checkArgs(unitId, start, count, max);
    if (bad !== undefined) return Promise.reject(invalid(bad));
    return this.enqueue(fc, unitId, start, count, null, 1) as Promise<Uint16Array | Uint8Array>;
  }

  write(unitId: number, area: string, start: number, values: Uint16Array | Uint8Array): Promise<void> {
    const count = values.length;
    let fc: number;
    let steps = 1;
    if (area === "coil") {
      const bad = this.checkArgs(unitId, start, count, MAX_WRITE_BITS);
      if (bad !== undefined) return Promise.reject(invalid(bad));
      fc = count === 1 ? FunctionCode.WriteSingleCoil : FunctionCode.WriteMultipleCoils;
    } else if (area === "holding") {
      const f = this.options.forceSingleRegisterWrite;
      const force = f === true || (f !== false && f.includes(unitId));
      const bad = this.checkArgs(unitId, start, count, force ? 0xffff : MAX_WRITE_REGISTERS);
      if (bad !== undefined) return Promise.reject(invalid(bad));
      if (count === 1 || force) {
        fc = FunctionCode.WriteSingleRegister;
        steps = count;
      } else {
        fc = FunctionCode.WriteMultipleRegisters;
      }
    } else {
      return Promise.reject(invalid(`area ${String(area)} is not writable`));
    }
    return this.enqueue(fc, unitId, start, count, values, steps) as Promise<unknown> as Promise<void>;
  }

  close(): Promise<void> {
    const err = new ModbusError("closed", StatusCodes.BadCommunicationError, "link closed", false);
    const closed = this.conn.close(err);
    const job = this.inFlight;
    this.inFlight = null;
    if (job !== null) {
      const reject = job.reject!;
      this.count(job, err);
      this.queue.release(job);
      reject(err);
    }
    this.failQueued(err);
    if (this.timer !== null) clearTimeout(this.timer);
    if (this.pacing !== null) clearTimeout(this.pacing);
    this.timer = this.pacing = null;
    return closed;
  }

  get connected(): boolean {
    return this.conn.state === LinkState.Open;
  }

  health(): ModbusLinkHealth {
    return {
      connected: this.conn.state === LinkState.Open,
      requests: this.requests,
      errors: this.errors,
      lastError: this.lastError,
      lastRoundTrip: this.lastRoundTrip,
      state: LINK_STATE_NAMES[this.conn.state],
      timeouts: this.timeouts,
      exceptions: this.exceptions,
      communicationErrors: this.communicationErrors,
      busyRetries: this.busyRetries,
      discardedBytes: this.rx.discardedBytes,
      badFrames: this.rx.badFrames,
      staleFrames: this.rx.staleFrames,
      connects: this.conn.connects,
      queued: this.queue.length + (this.inFlight === null ? 0 : 1),
    };
  }

  /** Counters of one unit id on this link (one device of the map), or undefined before its first request. */
  unitHealth(unitId: number): ModbusUnitHealth | undefined {
    const u = this.units.get(unitId);
    return u === undefined ? undefined : { ...u };
  }

  /** Driver.countersOf: the unit's live counters (read, not copied). */
  countersOf(unitId: number): DeviceLinkCounters | undefined {
    return this.units.get(unitId);
  }

  // ------------------------------------------------------------------ queue

  private checkArgs(unitId: number, start: number, count: number, max: number): string | undefined {
    const { minUnit, maxUnit } = this.rx;
    if (!Number.isInteger(unitId) || unitId < minUnit || unitId > maxUnit) return `unit id ${unitId} outside ${minUnit}..${maxUnit}`;
    if (!Number.isInteger(start) || start < 0 || start > 0xffff) return `start address ${start} outside 0..65535`;
    if (!Number.isInteger(count) || count < 1 || count > max) return `quantity ${count} outside 1..${max}`;
    if (start + count > 0x10000) return `block ${start}+${count} passes address 65535`;
    return undefined;
  }

  private enqueue(
    fc: number, unitId: number, address: number, count: number,
    values: Uint16Array | Uint8Array | null, steps: number,
  ): Promise<JobResult> {
    if (this.conn.state === LinkState.Closed) {
      return Promise.reject(new ModbusError("closed", StatusCodes.BadCommunicationError, "link closed", false));
    }
    if (this.queue.length >= this.options.queueLimit) {
      this.errors++;
      return Promise.reject(new ModbusError(
        "overloaded", StatusCodes.BadResourceUnavailable, `link queue full (${this.options.queueLimit} requests)`, true));
    }
    const { job, promise } = this.queue.acquire();
    job.fc = fc;
    job.unitId = unitId;
    job.address = address;
    job.count = count;
    job.values = values;
    job.step = 0;
    job.steps = steps;
    job.busyLeft = this.options.busyRetries;
    job.backoff = this.options.busyBackoff;
    job.notBefore = 0;
    job.sawBadFrame = false;
    job.mismatch = "";
    job.mismatches = 0;
    let unit = this.units.get(unitId);
    if (unit === undefined) this.units.set(unitId, (unit = new UnitStats()));
    job.unit = unit;
    this.queue.push(job);
    this.pump();
    return promise;
  }

  /** Starts the next request if the link allows it now; otherwise arms what will call it again. */
  pump(): void {
    if (this.inFlight !== null || this.queue.head === null || this.inReceive) return;
    const state = this.conn.state;
    if (state === LinkState.Connecting || state === LinkState.Closed) return;
    const now = performance.now();
    if (state === LinkState.Idle) {
      // Reconnect on demand, never sooner than the backoff allows: until then requests fail at
      // once instead of waiting, so a dead link costs its devices nothing but Bad values.
      const wait = this.conn.backoffLeft(now);
      if (wait > 0) this.failQueued(this.conn.notConnectedError(wait));
      else this.conn.start();
      return;
    }
    if (now < this.nextSendAt) return this.armPacing(this.nextSendAt - now);
    const job = this.queue.takeReady(now);
    if (job === null) return this.armPacing(this.queue.soonest() - now);
    this.send(job, now);
  }

  private send(job: Job, now: number): void {
    const stream = this.conn.stream!;
    // A write the OS has not taken yet still references the transmit buffer: leave it to that
    // write and encode into a fresh one (only a stalled link gets here).
    if (stream.writableLength > 0) {
      this.tx = Buffer.allocUnsafe(this.rx.maxAdu);
      this.txViews.length = 0;
    }
    const tx = this.tx;
    const length = this.rx.encode(tx, job);
    this.inFlight = job;
    job.sentAt = now;
    this.requests++;
    job.unit!.requests++;
    this.armTimer(now);
    let view = this.txViews[length];
    if (view === undefined) view = this.txViews[length] = tx.subarray(0, length);
    stream.write(view);
  }

  // ---------------------------------------------------------------- receive

  /** @internal ConnectionOwner: bytes from the link; answers are cut out and handled here. */
  receive(stream: LinkStream, chunk: Buffer): void {
    const rx = this.rx;
    const conn = this.conn;
    // Completions inside this loop leave the next send to the end of the chunk: bytes that
    // follow an answer in the same chunk predate the next request and must not count for it.
    this.inReceive = true;
    let off = 0;
    while (off < chunk.length && conn.stream === stream) {
      off = rx.fill(chunk, off);
      while (conn.stream === stream) {
        const job = this.inFlight;
        const at = rx.next(job);
        if (at === NEED_MORE) break;
        if (at === MALFORMED) {
          this.drop(rx.problem);
          break;
        }
        this.handlePdu(job!, at, rx.pduLength);
      }
    }
    rx.compact();
    this.inReceive = false;
    this.pump();
  }

  /** The answer to `job`: its PDU is at rx[off, off+length). */
  private handlePdu(job: Job, off: number, length: number): void {
    const rx = this.rx.buf;
    const f = rx[off];
    if (f === (job.fc | 0x80) && length === 2) return this.exception(job, rx[off + 1]!);
    if (f !== job.fc && f !== (job.fc | 0x80)) {
      // Its transaction id (TCP) says it is this request's answer, to another function: a
      // server that mixed up its answers. What it says cannot be trusted.
      this.rx.badFrames++;
      this.communicationErrors++;
      noteMismatch(job, `reply with function code ${f}, expected ${job.fc}`);
      return this.fail(job, new ModbusError("malformed", StatusCodes.BadCommunicationError, `unit ${job.unitId}: ${job.mismatch}`, true));
    }
    const problem = f !== job.fc
      ? `exception answer of ${length} bytes, expected 2`
      : checkResponsePdu(rx, off, length, job.fc, sentAddress(job), job.count, job.values, job.step);
    if (problem !== undefined) {
      this.rx.badFrames++;
      this.communicationErrors++;
      return this.fail(job, new ModbusError("malformed", StatusCodes.BadCommunicationError, `unit ${job.unitId}: bad answer: ${problem}`, true));
    }
    const now = performance.now();
    const rtt = now - job.sentAt;
    this.lastRoundTrip = job.unit!.lastRoundTrip = rtt;
    this.conn.answered();
    this.consecutiveTimeouts = 0;
    const resolve = job.resolve!;
    if (isReadFunction(job.fc)) {
      const data = decodeReadData(rx, off, job.fc, job.count);
      this.finish(now);
      this.queue.release(job);
      return resolve(data);
    }
    if (++job.step < job.steps) {
      // The next register of a forced-FC6 write goes next, ahead of other requests, so that the
      // registers of one value are written together.
      job.notBefore = 0;
      this.queue.pushFront(job);
      return this.finish(now);
    }
    this.finish(now);
    this.queue.release(job);
    resolve(undefined);
  }

  private exception(job: Job, code: number): void {
    const now = performance.now();
    this.consecutiveTimeouts = 0;
    if (isBusyException(code) && job.busyLeft > 0) {
      // 05/06: the slave is alive but busy. Back off without holding the link: other requests
      // go first while this one waits (the time-out rule bounds every wait on the queue).
      job.busyLeft--;
      job.notBefore = now + job.backoff;
      job.backoff *= 2;
      this.busyRetries++;
      this.queue.pushFront(job);
      return this.finish(now);
    }
    this.exceptions++;
    job.unit!.exceptions++;
    if (isGatewayException(code)) this.communicationErrors++;
    const what = isReadFunction(job.fc) ? `reading ${job.count} at ${job.address}` : `writing at ${sentAddress(job)}`;
    this.fail(job, exceptionError(job.unitId, job.fc, code, what));
  }

  private fail(job: Job, err: DriverError): void {
    const reject = job.reject!;
    if (this.inFlight === job) this.finish(performance.now());
    this.count(job, err);
    this.queue.release(job);
    reject(err);
  }

  private count(job: Job, err: DriverError): void {
    this.errors++;
    this.lastError = err.message;
    job.unit!.errors++;
    job.unit!.lastError = err.message;
  }

  private finish(now: number): void {
    this.inFlight = null;
    this.nextSendAt = now + this.options.interRequestDelay;
    this.pump();
  }

  // ----------------------------------------------------------------- timers

  private armTimer(now: number): void {
    this.timerDeadline = now + this.options.timeout;
    if (this.timer === null) {
      this.timer = setTimeout(onLinkTimer, this.options.timeout, this);
      this.timer.unref();
    } else {
      this.timer.refresh();
    }
  }

  timerFired(): void {
    const job = this.inFlight;
    if (job === null) return;
    const now = performance.now();
    // Node timers run on a millisecond clock and can fire a fraction early.
    if (now < this.timerDeadline - 1) {
      setTimeout(onLinkTimer, this.timerDeadline - now, this).unref();
      return;
    }
    this.timeouts++;
    this.communicationErrors++;
    job.unit!.timeouts++;
    const err = new ModbusError("timeout", StatusCodes.BadCommunicationError, `unit ${job.unitId}: ${this.timeoutText(job)}`, true);
    // On TCP, a run of time-outs with no answer from anyone on the link means the connection is
    // likely half-open (peer rebooted, NAT state lost): open a new one, with backoff.
    if (!this.options.serial && ++this.consecutiveTimeouts >= this.options.maxConsecutiveTimeouts) {
      this.consecutiveTimeouts = 0;
      this.inFlight = null;
      this.drop(`${this.options.maxConsecutiveTimeouts} time-outs in a row`);
      this.count(job, err);
      const reject = job.reject!;
      this.queue.release(job);
      reject(err);
      return;
    }
    this.fail(job, err);
  }

  /** Why `job` timed out: replies to other requests when there were some (not "no answer"), else silence or bad frames. */
  private timeoutText(job: Job): string {
    const within = `within ${this.options.timeout} ms`;
    if (job.mismatches > 0) {
      const others = job.mismatches > 1 ? ` (the last of ${job.mismatches} replies to other requests)` : "";
      return `${job.mismatch}${others}; no answer of its own to FC${job.fc} ${within}`;
    }
    return job.sawBadFrame ? `no valid answer to FC${job.fc} ${within} (bad frames received)` : `no answer to FC${job.fc} ${within}`;
  }

  private armPacing(delay: number): void {
    const ms = Math.max(1, Math.ceil(delay));
    if (this.pacing !== null && this.pacingDelay === ms) {
      this.pacing.refresh();
      return;
    }
    if (this.pacing !== null) clearTimeout(this.pacing);
    this.pacing = setTimeout(onPacingTimer, ms, this);
    this.pacing.unref();
    this.pacingDelay = ms;
  }

  // ------------------------------------------------------------- connection

  /** @internal ConnectionOwner */
  connectionOpened(): void {
    // Bytes left from a lost connection are not answers to anything sent on this one.
    this.rx.clear();
    this.consecutiveTimeouts = 0;
    this.nextSendAt = 0;
    this.pump();
  }

  /** @internal ConnectionOwner */
  connectFailed(err: DriverError): void {
    this.communicationErrors++;
    this.failQueued(err);
  }

  /** @internal ConnectionOwner */
  connectionLost(reason: string): void {
    this.drop(reason);
  }

  /** Ends the connection; the request in flight fails now, the queue reconnects with backoff. */
  private drop(reason: string): void {
    const partial = this.rx.buffered;
    const why = this.conn.drop(reason);
    if (why === undefined) return;
    const job = this.inFlight;
    if (job !== null) {
      this.communicationErrors++;
      const detail = partial > 0 ? ` (${partial} bytes of an answer received)` : "";
      this.fail(job, new ModbusError("closed", StatusCodes.BadCommunicationError, `unit ${job.unitId}: ${why}${detail}`, true));
    } else {
      this.pump();
    }
  }

  private failQueued(err: DriverError): void {
    let j = this.queue.drain();
    while (j !== null) {
      const next = j.next;
      const reject = j.reject!;
      this.count(j, err);
      this.queue.release(j);
      reject(err);
      j = next;
    }
  }
}

function invalid(message: string): ModbusError {
  return new ModbusError("badValue", StatusCodes.BadInvalidArgument, message, false);
}
