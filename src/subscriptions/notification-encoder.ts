// Encodes NotificationMessages (Part 4 §7.21) straight from the monitored items' queues into
// bytes: no MonitoredItemNotification or DataValue object is built per value. A Publish writes its
// message straight into the connection's ChunkWriter (subscription.ts writeResponse), so its bytes
// are written once, into the pool chunks they are sent from; a copy of them is kept in the
// retransmission queue and written into Republish responses unchanged (Part 4 §5.13.6: Republish
// returns the very message that was sent).
import { BinaryWriter } from "../ua/binary-writer.js";
import { encodeNodeId, encodeVariant } from "../ua/builtin-codec.js";
import { BuiltinType, numericNodeId, type NodeId } from "../ua/builtins.js";
import { TimestampsToReturn } from "../ua/generated/enums.js";
import { ObjectIds } from "../ua/generated/node-ids.js";
import { encodeResponseHeader, type ResponseHeader } from "../ua/generated/types.js";
import type { QueueSlot } from "./monitored-item.js";

/** PublishResponse with its NotificationMessage already encoded. */
export interface PublishResponseOut {
  responseHeader: ResponseHeader;
  subscriptionId: number;
  availableSequenceNumbers: readonly number[];
  moreNotifications: boolean;
  /** An encoded NotificationMessage. */
  message: Buffer;
  results: readonly number[];
}

export interface RepublishResponseOut {
  responseHeader: ResponseHeader;
  message: Buffer;
}

export function writeUInt32Array(w: BinaryWriter, a: readonly number[]): void {
  w.writeInt32(a.length);
  for (let i = 0; i < a.length; i++) w.writeUInt32(a[i]);
}

/** Same bytes as the generated encodePublishResponse (diagnosticInfos empty). */
export function encodePublishResponseOut(w: BinaryWriter, v: PublishResponseOut): void {
  encodeResponseHeader(w, v.responseHeader);
  w.writeUInt32(v.subscriptionId);
  writeUInt32Array(w, v.availableSequenceNumbers);
  w.writeBoolean(v.moreNotifications);
  w.writeBytes(v.message);
  writeUInt32Array(w, v.results);
  w.writeInt32(0);
}

export function encodeRepublishResponseOut(w: BinaryWriter, v: RepublishResponseOut): void {
  encodeResponseHeader(w, v.responseHeader);
  w.writeBytes(v.message);
}

const DATA_CHANGE_ID: NodeId = Object.freeze(numericNodeId(ObjectIds.DataChangeNotification_Encoding_DefaultBinary));
const STATUS_CHANGE_ID: NodeId = Object.freeze(numericNodeId(ObjectIds.StatusChangeNotification_Encoding_DefaultBinary));

const DV_VALUE = 0x01;
const DV_STATUS = 0x02;
const DV_SOURCE_TIMESTAMP = 0x04;
const DV_SERVER_TIMESTAMP = 0x08;
const DV_SOURCE_PICOSECONDS = 0x10;
/** Part 4 §7.39.1: InfoType DataValue (bit 10) with the Overflow bit (bit 7). */
export const OVERFLOW_INFO_BITS = 0x0400 | 0x0080;
const TWO_32 = 4294967296;
/** Part 6 §5.2.2.5: DateTime counts 100 ns ticks since 1601-01-01. */
const EPOCH_OFFSET_MS = 11644473600000;
const DATETIME_MAX_MS = 253402300799000;

// The values of one sampling pass share their timestamps, so a message repeats a few DateTimes
// thousands of times: the last two are kept encoded (one slot each for source and server time).
let timeA = NaN;
let loA = 0;
let hiA = 0;
let timeB = NaN;
let loB = 0;
let hiB = 0;
let nextSlotA = true;

/** BinaryWriter.writeDateTime with the conversion cached; same bytes. */
function writeTime(w: BinaryWriter, ms: number): void {
  let lo: number;
  let hi: number;
  if (ms === timeA) {
    lo = loA;
    hi = hiA;
  } else if (ms === timeB) {
    lo = loB;
    hi = hiB;
  } else {
    if (!(ms > -EPOCH_OFFSET_MS) || ms >= DATETIME_MAX_MS) {
      w.writeDateTime(ms);
      return;
    }
    const ticks = Math.round((ms + EPOCH_OFFSET_MS) * 10_000);
    hi = Math.floor(ticks / TWO_32);
    lo = ticks - hi * TWO_32;
    if (nextSlotA) {
      timeA = ms;
      loA = lo;
      hiA = hi;
    } else {
      timeB = ms;
      loB = lo;
      hiB = hi;
    }
    nextSlotA = !nextSlotA;
  }
  w.ensure(8);
  const b = w.buffer;
  b.writeUInt32LE(lo, w.pos);
  b.writeUInt32LE(hi, w.pos + 4);
  w.pos += 8;
}

/** A numeric scalar as a Variant, without making the Variant (or a bigint for 64-bit values). */
function writeNumberVariant(w: BinaryWriter, type: number, n: number): void {
  switch (type) {
    case BuiltinType.UInt64:
    case BuiltinType.Int64:
      if (n >= 0 && n < 2 ** 53) {
        w.ensure(9);
        const b = w.buffer;
        b[w.pos] = type;
        const lo = n % TWO_32;
        b.writeUInt32LE(lo, w.pos + 1);
        b.writeUInt32LE((n - lo) / TWO_32, w.pos + 5);
        w.pos += 9;
        return;
      }
      w.writeByte(type);
      if (type === BuiltinType.Int64) w.writeInt64(BigInt(Math.trunc(n)));
      else w.writeUInt64(BigInt(Math.trunc(n)));
      return;
    case BuiltinType.Double:
      w.writeByte(type);
      w.writeDouble(n);
      return;
    case BuiltinType.Float:
      w.writeByte(type);
      w.writeFloat(n);
      return;
    case BuiltinType.Boolean:
      w.writeByte(type);
      w.writeByte(n ? 1 : 0);
      return;
    case BuiltinType.SByte:
      w.writeByte(type);
      w.writeSByte(n);
      return;
    case BuiltinType.Byte:
      w.writeByte(type);
      w.writeByte(n);
      return;
    case BuiltinType.Int16:
      w.writeByte(type);
      w.writeInt16(n);
      return;
    case BuiltinType.UInt16:
      w.writeByte(type);
      w.writeUInt16(n);
      return;
    case BuiltinType.Int32:
      w.writeByte(type);
      w.writeInt32(n);
      return;
    default:
      w.writeByte(BuiltinType.UInt32);
      w.writeUInt32(n);
  }
}

/**
 * One MonitoredItemNotification (clientHandle, DataValue) from a queue slot, with the
 * timestamps the item asked for (Part 4 §7.40). Source timestamps belong to the Value attribute
 * only, as in Read.
 */
export function writeSlot(w: BinaryWriter, clientHandle: number, slot: QueueSlot, timestamps: TimestampsToReturn, isValue: boolean): void {
  w.ensure(5);
  w.buffer.writeUInt32LE(clientHandle >>> 0, w.pos);
  w.pos += 4;
  const dv = slot.dv;
  let status: number;
  let sourceTs: number | undefined;
  let sourcePs = 0;
  let hasValue: boolean;
  if (dv !== undefined) {
    status = dv.statusCode ?? 0;
    sourceTs = dv.sourceTimestamp;
    sourcePs = dv.sourcePicoseconds ?? 0;
    hasValue = dv.value !== undefined && dv.value !== null;
  } else {
    status = slot.status;
    sourceTs = slot.sourceTs;
    hasValue = true;
  }
  if (slot.overflow) status = (status | OVERFLOW_INFO_BITS) >>> 0;
  const withSource = isValue && sourceTs !== undefined && (timestamps === TimestampsToReturn.Source || timestamps === TimestampsToReturn.Both);
  const withServer = timestamps === TimestampsToReturn.Server || timestamps === TimestampsToReturn.Both;
  let mask = 0;
  if (hasValue) mask |= DV_VALUE;
  if (status !== 0) mask |= DV_STATUS;
  if (withSource) mask |= DV_SOURCE_TIMESTAMP;
  if (withSource && sourcePs !== 0) mask |= DV_SOURCE_PICOSECONDS;
  if (withServer) mask |= DV_SERVER_TIMESTAMP;
  w.buffer[w.pos++] = mask;
  if (hasValue) {
    if (dv !== undefined) encodeVariant(w, dv.value!);
    else writeNumberVariant(w, slot.type, slot.num);
  }
  if (mask & DV_STATUS) w.writeUInt32(status);
  if (withSource) {
    writeTime(w, sourceTs as number);
    if (sourcePs !== 0) w.writeUInt16(sourcePs);
  }
  if (withServer) writeTime(w, slot.serverTs);
}

/**
 * Writes one NotificationMessage at a time into a writer: `begin` (into the writer a response is
 * being encoded in: a connection's ChunkWriter, so the message's bytes are written once, in the
 * pool chunks they leave from) or `beginOwn` (into a writer of its own, for a message kept as
 * bytes: a StatusChangeNotification waiting for a Publish), then data changes
 * (`beginDataChanges`, `writeSlot` per value, `endDataChanges`) and/or a status change, then
 * `end` (or `finish`, which also returns a copy of a message of its own).
 *
 * Lengths and counts are filled in through the writer's marks, never by position, so a message
 * may span chunks; nothing written can be taken back, so a caller writes a DataChangeNotification
 * only when it has at least one notification for it.
 */
export class NotificationWriter {
  /** The writer of the message being written. */
  w: BinaryWriter;
  private readonly own: BinaryWriter;
  private start = 0;
  private countAt = -1;
  private parts = 0;
  private bodyAt = -1;
  private bodyStart = 0;
  private itemsAt = -1;
  /** Notifications written in the current DataChangeNotification. */
  items = 0;

  constructor(maxSize = 64 << 20) {
    this.own = new BinaryWriter(Buffer.allocUnsafe(256), maxSize);
    this.w = this.own;
  }

  /** Bytes of the message written so far. */
  get size(): number {
    return this.w.offset() - this.start;
  }

  /** Starts a message in `w` at its current position. */
  begin(w: BinaryWriter, sequenceNumber: number, publishTime: number): void {
    this.w = w;
    this.start = w.offset();
    w.writeUInt32(sequenceNumber);
    w.writeDateTime(publishTime);
    this.countAt = w.mark();
    w.writeInt32(0);
    this.parts = 0;
  }

  /** Starts a message in the writer's own buffer (see finish). */
  beginOwn(sequenceNumber: number, publishTime: number): void {
    this.begin(this.own.reset(), sequenceNumber, publishTime);
  }

  beginDataChanges(): void {
    const w = this.w;
    encodeNodeId(w, DATA_CHANGE_ID);
    w.writeByte(0x01);
    this.bodyAt = w.mark();
    w.writeInt32(0);
    this.bodyStart = w.offset();
    this.itemsAt = w.mark();
    w.writeInt32(0);
    this.items = 0;
  }

  /** Closes the DataChangeNotification (its count and length are filled in). */
  endDataChanges(): void {
    const w = this.w;
    w.writeInt32(0); // diagnosticInfos: none
    w.patchInt32(this.itemsAt, this.items);
    w.patchInt32(this.bodyAt, w.offset() - this.bodyStart);
    this.parts++;
  }

  /** A StatusChangeNotification (Part 4 §7.21.4) with no diagnostics. */
  statusChange(status: number): void {
    const w = this.w;
    encodeNodeId(w, STATUS_CHANGE_ID);
    w.writeByte(0x01);
    w.writeInt32(5);
    w.writeUInt32(status >>> 0);
    w.writeByte(0);
    this.parts++;
  }

  /** Another NotificationData was written after the data changes (an EventNotificationList, src/events). */
  addPart(): void {
    this.parts++;
  }

  get notificationCount(): number {
    return this.parts;
  }

  /** The message is complete: its count of NotificationData is filled in. */
  end(): void {
    this.w.patchInt32(this.countAt, this.parts);
    // The connection's writer is not held past its message (nor its connection past its close).
    this.w = this.own;
  }

  /** Ends a message begun with `beginOwn` and returns its bytes, copied. */
  finish(): Buffer {
    this.end();
    return Buffer.from(this.own.view());
  }
}

/** A keep-alive (Part 4 §7.21: no notifications, the next sequence number not consumed). */
export function keepAliveMessage(sequenceNumber: number, publishTime: number): Buffer {
  const w = new BinaryWriter(Buffer.allocUnsafe(16));
  w.writeUInt32(sequenceNumber);
  w.writeDateTime(publishTime);
  w.writeInt32(0);
  return w.buffer;
}
