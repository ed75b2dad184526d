// Commands from host applications (Sparkplug 3.0 §4.2.1.4 NCMD, §4.2.2.4 DCMD, §5.17).
//
// NCMD: `Node Control/Rebirth` = true asks for NBIRTH and every DBIRTH again (tck-id-operational-
// behavior-data-commands-rebirth-action-1..3); the node has no other writable metric.
//
// DCMD: each metric names a tag (by the alias of this session's DBIRTH, or by name) and a value.
// The write goes through the device namespace's node exactly as an OPC UA Write by a user of
// `writeRole` would: MemoryNamespace.write checks the node's AccessLevel (BadNotWritable), the
// device's writeRoles against the role (BadUserAccessDenied) and the Variant's type against the
// node's DataType (BadTypeMismatch); the node's write handler hands it to the device's poller,
// whose tag codec checks the EURange and the raw type's range (BadOutOfRange) before the device
// gets it (Part 4 §5.10.4). The answer is a DDATA of the tag's value after the write (the
// poller reads it back), also when the write was refused, so the host sees what is there. A
// refused write is logged and counted.
import type { DeviceNamespace } from "../address-space/device-namespace.js";
import type { RequestContext } from "../address-space/node-manager.js";
import { BuiltinType, VariantArrayType, type StatusCode, type Variant } from "../ua/builtins.js";
import { AttributeIds } from "../ua/generated/node-ids.js";
import { StatusCodes, statusCodeName } from "../ua/generated/status-codes.js";
import type { Role } from "../sessions/roles.js";
import { REBIRTH } from "./births.js";
import type { DeviceRecord } from "./device-records.js";
import { builtinOf } from "./metrics.js";
import { decodePayload, SparkplugDecodeError, type DecodedMetric } from "./sparkplug-codec.js";

export interface CommandHost {
  /** NCMD Node Control/Rebirth. */
  rebirth(): void;
  /** The record of a device that is born in this session. */
  bornDevice(name: string): DeviceRecord | undefined;
  /** Publishes the tag's current value at once (the answer to a DCMD). */
  answer(rec: DeviceRecord, index: number): void;
  log(message: string): void;
}

export interface CommandCounters {
  received: number;
  written: number;
  refused: number;
  malformed: number;
}

/** Log lines about refused commands: at most this many per minute, the rest only counted. */
const LOG_PER_MINUTE = 20;

export class CommandHandler {
  readonly counters: CommandCounters = { received: 0, written: 0, refused: 0, malformed: 0 };
  private readonly ctx: RequestContext | undefined;
  private logged = 0;
  private logWindow = 0;

  constructor(
    private readonly host: CommandHost,
    private readonly devices: DeviceNamespace,
    writeRole: Role | undefined,
  ) {
    this.ctx = writeRole === undefined ? undefined : { sessionId: "", role: writeRole, now: 0 };
  }

  /** An NCMD payload. */
  nodeCommand(payload: Buffer): void {
    const decoded = this.decode(payload, "NCMD");
    if (decoded === undefined) return;
    this.counters.received++;
    let rebirth = false;
    for (const m of decoded) {
      if (m.name === REBIRTH && m.kind === "boolean" && m.num === 1) rebirth = true;
      else this.refuse("NCMD", m.name ?? `alias ${m.alias ?? "?"}`, "not a writable node metric (only Node Control/Rebirth = true is)");
    }
    if (rebirth) this.host.rebirth();
  }

  /** A DCMD payload for `device`. */
  async deviceCommand(device: string, payload: Buffer): Promise<void> {
    const decoded = this.decode(payload, `DCMD ${device}`);
    if (decoded === undefined) return;
    this.counters.received++;
    const rec = this.host.bornDevice(device);
    if (rec === undefined) {
      this.refuse(`DCMD ${device}`, "", "no such device in this session (unknown, disabled or dead)");
      return;
    }
    const writes: Promise<void>[] = [];
    for (const m of decoded) writes.push(this.writeMetric(rec, m));
    await Promise.all(writes);
  }

  private async writeMetric(rec: DeviceRecord, m: DecodedMetric): Promise<void> {
    const index = m.alias !== undefined ? rec.byAlias.get(m.alias) : m.name !== undefined ? rec.byName.get(m.name) : undefined;
    const what = m.name ?? `alias ${m.alias ?? "?"}`;
    if (index === undefined) {
      this.refuse(`DCMD ${rec.name}`, what, statusCodeName(StatusCodes.BadNodeIdUnknown));
      return;
    }
    const tag = rec.tags[index]!.name;
    const before = rec.reports[index]!;
    let status: StatusCode;
    if (this.ctx === undefined) status = StatusCodes.BadUserAccessDenied;
    else {
      const variant = variantOf(m, m.datatype ?? rec.type(index));
      status = typeof variant === "number" ? variant : await this.write(rec.name, tag, variant);
    }
    if (status === StatusCodes.Good) this.counters.written++;
    else this.refuse(`DCMD ${rec.name}`, tag, this.ctx === undefined ? `${statusCodeName(status)} (no northbound.sparkplug.writeRole configured)` : statusCodeName(status));
    // The host learns the tag's value now, unless a DDATA already carried it since.
    if (rec.reports[index] === before) this.host.answer(rec, index);
  }

  private async write(device: string, tag: string, value: Variant): Promise<StatusCode> {
    const variable = this.devices.variable(device, tag);
    if (variable === undefined) return StatusCodes.BadNodeIdUnknown;
    const results: number[] = [StatusCodes.BadInternalError];
    const ctx = { ...this.ctx!, now: Date.now() };
    try {
      await this.devices.ns.write(ctx, [{ nodeId: variable.nodeId, attributeId: AttributeIds.Value, value: { value } }], results);
    } catch {
      return StatusCodes.BadInternalError;
    }
    return results[0]!;
  }

  private decode(payload: Buffer, what: string): DecodedMetric[] | undefined {
    try {
      return decodePayload(payload).metrics;
    } catch (err) {
      this.counters.malformed++;
      this.note(`${what} ignored: malformed Sparkplug payload (${err instanceof SparkplugDecodeError ? err.message : String(err)})`);
      return undefined;
    }
  }

  private refuse(what: string, metric: string, reason: string): void {
    this.counters.refused++;
    this.note(`${what} refused${metric === "" ? "" : `: ${metric}`}: ${reason}`);
  }

  private note(message: string): void {
    const minute = Math.floor(Date.now() / 60_000);
    if (minute !== this.logWindow) {
      if (this.logged > LOG_PER_MINUTE) this.host.log(`commands: ${this.logged - LOG_PER_MINUTE} more refused or malformed command(s) in the last minute, counted only`);
      this.logWindow = minute;
      this.logged = 0;
    }
    if (++this.logged <= LOG_PER_MINUTE) this.host.log(message);
  }
}

const INT_LIMITS: Partial<Record<BuiltinType, readonly [number, number]>> = {
  [BuiltinType.SByte]: [-128, 127],
  [BuiltinType.Byte]: [0, 255],
  [BuiltinType.Int16]: [-32768, 32767],
  [BuiltinType.UInt16]: [0, 65535],
  [BuiltinType.Int32]: [-2147483648, 2147483647],
  [BuiltinType.UInt32]: [0, 4294967295],
};

/**
 * The Variant a command metric writes, typed by its Sparkplug datatype (the tag's when the
 * command gives none, as §6.4.6 lets it), or the StatusCode that refuses it: no value or an
 * unknown datatype is BadTypeMismatch, an integer its datatype cannot hold BadOutOfRange.
 */
export function variantOf(m: DecodedMetric, datatype: number): Variant | StatusCode {
  const type = builtinOf(datatype);
  if (type === undefined || m.isNull || m.kind === "none") return StatusCodes.BadTypeMismatch;
  const scalar = (value: unknown): Variant => ({ dataType: type, arrayType: VariantArrayType.Scalar, value });
  switch (type) {
    case BuiltinType.Boolean:
      return m.kind === "boolean" ? scalar(m.num !== 0) : StatusCodes.BadTypeMismatch;
    case BuiltinType.String:
      return m.kind === "string" ? scalar(m.str) : StatusCodes.BadTypeMismatch;
    case BuiltinType.Float:
    case BuiltinType.Double:
      if (m.kind === "boolean" || m.kind === "string") return StatusCodes.BadTypeMismatch;
      return scalar(m.big !== undefined ? Number(BigInt.asIntN(64, m.big)) : m.kind === "int" ? m.num | 0 : m.num);
    case BuiltinType.Int64:
    case BuiltinType.UInt64: {
      if (m.kind !== "int" && m.kind !== "long") return StatusCodes.BadTypeMismatch;
      const raw = m.big ?? BigInt(m.num);
      // long_value is the 64-bit two's complement of an Int64 (§6.4.17); int_value of an Int32.
      const v = type === BuiltinType.Int64 ? (m.kind === "int" ? BigInt(m.num | 0) : BigInt.asIntN(64, raw)) : raw;
      return scalar(v);
    }
    default: {
      if (m.kind !== "int" && m.kind !== "long") return StatusCodes.BadTypeMismatch;
      const limits = INT_LIMITS[type]!;
      // int_value carries signed types as their 32-bit two's complement (§6.4.17).
      const signed = limits[0] < 0;
      const v = m.kind === "int" ? (signed ? m.num | 0 : m.num >>> 0) : m.big !== undefined ? Number(BigInt.asIntN(64, m.big)) : m.num;
      if (!(v >= limits[0] && v <= limits[1])) return StatusCodes.BadOutOfRange;
      return scalar(v);
    }
  }
}
