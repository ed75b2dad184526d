// One M-Bus (a level converter's serial line, or an M-Bus to TCP converter) as one serialized
// queue for every meter on it (DESIGN: Devices): a readout is one task that has the bus to itself
// from its first request to its last answer, so that a selection by secondary address is never
// answered by a meter another task selected.
//
// A readout (EN 13757-2 §5.4-5.5, EN 13757-3 §7; The M-Bus documentation §5.4, §5.5, §7.1):
// - a meter at a primary address is reset with SND_NKE (answered by E5h), which restarts its
//   telegrams and its frame count bit: the first REQ_UD2 then has FCB 1;
// - a meter by secondary address is selected with SND_UD to 253, CI 52h and its 8-byte address
//   (answered by E5h), and read at 253; its FCB goes on from its last readout;
// - each REQ_UD2 is answered by a telegram (RSP_UD); the FCB is toggled after every answer, and a
//   telegram whose records end in DIF 1Fh ("more records follow") is followed by the next, up to
//   the device's `telegrams`;
// - a request left unanswered, or answered with a corrupt frame, is sent again with the same FCB
//   (the meter then repeats its last telegram), `retries` times.
// The wait for an answer is the standard's (timing.ts) at the bus speed; each corrupt frame is
// counted, per meter and for the link, and the last one's reason is kept.
import { DriverError, type BlockRequest, type DeviceLinkCounters, type Driver, type DriverHealth } from "../../src/devices/driver.js";
import { StatusCodes } from "../../src/ua/generated/status-codes.js";
import { LINK_STATE_NAMES, LinkConnection, LinkState, type ConnectionOptions, type ConnectionOwner } from "../stream/connection.js";
import type { LinkStream } from "../stream/streams.js";
import { CI_SELECT, Control, FrameReader, longFrame, SECONDARY_ADDRESS, shortFrame, type Frame } from "./frame.js";
import { MbusReading } from "./reading.js";
import { APPLICATION_BUSY, decodeTelegram, type FixedHeader, type MbusRecord } from "./records.js";
import { formatSecondary, matches, selectionData, type SecondaryAddress } from "./secondary.js";
import { characterGap, firstCharacterTimeout, REQUEST_CHARS } from "./timing.js";

/** A meter on a link, as its device's settings give it (DriverProtocol.station). */
export interface MbusStation {
  /** Its primary address (0-250), or undefined when it is read by its secondary address. */
  readonly primary?: number;
  readonly secondary?: SecondaryAddress;
  /** Most telegrams of one readout. */
  readonly telegrams: number;
  /** Repeats of a request that was not answered, or answered with a corrupt frame. */
  readonly retries: number;
  /** The wait for an answer's first character, ms; undefined: from the bus speed. */
  readonly timeout?: number;
  /** "address 5", "secondary address 12345678FFFFFFFF": in messages, and its counters' key. */
  readonly key: string;
}

export interface MbusLinkOptions extends ConnectionOptions {
  /** The M-Bus's speed (the line's, or behind a TCP converter the converter's M-Bus side), for the waits. */
  readonly busBaudRate: number;
  /** ms allowed beside the standard's times for what sits between (the converter, the OS, a network). */
  readonly allowance: number;
  /** Readouts waiting beyond this are refused (BadResourceUnavailable). */
  readonly queueLimit: number;
}

/** What an exchange heard: the character or telegram it waited for, nothing, or bytes that were no frame. */
export type Heard =
  | { readonly kind: "ack" }
  | { readonly kind: "answer"; readonly frame: Extract<Frame, { kind: "long" }> }
  | { readonly kind: "silent" }
  | { readonly kind: "garbage"; readonly reason: string }
  | { readonly kind: "closed"; readonly reason: string };

/** A readout, or why there is none. */
export type Readout = { readonly ok: true; readonly reading: MbusReading } | { readonly ok: false; readonly error: DriverError; readonly heard?: Heard["kind"] };

/** Per meter (one device of the map) on a link. */
export class StationCounters implements DeviceLinkCounters {
  requests = 0;
  errors = 0;
  timeouts = 0;
  /** Frames received for its requests that were no frame (checksum, lengths, stop byte, cut short). */
  corruptFrames = 0;
  mismatchedReplies = 0;
  lastError: string | undefined = undefined;
  /** FCB of its next REQ_UD2. */
  fcb = true;
}

export interface MbusLinkHealth extends DriverHealth {
  readonly state: (typeof LINK_STATE_NAMES)[number];
  readonly timeouts: number;
  readonly corruptFrames: number;
  /** Why the last corrupt frame was one. */
  readonly lastCorruptFrame: string | undefined;
  /** Bytes skipped that could not start a frame. */
  readonly discardedBytes: number;
  readonly queued: number;
}

/** What the bus search (scan.ts) does on a link, within one exclusive task. */
export interface BusAccess {
  /** SND_NKE to a primary address, one attempt. */
  probe(address: number, timeout?: number): Promise<Heard>;
  /** A selection by secondary address (wildcards allowed), one attempt. */
  select(address: SecondaryAddress, timeout?: number): Promise<Heard>;
  /** A readout of the meter at `address` (253: the selected one), of up to `telegrams`, with `retries` repeats. */
  read(address: number, telegrams: number, retries: number, timeout?: number): Promise<Readout>;
}

interface Pending {
  readonly expect: "ack" | "answer";
  readonly from: number | undefined;
  readonly counters: StationCounters | undefined;
  readonly resolve: (h: Heard) => void;
  readonly gap: number;
  deadline: number;
  garbage: string | undefined;
}

function onTimer(link: MbusLink): void {
  link.timerFired();
}

const NOOP = (): void => undefined;

export class MbusLink implements Driver<MbusStation>, ConnectionOwner {
  readonly options: MbusLinkOptions;
  private readonly conn: LinkConnection;
  private readonly reader = new FrameReader();
  private readonly stations = new Map<string, StationCounters>();
  private tail: Promise<unknown> = Promise.resolve();
  private queued = 0;
  private closed = false;
  private pending: Pending | null = null;
  private timer: NodeJS.Timeout | null = null;

  private requests = 0;
  private errors = 0;
  private timeouts = 0;
  private corruptFrames = 0;
  private lastCorruptFrame: string | undefined;
  private lastError: string | undefined;
  private lastRoundTrip: number | undefined;

  constructor(options: MbusLinkOptions) {
    this.options = options;
    this.conn = new LinkConnection(options, this);
  }

  // ---------------------------------------------------------------- Driver

  get connected(): boolean {
    return this.conn.state === LinkState.Open;
  }

  connect(): Promise<void> {
    this.closed = false;
    return this.conn.connect();
  }

  readBlock(request: BlockRequest<MbusStation>): Promise<MbusReading> {
    const station = request.station;
    if (request.area !== "telegram" || request.start !== 0 || request.count !== 1) {
      return Promise.reject(new DriverError("unsupported", StatusCodes.BadNotSupported, `${station.key}: a meter is read whole, not ${request.area}:${request.start}+${request.count}`, false));
    }
    return this.exclusive(async () => {
      const started = performance.now();
      const counters = this.countersFor(station);
      const secondary = station.secondary;
      const opening = secondary !== undefined ? this.selection(secondary) : shortFrame(Control.SND_NKE, station.primary!);
      const chars = secondary !== undefined ? REQUEST_CHARS.selection : REQUEST_CHARS.short;
      const opened = await this.withRetries(station.retries, () => this.exchange(opening, "ack", undefined, counters, chars, station.timeout));
      if (opened.kind !== "ack") throw this.failure(counters, station.key, opened, secondary !== undefined ? `its selection (${formatSecondary(secondary)})` : "SND_NKE");
      // SND_NKE resets the meter's frame count bit: its first REQ_UD2 has FCB 1 (EN 13757-2 §5.5).
      if (secondary === undefined) counters.fcb = true;
      const address = secondary !== undefined ? SECONDARY_ADDRESS : station.primary!;
      const out = await this.readout(address, station.telegrams, station.retries, station.timeout, counters, station.key, secondary);
      if (!out.ok) throw out.error;
      this.lastRoundTrip = performance.now() - started;
      return out.reading;
    });
  }

  private selection(address: SecondaryAddress): Buffer {
    return longFrame(Control.SND_UD, SECONDARY_ADDRESS, CI_SELECT, selectionData(address));
  }

  write(station: MbusStation): Promise<void> {
    return Promise.reject(new DriverError("unsupported", StatusCodes.BadNotWritable, `${station.key}: a meter's records are read-only`, false));
  }

  close(): Promise<void> {
    this.closed = true;
    this.finish({ kind: "closed", reason: "link closed" });
    return this.conn.close(new DriverError("closed", StatusCodes.BadCommunicationError, "link closed", false));
  }

  health(): MbusLinkHealth {
    return {
      connected: this.connected,
      requests: this.requests,
      errors: this.errors,
      lastError: this.lastError,
      lastRoundTrip: this.lastRoundTrip,
      state: LINK_STATE_NAMES[this.conn.state],
      timeouts: this.timeouts,
      corruptFrames: this.corruptFrames,
      lastCorruptFrame: this.lastCorruptFrame,
      discardedBytes: this.reader.discarded,
      queued: this.queued,
    };
  }

  /** Driver.countersOf: the meter's live counters. */
  countersOf(station: MbusStation): StationCounters | undefined {
    return this.stations.get(station.key);
  }

  /**
   * Runs `task` with the bus to itself, after what is queued: the readouts of the poll groups,
   * and the bus search (scan.ts), whose probes must not interleave with anyone's.
   */
  exclusive<T>(task: (bus: BusAccess) => Promise<T>): Promise<T> {
    if (this.closed) return Promise.reject(new DriverError("closed", StatusCodes.BadCommunicationError, "link closed", false));
    if (this.queued >= this.options.queueLimit) {
      this.errors++;
      return Promise.reject(new DriverError("overloaded", StatusCodes.BadResourceUnavailable, `link queue full (${this.options.queueLimit} readouts)`, true));
    }
    this.queued++;
    const run = () => task(this.access);
    const result = this.tail.then(run, run);
    this.tail = result.then(NOOP, NOOP);
    const done = () => void this.queued--;
    result.then(done, done);
    return result;
  }

  private readonly access: BusAccess = {
    probe: (address, timeout) => this.exchange(shortFrame(Control.SND_NKE, address), "ack", undefined, undefined, REQUEST_CHARS.short, timeout),
    select: (address, timeout) => this.exchange(this.selection(address), "ack", undefined, undefined, REQUEST_CHARS.selection, timeout),
    read: (address, telegrams, retries, timeout) => this.readout(address, telegrams, retries, timeout, new StationCounters(), `address ${address}`, undefined),
  };

  // --------------------------------------------------------------- readouts

  /**
   * REQ_UD2 to `address` until a telegram says no more records follow, or `telegrams` were read.
   * A meter selected by `selected` must answer with its own header (another meter answering is a
   * mismatched reply).
   */
  private async readout(address: number, telegrams: number, retries: number, timeout: number | undefined, counters: StationCounters, key: string, selected: SecondaryAddress | undefined): Promise<Readout> {
    const records: MbusRecord[] = [];
    let header: FixedHeader | undefined;
    let from = address;
    let read = 0;
    for (let t = 0; t < telegrams; t++) {
      const c = Control.REQ_UD2 | (counters.fcb ? Control.FCB : 0);
      const heard = await this.withRetries(retries, () => this.exchange(shortFrame(c, address), "answer", address === SECONDARY_ADDRESS ? undefined : address, counters, REQUEST_CHARS.short, timeout));
      if (heard.kind !== "answer") return { ok: false, error: this.failure(counters, key, heard, `REQ_UD2${telegrams > 1 ? ` (telegram ${t + 1})` : ""}`), heard: heard.kind };
      counters.fcb = !counters.fcb;
      const f = heard.frame;
      if ((f.c & 0x4f) !== Control.RSP_UD) return { ok: false, error: this.corrupt(counters, key, `an answer with C field ${f.c.toString(16).toUpperCase()}h, not RSP_UD`) };
      const decoded = decodeTelegram(f.ci, f.data, records.length);
      if (!decoded.ok) {
        if (decoded.reason === "application-error") {
          const busy = decoded.errorCode === APPLICATION_BUSY;
          return { ok: false, error: this.count(counters, new DriverError(busy ? "busy" : "deviceFailure", busy ? StatusCodes.BadResourceUnavailable : StatusCodes.BadDeviceFailure, `${key}: ${decoded.message}`, busy)) };
        }
        return { ok: false, error: this.corrupt(counters, key, `a telegram that does not decode: ${decoded.message}`) };
      }
      const tg = decoded.telegram;
      if (selected !== undefined && tg.header !== undefined && !matches(selected, tg.header)) {
        counters.mismatchedReplies++;
        return { ok: false, error: this.count(counters, new DriverError("malformed", StatusCodes.BadCommunicationError, `${key}: answered by meter ${tg.header.id} (${tg.header.manufacturer}), which the selection does not name`, true)) };
      }
      if (t === 0) {
        header = tg.header;
        from = f.a;
      }
      records.push(...tg.records);
      read++;
      if (!tg.moreRecordsFollow) break;
    }
    return { ok: true, reading: new MbusReading(header, records, read, from) };
  }

  private async withRetries(retries: number, attempt: () => Promise<Heard>): Promise<Heard> {
    let heard = await attempt();
    for (let i = 0; i < retries && (heard.kind === "silent" || heard.kind === "garbage"); i++) heard = await attempt();
    return heard;
  }

  /** The DriverError of an exchange that heard nothing good, counted for the meter. */
  private failure(counters: StationCounters, key: string, heard: Heard, what: string): DriverError {
    switch (heard.kind) {
      case "silent":
        counters.timeouts++;
        this.timeouts++;
        return this.count(counters, new DriverError("timeout", StatusCodes.BadCommunicationError, `${key}: no answer to ${what}`, true));
      case "garbage":
        return this.corrupt(counters, key, `${heard.reason} (in answer to ${what})`);
      case "closed":
        return this.count(counters, new DriverError("closed", StatusCodes.BadCommunicationError, `${key}: ${heard.reason}`, true));
      default:
        return this.count(counters, new DriverError("malformed", StatusCodes.BadCommunicationError, `${key}: an answer that is not one to ${what}`, true));
    }
  }

  private corrupt(counters: StationCounters, key: string, reason: string): DriverError {
    return this.count(counters, new DriverError("malformed", StatusCodes.BadCommunicationError, `${key}: corrupt answer: ${reason}; ${counters.corruptFrames} corrupt frame${counters.corruptFrames === 1 ? "" : "s"} so far`, true));
  }

  private count(counters: StationCounters, err: DriverError): DriverError {
    counters.errors++;
    counters.lastError = err.message;
    this.errors++;
    this.lastError = err.message;
    return err;
  }

  private countersFor(station: MbusStation): StationCounters {
    let c = this.stations.get(station.key);
    if (c === undefined) this.stations.set(station.key, (c = new StationCounters()));
    return c;
  }

  // -------------------------------------------------------------- exchanges

  /**
   * Sends `frame` and waits for what `expect`s: the single character, or a telegram (from
   * `from`, when given; others are mismatched replies). The wait for the first character is the
   * standard's at the bus speed (or `timeout`); after any character, a gap of ten characters
   * ends it. Bytes that make no frame make the result "garbage" when nothing good follows.
   */
  private async exchange(frame: Buffer, expect: "ack" | "answer", from: number | undefined, counters: StationCounters | undefined, requestChars: number, timeout: number | undefined): Promise<Heard> {
    try {
      await this.conn.connect();
    } catch (err) {
      return { kind: "closed", reason: err instanceof Error ? err.message : String(err) };
    }
    const stream = this.conn.stream;
    if (stream === null) return { kind: "closed", reason: "not connected" };
    const o = this.options;
    this.reader.clear();
    this.requests++;
    if (counters !== undefined) counters.requests++;
    const wait = timeout ?? firstCharacterTimeout(requestChars, o.busBaudRate, o.allowance);
    return new Promise<Heard>((resolve) => {
      this.pending = { expect, from, counters, resolve, gap: characterGap(o.busBaudRate, o.allowance), deadline: performance.now() + wait, garbage: undefined };
      this.arm(wait);
      stream.write(frame);
    });
  }

  private arm(ms: number): void {
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = setTimeout(onTimer, Math.max(1, Math.ceil(ms)), this);
    this.timer.unref();
  }

  /** @internal the wait of the exchange in flight ran out (or a gap after its last character) */
  timerFired(): void {
    this.timer = null;
    const p = this.pending;
    if (p === null) return;
    const now = performance.now();
    if (now < p.deadline - 1) return this.arm(p.deadline - now);
    const partial = this.reader.buffered;
    if (partial > 0) return this.finish({ kind: "garbage", reason: `an answer cut short after ${partial} bytes` });
    this.finish(p.garbage === undefined ? { kind: "silent" } : { kind: "garbage", reason: p.garbage });
  }

  private finish(heard: Heard): void {
    const p = this.pending;
    if (p === null) return;
    this.pending = null;
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    if (heard.kind === "garbage") {
      this.corruptFrames++;
      this.lastCorruptFrame = heard.reason;
      if (p.counters !== undefined) p.counters.corruptFrames++;
    }
    p.resolve(heard);
  }

  // ------------------------------------------------------------- connection

  /** @internal ConnectionOwner: bytes from the bus. */
  receive(_stream: LinkStream, chunk: Buffer): void {
    this.reader.push(chunk);
    const p = this.pending;
    if (p === null) return;
    for (let f = this.reader.next(); f !== undefined; f = this.reader.next()) {
      if (f.kind === "bad") {
        // The first reason names the frame; the scan past its start may find more "frames" in its bytes.
        p.garbage ??= f.reason;
        continue;
      }
      if (f.kind === "ack" && p.expect === "ack") return this.finish({ kind: "ack" });
      if (f.kind === "long" && p.expect === "answer") {
        if (p.from === undefined || f.a === p.from) return this.finish({ kind: "answer", frame: f });
        if (p.counters !== undefined) p.counters.mismatchedReplies++;
        p.garbage ??= `an answer from address ${f.a}`;
        continue;
      }
      // A short frame (a converter's echo of the request), or the other kind of answer.
      if (f.kind !== "short") p.garbage ??= f.kind === "ack" ? "a single character E5h where a telegram was due" : "a telegram where a single character was due";
    }
    // A character arrived: the answer has begun, or noise; wait a gap of characters more.
    p.deadline = Math.max(p.deadline, performance.now() + p.gap);
    if (this.timer === null) this.arm(p.gap);
  }

  /** @internal ConnectionOwner */
  connectionOpened(): void {
    this.reader.clear();
  }

  /** @internal ConnectionOwner */
  connectFailed(_err: DriverError): void {
    // The exchange that asked gets the refusal from connect().
  }

  /** @internal ConnectionOwner */
  connectionLost(reason: string): void {
    const why = this.conn.drop(reason) ?? `connection lost: ${reason}`;
    this.finish({ kind: "closed", reason: why });
  }
}
