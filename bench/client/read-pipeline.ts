// The hot loop of the read scenario on one channel: a fixed number of Read requests in flight,
// each answered one refilled at once. Every request is one preallocated frame (a "slot"),
// encoded once by the generated codec; a send patches token id, sequence number and request id
// in place and writes the same Buffer again. A slot is rewritten only after its response came
// back, so the socket never holds a frame that is being patched. Responses are parsed only as
// far as the header, the service result and the result count; the first result is checked for
// a Bad status without a value (BadNodeIdUnknown and the like), and every 1024th response is
// decoded in full as a check on that shortcut. No closure, array or object is made per request.
import { BinaryReader } from "../../src/ua/binary-reader.js";
import { BinaryWriter } from "../../src/ua/binary-writer.js";
import { decodeDiagnosticInfo, decodeExtensionObject, decodeNodeId, encodeNodeId } from "../../src/ua/builtin-codec.js";
import { NULL_NODE_ID, numericNodeId, type ExtensionObject } from "../../src/ua/builtins.js";
import { TimestampsToReturn } from "../../src/ua/generated/enums.js";
import { ObjectIds } from "../../src/ua/generated/node-ids.js";
import { statusCodeName } from "../../src/ua/generated/status-codes.js";
import { decodeReadResponse, encodeReadRequest, type ReadValueId } from "../../src/ua/generated/types.js";
import type { MessageHandler, UaClientChannel } from "./channel.js";
import { Histogram } from "./histogram.js";
import { FrameKind, MSG_BODY_OFFSET, MSG_OFFSET_REQUEST_ID, MSG_OFFSET_SEQUENCE, MSG_OFFSET_TOKEN_ID } from "./ua-tcp.js";

export interface ReadPipelineOptions {
  nodesToRead: readonly ReadValueId[];
  /** Requests kept in flight on this channel. */
  outstanding: number;
  maxAge?: number;
  timestampsToReturn?: TimestampsToReturn;
  /**
   * Decode every Nth response in full with the generated decoder and check every result
   * (default 1024; 0 never), so that the minimal parse is checked, not trusted.
   */
  verifyEvery?: number;
}

const NO_ADDITIONAL_HEADER: ExtensionObject = Object.freeze({ typeId: NULL_NODE_ID, body: null });
/** A value no encoder would produce by accident: it locates requestHandle in the encoded template. */
const HANDLE_SENTINEL = 0x5a17c3e9;
const READ_RESPONSE = ObjectIds.ReadResponse_Encoding_DefaultBinary;
const SERVICE_FAULT = ObjectIds.ServiceFault_Encoding_DefaultBinary;
/** DataValue encoding mask bits (Part 6 §5.2.2.17). */
const DV_HAS_VALUE = 0x01;
const DV_HAS_STATUS = 0x02;

/** Severity Good (Part 4 §7.39: the top two bits); info bits and Good sub-codes are still Good. */
function isGood(status: number): boolean {
  return status >>> 30 === 0;
}

export class ReadPipeline implements MessageHandler {
  /** Latency of responses completed while `recording`, in microseconds. */
  readonly latency = new Histogram();
  /** Responses completed while `recording` (errors included). */
  completed = 0;
  /** Errors while `recording`. */
  errors = 0;
  /** Errors over the whole run, warm-up and drain included. */
  errorsTotal = 0;
  /** Count per error description (made only on the error path). */
  readonly errorKinds = new Map<string, number>();
  recording = false;
  inFlight = 0;
  /** The channel's fatal error, if it died under load. */
  channelError: Error | null = null;
  /** Responses decoded in full and checked result by result. */
  verified = 0;

  private readonly channel: UaClientChannel;
  private readonly slots: Buffer[];
  private readonly sentAt: Float64Array;
  private readonly slotRequestId: Uint32Array;
  private readonly expectedResults: number;
  private readonly reader = new BinaryReader();
  private running = false;
  private corked = false;
  private now = 0;
  /** Bodies of the intermediate chunks of the response being reassembled, or null. */
  private partialParts: Buffer[] | null = null;
  private partialRequestId = 0;
  private drained: (() => void) | null = null;
  private readonly verifyEvery: number;
  private untilVerify: number;

  constructor(channel: UaClientChannel, options: ReadPipelineOptions) {
    if (!(options.outstanding >= 1)) throw new RangeError("outstanding must be at least 1");
    this.channel = channel;
    this.expectedResults = options.nodesToRead.length;
    this.verifyEvery = options.verifyEvery ?? 1024;
    this.untilVerify = this.verifyEvery;
    const template = this.encodeTemplate(options);
    const handleAt = this.locateHandle(template);
    const n = options.outstanding;
    // One slab for all slots: one allocation, and the frames sit next to each other in memory.
    const slab = Buffer.allocUnsafe(template.length * n);
    this.slots = new Array<Buffer>(n);
    for (let i = 0; i < n; i++) {
      const slot = slab.subarray(i * template.length, (i + 1) * template.length);
      template.copy(slot);
      slot.writeUInt32LE(i, handleAt);
      this.slots[i] = slot;
    }
    this.sentAt = new Float64Array(n);
    this.slotRequestId = new Uint32Array(n);
  }

  get outstanding(): number {
    return this.slots.length;
  }

  /** Bytes of one request frame. */
  get requestSize(): number {
    return this.slots[0].length;
  }

  private encodeTemplate(options: ReadPipelineOptions): Buffer {
    return this.channel.encodeMessage(
      ObjectIds.ReadRequest_Encoding_DefaultBinary,
      encodeReadRequest,
      {
        requestHeader: {
          authenticationToken: this.channel.authenticationToken,
          timestamp: Date.now(),
          requestHandle: HANDLE_SENTINEL,
          returnDiagnostics: 0,
          auditEntryId: undefined,
          timeoutHint: 0,
          additionalHeader: NO_ADDITIONAL_HEADER,
        },
        maxAge: options.maxAge ?? 0,
        timestampsToReturn: options.timestampsToReturn ?? TimestampsToReturn.Both,
        nodesToRead: [...options.nodesToRead],
      },
      0,
      0,
    );
  }

  /** requestHandle follows the type id, the authenticationToken and the timestamp (Part 4 §7.28). */
  private locateHandle(template: Buffer): number {
    const w = new BinaryWriter(Buffer.allocUnsafe(256));
    encodeNodeId(w, numericNodeId(ObjectIds.ReadRequest_Encoding_DefaultBinary));
    encodeNodeId(w, this.channel.authenticationToken);
    const at = MSG_BODY_OFFSET + w.pos + 8;
    if (template.readUInt32LE(at) !== HANDLE_SENTINEL) throw new Error("ReadRequest template: requestHandle not where Part 4 puts it");
    return at;
  }

  /** Sends every slot: the pipeline is full from here on. */
  start(): void {
    this.running = true;
    this.channel.loadHandler = this;
    this.now = performance.now();
    this.channel.socket.cork();
    for (let i = 0; i < this.slots.length; i++) this.send(i);
    this.channel.socket.uncork();
  }

  /** Stops refilling; resolves once every request in flight is answered, or after `timeoutMs`. */
  stop(timeoutMs: number): Promise<number> {
    this.running = false;
    if (this.inFlight === 0 || this.channelError !== null) return Promise.resolve(this.inFlight);
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.drained = null;
        resolve(this.inFlight);
      }, timeoutMs);
      this.drained = () => {
        clearTimeout(timer);
        this.drained = null;
        resolve(0);
      };
    });
  }

  /** Starts a measurement window: clears what `recording` counts. */
  resetWindow(): void {
    this.latency.reset();
    this.completed = 0;
    this.errors = 0;
  }

  private send(slot: number): void {
    const ch = this.channel;
    const frame = this.slots[slot];
    const requestId = ++ch.requestId;
    // The token id may have changed by a renewal since this slot was last sent.
    frame.writeUInt32LE(ch.tokenId, MSG_OFFSET_TOKEN_ID);
    frame.writeUInt32LE(++ch.sequenceNumber, MSG_OFFSET_SEQUENCE);
    frame.writeUInt32LE(requestId, MSG_OFFSET_REQUEST_ID);
    this.slotRequestId[slot] = requestId;
    this.sentAt[slot] = this.now;
    this.inFlight++;
    ch.socket.write(frame);
  }

  beginBatch(): void {
    this.now = performance.now();
    if (this.running) {
      this.channel.socket.cork();
      this.corked = true;
    }
  }

  endBatch(): void {
    if (this.corked) {
      this.corked = false;
      this.channel.socket.uncork();
    }
  }

  onMessage(kind: FrameKind, buffer: Buffer, start: number, end: number): void {
    const requestId = buffer.readUInt32LE(start + MSG_OFFSET_REQUEST_ID);
    let b = buffer;
    let body = start + MSG_BODY_OFFSET;
    if (kind === FrameKind.MSGF) {
      if (this.partialParts !== null && this.partialRequestId === requestId) {
        // The last chunk of a multi-chunk response: parse the whole body at once.
        this.partialParts.push(buffer.subarray(body, end));
        b = Buffer.concat(this.partialParts);
        body = 0;
        end = b.length;
        this.partialParts = null;
        this.partialRequestId = 0;
      }
      let slot: number;
      if (--this.untilVerify === 0) {
        this.untilVerify = this.verifyEvery;
        slot = this.verifyResponse(b, body, end, requestId);
      } else {
        slot = this.parseResponse(b, body, end, requestId);
      }
      if (slot >= 0) this.complete(slot);
    } else if (kind === FrameKind.MSGC) {
      // Part 6 §6.7.2: intermediate chunks of a large response. Rare (a response over the 64 KiB
      // receive buffer), so the bodies are copied: they outlive the socket chunk.
      if (this.partialParts === null || this.partialRequestId !== requestId) {
        if (this.partialParts !== null) this.error("chunks of two responses interleaved");
        this.partialParts = [];
        this.partialRequestId = requestId;
      }
      this.partialParts.push(Buffer.from(buffer.subarray(body, end)));
    } else {
      // Abort chunk (Part 6 §6.7.3): Error then Reason; the response is abandoned.
      if (this.partialRequestId === requestId) {
        this.partialParts = null;
        this.partialRequestId = 0;
      }
      const status = end - body >= 4 ? buffer.readUInt32LE(body) : 0;
      this.error(`response aborted: ${statusCodeName(status)}`);
      const slot = this.slotOf(requestId, -1);
      if (slot >= 0) this.complete(slot);
    }
  }

  /**
   * Checks one response and returns its slot, or -1 when it matches no
   * request in flight (counted as an error).
   */
  private parseResponse(b: Buffer, p: number, end: number, requestId: number): number {
    // Type id: the FourByte form (ns 0, id <= 0xffff) is what every server sends for these.
    let typeId = -1;
    if (end - p >= 4 && b[p] === 0x01 && b[p + 1] === 0) {
      typeId = b.readUInt16LE(p + 2);
      p += 4;
    } else {
      return this.parseSlow(b, p, end, requestId);
    }
    // ResponseHeader: timestamp, requestHandle, serviceResult, then the common empty tail
    // (no DiagnosticInfo, null or empty stringTable, no additionalHeader); else the slow path.
    if (end - p < 24 || b[p + 16] !== 0 || b[p + 21] !== 0 || b[p + 22] !== 0 || b[p + 23] !== 0) {
      return this.parseSlow(b, p - 4, end, requestId);
    }
    const stringTable = b.readInt32LE(p + 17);
    if (stringTable > 0) return this.parseSlow(b, p - 4, end, requestId);
    const slot = this.slotOf(requestId, b.readUInt32LE(p + 8));
    const serviceResult = b.readUInt32LE(p + 12);
    p += 24;
    if (typeId === READ_RESPONSE) {
      if (!isGood(serviceResult)) {
        this.error(`Read serviceResult ${statusCodeName(serviceResult)}`);
      } else {
        this.checkResults(b, p, end);
      }
    } else if (typeId === SERVICE_FAULT) {
      this.error(`ServiceFault ${statusCodeName(serviceResult)}`);
    } else {
      this.error(`unexpected response type i=${typeId}`);
    }
    if (slot < 0) this.error("response to no request in flight");
    return slot;
  }

  private checkResults(b: Buffer, p: number, end: number): void {
    if (end - p < 4) {
      this.error("Read response without results");
      return;
    }
    const count = b.readInt32LE(p);
    if (count !== this.expectedResults) {
      this.error(`Read returned ${count} results for ${this.expectedResults} nodes`);
      return;
    }
    if (count > 0 && end - p >= 9) {
      const mask = b[p + 4];
      if ((mask & DV_HAS_VALUE) === 0 && (mask & DV_HAS_STATUS) !== 0) {
        const status = b.readUInt32LE(p + 5);
        if (!isGood(status)) this.error(`Read result ${statusCodeName(status)}`);
      }
    }
  }

  /** Any response header the fast path does not expect: decoded with the codec (allocates; rare). */
  private parseSlow(b: Buffer, p: number, end: number, requestId: number): number {
    const r = this.reader.setBuffer(b, p, end);
    let slot = -1;
    try {
      const encoding = r.readByte();
      let typeId: number;
      if (encoding === 0x00) typeId = r.readByte();
      else if (encoding === 0x01) {
        r.readByte();
        typeId = r.readUInt16();
      } else if (encoding === 0x02) {
        typeId = r.readUInt16() === 0 ? r.readUInt32() : -1;
      } else {
        throw new Error(`response type id encoding 0x${encoding.toString(16)}`);
      }
      r.readDateTime();
      slot = this.slotOf(requestId, r.readUInt32());
      const serviceResult = r.readUInt32();
      decodeDiagnosticInfo(r);
      const strings = r.readArrayLength(4);
      for (let i = 0; i < strings; i++) r.readString();
      decodeExtensionObject(r);
      if (typeId === SERVICE_FAULT) this.error(`ServiceFault ${statusCodeName(serviceResult)}`);
      else if (typeId !== READ_RESPONSE) this.error(`unexpected response type i=${typeId}`);
      else if (!isGood(serviceResult)) this.error(`Read serviceResult ${statusCodeName(serviceResult)}`);
      else this.checkResults(b, r.pos, end);
    } catch (err) {
      this.error(`undecodable response: ${(err as Error).message}`);
      if (slot < 0) slot = this.slotOf(requestId, -1);
    }
    if (slot < 0) this.error("response to no request in flight");
    return slot;
  }

  /** A full decode of one (single-chunk) response: every result must be Good and carry a value. */
  private verifyResponse(b: Buffer, p: number, end: number, requestId: number): number {
    const r = this.reader.setBuffer(b, p, end);
    let slot = -1;
    try {
      const typeId = decodeNodeId(r);
      if (typeId.namespace !== 0 || typeId.value !== READ_RESPONSE) return this.parseSlow(b, p, end, requestId);
      const response = decodeReadResponse(r);
      slot = this.slotOf(requestId, response.responseHeader.requestHandle);
      this.verified++;
      const results = response.results ?? [];
      if (!isGood(response.responseHeader.serviceResult)) {
        this.error(`Read serviceResult ${statusCodeName(response.responseHeader.serviceResult)}`);
      } else if (results.length !== this.expectedResults) {
        this.error(`Read returned ${results.length} results for ${this.expectedResults} nodes`);
      } else if (r.pos !== end) {
        this.error(`${end - r.pos} bytes after the ReadResponse`);
      } else {
        for (const dv of results) {
          const status = dv.statusCode ?? 0;
          if (!isGood(status)) this.error(`Read result ${statusCodeName(status)}`);
          else if (dv.value === undefined) this.error("Read result Good without a value");
        }
      }
    } catch (err) {
      this.error(`undecodable response: ${(err as Error).message}`);
      if (slot < 0) slot = this.slotOf(requestId, -1);
    }
    if (slot < 0) this.error("response to no request in flight");
    return slot;
  }

  /** The slot of a response: its requestHandle, confirmed by the request id; a scan when the server lost the handle. */
  private slotOf(requestId: number, handle: number): number {
    if (handle >= 0 && handle < this.slotRequestId.length && this.slotRequestId[handle] === requestId) return handle;
    for (let i = 0; i < this.slotRequestId.length; i++) {
      if (this.slotRequestId[i] === requestId) return i;
    }
    return -1;
  }

  private complete(slot: number): void {
    if (this.slotRequestId[slot] === 0) return;
    this.slotRequestId[slot] = 0;
    this.inFlight--;
    if (this.recording) {
      this.completed++;
      this.latency.record((this.now - this.sentAt[slot]) * 1000);
    }
    if (this.running) this.send(slot);
    else if (this.inFlight === 0 && this.drained !== null) this.drained();
  }

  private error(kind: string): void {
    this.errorsTotal++;
    if (this.recording) this.errors++;
    this.errorKinds.set(kind, (this.errorKinds.get(kind) ?? 0) + 1);
  }

  onChannelError(err: Error): void {
    this.channelError = err;
    this.running = false;
    this.error(`channel closed: ${err.message}`);
    if (this.drained !== null) this.drained();
  }
}
