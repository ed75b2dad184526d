import { describe, expect, it } from "vitest";
import { MemoryNamespace, type MemoryVariable, type VariableOptions } from "../../src/address-space/memory-namespace.js";
import { NamespaceRegistry } from "../../src/address-space/namespace-registry.js";
import type { AttributeWrite, RequestContext } from "../../src/address-space/node-manager.js";
import { Ns0Manager } from "../../src/address-space/ns0-manager.js";
import { AccessLevel } from "../../src/address-space/ua-node.js";
import {
  BuiltinType,
  VariantArrayType,
  numericNodeId,
  stringNodeId,
  type DataValue,
  type NodeId,
  type Variant,
} from "../../src/ua/builtins.js";
import { NodeClass } from "../../src/ua/generated/enums.js";
import { AttributeIds, DataTypeIds, ObjectIds, ObjectTypeIds, ReferenceTypeIds, VariableTypeIds } from "../../src/ua/generated/node-ids.js";
import { StatusCodes } from "../../src/ua/generated/status-codes.js";

const NOW = Date.UTC(2024, 5, 1);
const operator: RequestContext = { sessionId: "a", role: "operator", now: NOW };
const viewer: RequestContext = { sessionId: "b", role: "viewer", now: NOW };
const RW = AccessLevel.CurrentRead | AccessLevel.CurrentWrite;

const scalar = (dataType: BuiltinType, value: unknown): Variant => ({ dataType, arrayType: VariantArrayType.Scalar, value });
const array = (dataType: BuiltinType, value: unknown[]): Variant => ({ dataType, arrayType: VariantArrayType.Array, value });

function setup(): { registry: NamespaceRegistry; ns0: Ns0Manager; ns: MemoryNamespace; folder: NodeId } {
  const registry = new NamespaceRegistry();
  const ns0 = new Ns0Manager(registry, { applicationUri: "urn:x", buildInfo: { buildDate: 0 } });
  const index = registry.register("urn:mem", (i, reg) => new MemoryNamespace(i, reg));
  const ns = registry.managerAt(index) as MemoryNamespace;
  const folder = ns.addFolder({ nodeId: "F", browseName: "F", parent: numericNodeId(ObjectIds.ObjectsFolder) }).nodeId;
  return { registry, ns0, ns, folder };
}

function variable(ns: MemoryNamespace, folder: NodeId, name: string, o: Partial<VariableOptions> & Pick<VariableOptions, "dataType">): MemoryVariable {
  return ns.addVariable({ nodeId: name, browseName: name, parent: folder, accessLevel: RW, ...o });
}

function write1(ns: MemoryNamespace, nodeId: NodeId, value: DataValue, ctx = operator, extra: Partial<AttributeWrite> = {}): number {
  const results: number[] = [];
  const r = ns.write(ctx, [{ nodeId, attributeId: AttributeIds.Value, value, ...extra }], results);
  expect(r).toBeUndefined();
  return results[0];
}

describe("MemoryNamespace structure", () => {
  it("hangs its folder under Objects with both directions visible", () => {
    const { registry, ns0, ns, folder } = setup();
    const objects = numericNodeId(ObjectIds.ObjectsFolder);
    const down = ns0.references(objects)!.find((r) => r.isForward && r.targetId === folder);
    expect(down?.referenceTypeId).toEqual(numericNodeId(ReferenceTypeIds.Organizes));
    const up = ns.references(folder)!.find((r) => !r.isForward);
    expect(up).toEqual({ referenceTypeId: numericNodeId(ReferenceTypeIds.Organizes), isForward: false, targetId: objects });
    expect(registry.managerFor(folder)).toBe(ns);
    expect(ns.summary(folder)).toEqual({
      nodeClass: NodeClass.Object,
      browseName: { namespaceIndex: 1, name: "F" },
      displayName: { text: "F" },
      typeDefinition: numericNodeId(ObjectTypeIds.FolderType),
    });
  });

  it("keeps parent and child references within the namespace, and registry.addReference links both ends", () => {
    const { registry, ns, folder } = setup();
    const v = variable(ns, folder, "V", { dataType: BuiltinType.Double });
    expect(ns.references(folder)!.some((r) => r.isForward && r.targetId === v.nodeId)).toBe(true);
    expect(ns.references(v.nodeId)!.some((r) => !r.isForward && r.targetId === folder)).toBe(true);
    const p = ns.addProperty(v.nodeId, { browseName: "EURange", dataType: DataTypeIds.Range });
    expect(p.nodeId).toEqual(stringNodeId("V.EURange", 1));
    expect(ns.summary(p.nodeId)!.typeDefinition).toEqual(numericNodeId(VariableTypeIds.PropertyType));
    registry.addReference(numericNodeId(ObjectIds.Server), numericNodeId(ReferenceTypeIds.HasNotifier), folder);
    expect(ns.references(folder)!.some((r) => !r.isForward && r.targetId.value === ObjectIds.Server)).toBe(true);
  });

  it("refuses duplicate ids, unknown parents and unknown DataTypes", () => {
    const { ns, folder } = setup();
    expect(() => ns.addFolder({ nodeId: "F", browseName: "F" })).toThrow(/exists/);
    expect(() => ns.addObject({ nodeId: "G", browseName: "G", parent: stringNodeId("nope", 1) })).toThrow();
    expect(() => ns.addObject({ nodeId: "G", browseName: "G", parent: numericNodeId(999999) })).toThrow();
    expect(() => variable(ns, folder, "X", { dataType: stringNodeId("MyType", 1) })).toThrow();
  });

  it("reads every attribute of Objects and Variables", () => {
    const { ns, folder } = setup();
    const v = variable(ns, folder, "V", { dataType: BuiltinType.Double, value: scalar(BuiltinType.Double, 1.5), minimumSamplingInterval: 100, description: "d" });
    const results: DataValue[] = [];
    const attrs = Array.from({ length: 23 }, (_, i) => i + 1);
    ns.read(viewer, attrs.map((attributeId) => ({ nodeId: v.nodeId, attributeId })), results);
    const val = (a: number): unknown => results[a - 1].value?.value;
    expect(val(AttributeIds.NodeId)).toEqual(stringNodeId("V", 1));
    expect(val(AttributeIds.NodeClass)).toBe(NodeClass.Variable);
    expect(val(AttributeIds.Description)).toEqual({ text: "d" });
    expect(results[AttributeIds.Value - 1]).toBe(v.value);
    expect(val(AttributeIds.DataType)).toEqual(numericNodeId(DataTypeIds.Double));
    expect(val(AttributeIds.ValueRank)).toBe(-1);
    expect(val(AttributeIds.AccessLevel)).toBe(RW);
    expect(val(AttributeIds.UserAccessLevel)).toBe(AccessLevel.CurrentRead); // viewers may not write by default
    expect(val(AttributeIds.MinimumSamplingInterval)).toBe(100);
    expect(val(AttributeIds.Historizing)).toBe(false);
    for (const a of [8, 9, 10, 11, 12, 21, 22, 23]) expect(results[a - 1].statusCode).toBe(StatusCodes.BadAttributeIdInvalid);
    const o: DataValue[] = [];
    ns.read(operator, [{ nodeId: folder, attributeId: AttributeIds.EventNotifier }, { nodeId: folder, attributeId: AttributeIds.Value },
      { nodeId: stringNodeId("nope", 1), attributeId: 1 }, { nodeId: stringNodeId("V", 7), attributeId: 1 }, { nodeId: v.nodeId, attributeId: AttributeIds.UserAccessLevel }], o);
    expect(o[0].value?.value).toBe(0);
    expect(o[1].statusCode).toBe(StatusCodes.BadAttributeIdInvalid);
    expect(o[2].statusCode).toBe(StatusCodes.BadNodeIdUnknown);
    expect(o[3].statusCode).toBe(StatusCodes.BadNodeIdUnknown);
    expect(o[4].value?.value).toBe(RW);
  });
});

describe("MemoryNamespace writes (Part 4 §5.10.4)", () => {
  it("stores a well-typed value with the request time and notifies the listener", () => {
    const { ns, folder } = setup();
    const v = variable(ns, folder, "V", { dataType: BuiltinType.Int32, value: scalar(BuiltinType.Int32, 0) });
    const seen: unknown[] = [];
    ns.onValueChange = (node, dv) => seen.push([node.nodeId.value, dv.value?.value]);
    expect(write1(ns, v.nodeId, { value: scalar(BuiltinType.Int32, 7) })).toBe(StatusCodes.Good);
    expect(v.value.value?.value).toBe(7);
    expect(v.value.sourceTimestamp).toBe(NOW);
    expect(seen).toEqual([["V", 7]]);
  });

  it("BadTypeMismatch for the wrong built-in type, array-ness or rank", () => {
    const { ns, folder } = setup();
    const i32 = variable(ns, folder, "I", { dataType: BuiltinType.Int32 });
    const arr = variable(ns, folder, "A", { dataType: BuiltinType.Double, valueRank: 1 });
    const any = variable(ns, folder, "Any", { dataType: BuiltinType.Variant, valueRank: -2 });
    const m = StatusCodes.BadTypeMismatch;
    expect(write1(ns, i32.nodeId, { value: scalar(BuiltinType.UInt32, 1) })).toBe(m);
    expect(write1(ns, i32.nodeId, { value: scalar(BuiltinType.Double, 1) })).toBe(m);
    expect(write1(ns, i32.nodeId, { value: array(BuiltinType.Int32, [1]) })).toBe(m);
    expect(write1(ns, i32.nodeId, { value: scalar(BuiltinType.Null, null) })).toBe(m);
    expect(write1(ns, i32.nodeId, {})).toBe(m);
    expect(write1(ns, arr.nodeId, { value: scalar(BuiltinType.Double, 1) })).toBe(m);
    expect(write1(ns, arr.nodeId, { value: array(BuiltinType.Float, [1]) })).toBe(m);
    expect(write1(ns, arr.nodeId, { value: { dataType: BuiltinType.Double, arrayType: VariantArrayType.Matrix, value: [1, 2, 3, 4], dimensions: [2, 2] } })).toBe(m);
    expect(write1(ns, arr.nodeId, { value: array(BuiltinType.Double, [1, 2]) })).toBe(StatusCodes.Good);
    expect(write1(ns, any.nodeId, { value: scalar(BuiltinType.String, "x") })).toBe(StatusCodes.Good);
    expect(write1(ns, any.nodeId, { value: scalar(BuiltinType.Null, null) })).toBe(StatusCodes.Good);
  });

  it("abstract and derived DataTypes: Number, Integer, UInteger, enumerations, UtcTime", () => {
    const { ns, folder } = setup();
    const num = variable(ns, folder, "N", { dataType: numericNodeId(DataTypeIds.Number) });
    const int = variable(ns, folder, "I", { dataType: numericNodeId(DataTypeIds.Integer) });
    const uint = variable(ns, folder, "U", { dataType: numericNodeId(DataTypeIds.UInteger) });
    const en = variable(ns, folder, "E", { dataType: numericNodeId(DataTypeIds.ServerState) });
    const t = variable(ns, folder, "T", { dataType: numericNodeId(DataTypeIds.UtcTime) });
    expect(write1(ns, num.nodeId, { value: scalar(BuiltinType.Float, 1) })).toBe(StatusCodes.Good);
    expect(write1(ns, num.nodeId, { value: scalar(BuiltinType.String, "1") })).toBe(StatusCodes.BadTypeMismatch);
    expect(write1(ns, int.nodeId, { value: scalar(BuiltinType.Int64, 1n) })).toBe(StatusCodes.Good);
    expect(write1(ns, int.nodeId, { value: scalar(BuiltinType.UInt16, 1) })).toBe(StatusCodes.BadTypeMismatch);
    expect(write1(ns, uint.nodeId, { value: scalar(BuiltinType.Byte, 1) })).toBe(StatusCodes.Good);
    expect(write1(ns, uint.nodeId, { value: scalar(BuiltinType.Int32, 1) })).toBe(StatusCodes.BadTypeMismatch);
    expect(write1(ns, en.nodeId, { value: scalar(BuiltinType.Int32, 1) })).toBe(StatusCodes.Good);
    expect(write1(ns, en.nodeId, { value: scalar(BuiltinType.UInt32, 1) })).toBe(StatusCodes.BadTypeMismatch);
    expect(write1(ns, t.nodeId, { value: scalar(BuiltinType.DateTime, NOW) })).toBe(StatusCodes.Good);
  });

  it("ByteString and Byte[] are interchangeable and stored in the variable's form", () => {
    const { ns, folder } = setup();
    const bs = variable(ns, folder, "BS", { dataType: BuiltinType.ByteString });
    const ba = variable(ns, folder, "BA", { dataType: BuiltinType.Byte, valueRank: 1 });
    expect(write1(ns, bs.nodeId, { value: array(BuiltinType.Byte, [1, 2]) })).toBe(StatusCodes.Good);
    expect(bs.value.value).toEqual(scalar(BuiltinType.ByteString, Buffer.from([1, 2])));
    expect(write1(ns, ba.nodeId, { value: scalar(BuiltinType.ByteString, Buffer.from([3])) })).toBe(StatusCodes.Good);
    expect(ba.value.value).toEqual(array(BuiltinType.Byte, [3]));
  });

  it("BadNotWritable, BadUserAccessDenied, BadAttributeIdInvalid, BadNodeIdUnknown", () => {
    const { ns, folder } = setup();
    const ro = variable(ns, folder, "RO", { dataType: BuiltinType.Int32, accessLevel: AccessLevel.CurrentRead });
    const rw = variable(ns, folder, "RW", { dataType: BuiltinType.Int32 });
    const adminOnly = variable(ns, folder, "AD", { dataType: BuiltinType.Int32, writeRoles: ["admin"] });
    const v = { value: scalar(BuiltinType.Int32, 1) };
    expect(write1(ns, ro.nodeId, v)).toBe(StatusCodes.BadNotWritable);
    expect(write1(ns, rw.nodeId, v, viewer)).toBe(StatusCodes.BadUserAccessDenied);
    expect(write1(ns, adminOnly.nodeId, v)).toBe(StatusCodes.BadUserAccessDenied);
    expect(write1(ns, adminOnly.nodeId, v, { ...operator, role: "admin" })).toBe(StatusCodes.Good);
    expect(write1(ns, rw.nodeId, v, operator, { attributeId: AttributeIds.DisplayName })).toBe(StatusCodes.BadNotWritable);
    expect(write1(ns, rw.nodeId, v, operator, { attributeId: AttributeIds.EventNotifier })).toBe(StatusCodes.BadAttributeIdInvalid);
    expect(write1(ns, folder, v)).toBe(StatusCodes.BadAttributeIdInvalid);
    expect(write1(ns, stringNodeId("nope", 1), v)).toBe(StatusCodes.BadNodeIdUnknown);
  });

  it("StatusCode and timestamps only where AccessLevel allows them (else BadWriteNotSupported)", () => {
    const { ns, folder } = setup();
    const plain = variable(ns, folder, "P", { dataType: BuiltinType.Int32 });
    const full = variable(ns, folder, "F2", { dataType: BuiltinType.Int32, accessLevel: RW | AccessLevel.StatusWrite | AccessLevel.TimestampWrite });
    const value = scalar(BuiltinType.Int32, 5);
    const ts = NOW - 1000;
    expect(write1(ns, plain.nodeId, { value, statusCode: StatusCodes.UncertainLastUsableValue })).toBe(StatusCodes.BadWriteNotSupported);
    expect(write1(ns, plain.nodeId, { value, sourceTimestamp: ts })).toBe(StatusCodes.BadWriteNotSupported);
    expect(write1(ns, plain.nodeId, { value, statusCode: StatusCodes.Good })).toBe(StatusCodes.Good);
    expect(write1(ns, full.nodeId, { value, serverTimestamp: ts })).toBe(StatusCodes.BadWriteNotSupported);
    expect(write1(ns, full.nodeId, { value, statusCode: StatusCodes.UncertainLastUsableValue, sourceTimestamp: ts })).toBe(StatusCodes.Good);
    expect(full.value).toMatchObject({ statusCode: StatusCodes.UncertainLastUsableValue, sourceTimestamp: ts });
  });

  it("index ranges merge into the current value", () => {
    const { ns, folder } = setup();
    const a = variable(ns, folder, "A", { dataType: BuiltinType.Int32, valueRank: 1, value: array(BuiltinType.Int32, [1, 2, 3, 4]) });
    expect(write1(ns, a.nodeId, { value: array(BuiltinType.Int32, [8, 9]) }, operator, { indexRange: "1:2" })).toBe(StatusCodes.Good);
    expect(a.value.value?.value).toEqual([1, 8, 9, 4]);
    expect(write1(ns, a.nodeId, { value: array(BuiltinType.Int32, [8]) }, operator, { indexRange: "1:2" })).toBe(StatusCodes.BadIndexRangeDataMismatch);
    expect(write1(ns, a.nodeId, { value: array(BuiltinType.Int32, [8]) }, operator, { indexRange: "x" })).toBe(StatusCodes.BadIndexRangeInvalid);
    expect(write1(ns, a.nodeId, { value: array(BuiltinType.Double, [8]) }, operator, { indexRange: "0" })).toBe(StatusCodes.BadTypeMismatch);
  });

  it("write handlers: sync, async, failing; results land in their slots", async () => {
    const { ns, folder } = setup();
    const got: unknown[] = [];
    const sync = variable(ns, folder, "S", { dataType: BuiltinType.Int32, onWrite: (_c, v, dv) => (got.push([v.nodeId.value, dv.value?.value]), StatusCodes.GoodCompletesAsynchronously) });
    const slow = variable(ns, folder, "A", {
      dataType: BuiltinType.Int32,
      onWrite: (_c, _v, dv) => new Promise<number>((resolve) => setTimeout(() => resolve(dv.value?.value === 1 ? StatusCodes.Good : StatusCodes.BadOutOfRange), 5)),
    });
    const broken = variable(ns, folder, "B", { dataType: BuiltinType.Int32, onWrite: () => Promise.reject(new Error("device gone")) });
    const v = (n: number): DataValue => ({ value: scalar(BuiltinType.Int32, n) });
    const results: number[] = [0, 0, 0, 0, 0];
    const items: AttributeWrite[] = [
      { nodeId: slow.nodeId, attributeId: 13, value: v(1) },
      { nodeId: sync.nodeId, attributeId: 13, value: v(2) },
      { nodeId: slow.nodeId, attributeId: 13, value: v(3) },
      { nodeId: broken.nodeId, attributeId: 13, value: v(4) },
      { nodeId: sync.nodeId, attributeId: 13, value: { value: scalar(BuiltinType.String, "x") } },
    ];
    const r = ns.write(operator, items, results, [0, 1, 2, 3, 4]);
    expect(r).toBeInstanceOf(Promise);
    await r;
    expect(results).toEqual([StatusCodes.Good, StatusCodes.GoodCompletesAsynchronously, StatusCodes.BadOutOfRange, StatusCodes.BadInternalError, StatusCodes.BadTypeMismatch]);
    expect(got).toEqual([["S", 2]]);
    // A handler owns the value: nothing was stored.
    expect(sync.value.value?.dataType).toBe(BuiltinType.Null);
  });

  it("setValue replaces the stored DataValue as is", () => {
    const { ns, folder } = setup();
    const v = variable(ns, folder, "V", { dataType: BuiltinType.Double });
    const dv: DataValue = { value: scalar(BuiltinType.Double, 2), sourceTimestamp: NOW, statusCode: StatusCodes.BadCommunicationError };
    let calls = 0;
    ns.onValueChange = () => calls++;
    ns.setValue(v, dv);
    ns.setValue(stringNodeId("V", 1), dv);
    const out: DataValue[] = [];
    ns.read(viewer, [{ nodeId: v.nodeId, attributeId: AttributeIds.Value }], out);
    expect(out[0]).toBe(dv);
    expect(calls).toBe(2);
    expect(() => ns.setValue(stringNodeId("F", 1), dv)).toThrow();
  });
});
