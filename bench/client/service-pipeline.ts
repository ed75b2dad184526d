// The hot loop of the request/response scenarios (read, write, browse, the writer of sub) on one
// channel: a fixed number of requests in flight, each answered one refilled at once. The service
// is given as a `ServiceShape` (shapes.ts): how to encode the request once and how to check the
// results of a response.
//
// Every request is one preallocated frame (a "slot"), encoded once; a send patches token id,
// sequence number and request id (and the shape's changing values) in place and writes the same
// Buffer again. A slot is rewritten only after its response came back, so the socket never holds
// a frame that is being patched. Responses are parsed only as far as the header and the service
// result, then the shape checks the results without allocating; every Nth response is decoded
// in full as a check on that shortcut. No closure, array or object is made per request.
import { BinaryReader } from "../../src/ua/binary-reader.js";
import { BinaryWriter } from "../../src/ua/binary-writer.js";
import { decodeDiagnosticInfo, decodeExtensionObject, decodeNodeId, encodeNodeId } from "../../src/ua/builtin-codec.js";
import { NULL_NODE_ID, numericNodeId, type ExtensionObject } from "../../src/ua/builtins.js";
import { ObjectIds } from "../../src/ua/generated/node-ids.js";
import { statusCodeName } from "../../src/ua/generated/status-codes.js";
import type { RequestHeader } from "../../src/ua/generated/types.js";
import type { MessageHandler, UaClientChannel } from "./channel.js";
import { Histogram } from "./histogram.js";
import { FrameKind, MSG_BODY_OFFSET, MSG_OFFSET_REQUEST_ID, MSG_OFFSET_SEQUENCE, MSG_OFFSET_TOKEN_ID } from "./ua-tcp.js";

/** What a pipeline sends and how it checks the answers. One object per scenario, not per request. */
export interface ServiceShape {
  readonly service: string;
  readonly requestEncodingId: number;
  readonly responseEncodingId: number;
  /** Encodes the request structure (after its type id) with this header; called once per pipeline. */
  encode(w: BinaryWriter, header: RequestHeader): void;
  /**
   * Checks the results of a Good response, from the results array length at `p`. Returns an error
   * description or null; must not allocate when the results are fine.
   */
  checkResults(b: Buffer, p: number, end: number): string | null;
  /** Decodes the whole response body (after the type id) and checks it; an error description or null. */
  verify(r: BinaryReader): { requestHandle: number; error: string | null };
  /** Sees the encoded template once (to find the bytes `patch` rewrites). */
  prepare?(template: Buffer): void;
  /** Rewrites a slot's frame before its n-th send (n = 1, 2, ... per pipeline): values that change. */
  patch?(frame: Buffer, n: number): void;
}

export interface ServicePipelineOptions {
  shape: ServiceShape;
  outstanding: number;
  /** Decode every Nth response in full (default 1024; 0 never). */
  verifyEvery?: number;
}

const NO_ADDITIONAL_HEADER: ExtensionObject = Object.freeze({ typeId: NULL_NODE_ID, body: null });
const HANDLE_SENTINEL = 0x5a17c3e9;
const SERVICE_FAULT = ObjectIds.ServiceFault_Encoding_DefaultBinary;

/** Severity Good (Part 4 §7.39: the top two bits). */
export function isGood(status: number): boolean {
  return status >>> 30 === 0;
}

export class ServicePipeline implements MessageHandler {
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
  private readonly shape: ServiceShape;
  private readonly slots: Buffer[];
  private readonly sentAt: Float64Array;
  private readonly slotRequestId: Uint32Array;
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
  private sends = 0;

  constructor(channel: UaClientChannel, options: ServicePipelineOptions) {
    if (!(options.outstanding >= 1)) throw new RangeError("outstanding must be at least 1");
    this.channel = channel;
    this.shape = options.shape;
    this.verifyEvery = options.verifyEvery ?? 1024;
    this.untilVerify = this.verifyEvery;
    const header: RequestHeader = {
      authenticationToken: channel.authenticationToken,
      timestamp: Date.now(),
      requestHandle: HANDLE_SENTINEL,
      returnDiagnostics: 0,
      auditEntryId: undefined,
      timeoutHint: 0,
      additionalHeader: NO_ADDITIONAL_HEADER,
    };
    const template = channel.encodeMessage(this.shape.requestEncodingId, (w, h: RequestHeader) => this.shape.encode(w, h), header, 0, 0);
    const handleAt = this.locateHandle(template);
    this.shape.prepare?.(template);
    const n = options.outstanding;
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

  /** Bytes of one request frame. */
  get requestSize(): number {
    return this.slots[0].length;
  }

  /** requestHandle follows the type id, the authenticationToken and the timestamp (Part 4 §7.28). */
  private locateHandle(template: Buffer): number {
    const w = new BinaryWriter(Buffer.allocUnsafe(256));
    encodeNodeId(w, numericNodeId(this.shape.requestEncodingId));
    encodeNodeId(w, this.channel.authenticationToken);
    const at = MSG_BODY_OFFSET + w.pos + 8;
    if (template.readUInt32LE(at) !== HANDLE_SENTINEL) throw new Error(`${this.shape.service} template: requestHandle not where Part 4 puts it`);
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
    frame.writeUInt32LE(ch.tokenId, MSG_OFFSET_TOKEN_ID);
    frame.writeUInt32LE(++ch.sequenceNumber, MSG_OFFSET_SEQUENCE);
    frame.writeUInt32LE(requestId, MSG_OFFSET_REQUEST_ID);
    if (this.shape.patch !== undefined) this.shape.patch(frame, ++this.sends);
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
   * The header in its common form: a FourByte type id (ns 0, id <= 0xffff, what every server
   * sends for these), then timestamp, requestHandle, serviceResult and an empty tail (no
   * DiagnosticInfo, null or empty stringTable, no additionalHeader); anything else goes to the
   * codec's slow path. Returns the response's slot, or -1 when it matches no request in flight.
   */
  private parseResponse(b: Buffer, p: number, end: number, requestId: number): number {
    if (!(end - p >= 28 && b[p] === 0x01 && b[p + 1] === 0)) return this.parseSlow(b, p, end, requestId);
    const typeId = b.readUInt16LE(p + 2);
    const h = p + 4;
    if (b[h + 16] !== 0 || b[h + 21] !== 0 || b[h + 22] !== 0 || b[h + 23] !== 0 || b.readInt32LE(h + 17) > 0) {
      return this.parseSlow(b, p, end, requestId);
    }
    const slot = this.slotOf(requestId, b.readUInt32LE(h + 8));
    this.judge(typeId, b.readUInt32LE(h + 12), b, h + 24, end);
    if (slot < 0) this.error("response to no request in flight");
    return slot;
  }

  private judge(typeId: number, serviceResult: number, b: Buffer, p: number, end: number): void {
    if (typeId === this.shape.responseEncodingId) {
      if (!isGood(serviceResult)) this.error(`${this.shape.service} serviceResult ${statusCodeName(serviceResult)}`);
      else {
        const problem = this.shape.checkResults(b, p, end);
        if (problem !== null) this.error(problem);
      }
    } else if (typeId === SERVICE_FAULT) {
      this.error(`ServiceFault ${statusCodeName(serviceResult)}`);
    } else {
      this.error(`unexpected response type i=${typeId}`);
    }
  }

  private parseSlow(b: Buffer, p: number, end: number, requestId: number): number {
    const r = this.reader.setBuffer(b, p, end);
    let slot = -1;
    try {
      const typeId = decodeNodeId(r);
      const id = typeId.namespace === 0 && typeof typeId.value === "number" ? typeId.value : -1;
      r.readDateTime();
      slot = this.slotOf(requestId, r.readUInt32());
      const serviceResult = r.readUInt32();
      decodeDiagnosticInfo(r);
      const strings = r.readArrayLength(4);
      for (let i = 0; i < strings; i++) r.readString();
      decodeExtensionObject(r);
      this.judge(id, serviceResult, b, r.pos, end);
    } catch (err) {
      this.error(`undecodable response: ${(err as Error).message}`);
      if (slot < 0) slot = this.slotOf(requestId, -1);
    }
    if (slot < 0) this.error("response to no request in flight");
    return slot;
  }

  private verifyResponse(b: Buffer, p: number, end: number, requestId: number): number {
    const r = this.reader.setBuffer(b, p, end);
    let slot = -1;
    try {
      const typeId = decodeNodeId(r);
      if (typeId.namespace !== 0 || typeId.value !== this.shape.responseEncodingId) return this.parseSlow(b, p, end, requestId);
      const { requestHandle, error } = this.shape.verify(r);
      slot = this.slotOf(requestId, requestHandle);
      this.verified++;
      if (error !== null) this.error(error);
      else if (r.pos !== end) this.error(`${end - r.pos} bytes after the ${this.shape.service}Response`);
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
