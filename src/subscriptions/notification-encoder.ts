// Encodes NotificationMessages (Part 4 §7.21) straight from the monitored items' queues into
// bytes: no MonitoredItemNotification or DataValue object is built per value. The bytes are kept
// in the retransmission queue as they are and written into Publish and Republish responses
// unchanged (Part 4 §5.13.6: Republish returns the very message that was sent).
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

function writeUInt32Array(w: BinaryWriter, a: readonly number[]): void {
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
 * Builds one NotificationMessage at a time in a reused writer: `begin`, then data changes
 * (`beginDataChanges`, `writeSlot` per value, `endDataChanges`) and/or a status change, then
 * `finish` returns a copy of the bytes that outlives the writer.
 */
export class NotificationWriter {
  readonly w: BinaryWriter;
  private countAt = -1;
  private parts = 0;
  private eoAt = -1;
  private bodyAt = -1;
  private itemsAt = -1;
  /** Notifications written in the current DataChangeNotification. */
  items = 0;

  constructor(maxSize = 64 << 20) {
    this.w = new BinaryWriter(Buffer.allocUnsafe(1 << 16), maxSize);
  }

  get size(): number {
    return this.w.pos;
  }

  begin(sequenceNumber: number, publishTime: number): void {
    const w = this.w.reset();
    w.writeUInt32(sequenceNumber);
    w.writeDateTime(publishTime);
    this.countAt = w.pos;
    w.writeInt32(0);
    this.parts = 0;
  }

  beginDataChanges(): void {
    const w = this.w;
    this.eoAt = w.pos;
    encodeNodeId(w, DATA_CHANGE_ID);
    w.writeByte(0x01);
    this.bodyAt = w.pos;
    w.writeInt32(0);
    this.itemsAt = w.pos;
    w.writeInt32(0);
    this.items = 0;
  }

  /** Closes the DataChangeNotification; an empty one is taken back out of the message. */
  endDataChanges(): void {
    const w = this.w;
    if (this.items === 0) {
      w.pos = this.eoAt;
      return;
    }
    w.writeInt32(0); // diagnosticInfos: none
    w.buffer.writeInt32LE(this.items, this.itemsAt);
    w.buffer.writeInt32LE(w.pos - this.bodyAt - 4, this.bodyAt);
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

  /** The message bytes, copied. */
  finish(): Buffer {
    const w = this.w;
    w.buffer.writeInt32LE(this.parts, this.countAt);
    return Buffer.from(w.view());
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
