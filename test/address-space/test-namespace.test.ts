import { describe, expect, it } from "vitest";
import { NamespaceRegistry } from "../../src/address-space/namespace-registry.js";
import type { RequestContext } from "../../src/address-space/node-manager.js";
import { Ns0Manager } from "../../src/address-space/ns0-manager.js";
import { TEST_NAMESPACE_URI, createTestNamespace } from "../../src/testing/test-namespace.js";
import { BuiltinType, VariantArrayType, numericNodeId, stringNodeId, type DataValue } from "../../src/ua/builtins.js";
import { AttributeIds, ObjectIds } from "../../src/ua/generated/node-ids.js";
import { StatusCodes } from "../../src/ua/generated/status-codes.js";

const viewer: RequestContext = { sessionId: "v", role: "viewer", now: Date.UTC(2024, 5, 1) };

const SCALARS = ["Boolean", "SByte", "Byte", "Int16", "UInt16", "Int32", "UInt32", "Int64", "UInt64", "Float", "Double", "String",
  "DateTime", "Guid", "ByteString", "XmlElement", "NodeId", "ExpandedNodeId", "StatusCode", "QualifiedName", "LocalizedText"];

function setup() {
  const registry = new NamespaceRegistry();
  const ns0 = new Ns0Manager(registry, { applicationUri: "urn:x", buildInfo: { buildDate: 0 } });
  const ns = createTestNamespace(registry, ns0);
  return { registry, ns0, ns, index: registry.indexOf(TEST_NAMESPACE_URI) };
}

describe("test namespace", () => {
  it("registers urn:fieldgate:test with Test under Objects", () => {
    const { registry, ns0, ns, index } = setup();
    expect(index).toBe(1);
    expect(ns.namespaceIndex).toBe(index);
    const test = stringNodeId("Test", index);
    const fromObjects = ns0.references(numericNodeId(ObjectIds.ObjectsFolder))!;
    expect(fromObjects.some((r) => r.isForward && r.targetId.namespace === index && r.targetId.value === "Test")).toBe(true);
    expect(registry.managerFor(test)?.summary(test)?.browseName).toEqual({ namespaceIndex: index, name: "Test" });
    expect(() => createTestNamespace(new NamespaceRegistry(), ns0)).toThrow();
  });

  it("has one variable per built-in scalar type, with the matching DataType, and arrays", () => {
    const { ns, index } = setup();
    for (const [i, name] of SCALARS.entries()) {
      const v = ns.variable(`Scalar.${name}`);
      expect(v, name).toBeDefined();
      expect(v!.dataType).toEqual(numericNodeId(BuiltinType[name as keyof typeof BuiltinType]));
      expect(v!.value.value?.dataType, name).toBe(BuiltinType[name as keyof typeof BuiltinType]);
      expect(SCALARS[i]).toBe(name);
    }
    for (const name of ["Int32", "Double", "String", "Boolean", "Byte"]) {
      const v = ns.variable(stringNodeId(`Array.${name}`, index));
      expect(v?.valueRank, name).toBe(1);
      expect(v!.value.value?.arrayType).toBe(VariantArrayType.Array);
    }
  });

  it("lets anyone write the read/write variables and nobody the read-only one", () => {
    const { ns, index } = setup();
    const results: number[] = [];
    const write = (id: string, dataType: BuiltinType, value: unknown, arrayType = VariantArrayType.Scalar): void => {
      const dv: DataValue = { value: { dataType, arrayType, value } };
      ns.write(viewer, [{ nodeId: stringNodeId(id, index), attributeId: AttributeIds.Value, value: dv }], results);
    };
    write("Scalar.Double", BuiltinType.Double, 3.25);
    expect(results[0]).toBe(StatusCodes.Good);
    write("Scalar.Int64", BuiltinType.Int64, -5n);
    expect(results[0]).toBe(StatusCodes.Good);
    write("Scalar.Variant", BuiltinType.String, "anything");
    expect(results[0]).toBe(StatusCodes.Good);
    write("Array.String", BuiltinType.String, ["x", "y"], VariantArrayType.Array);
    expect(results[0]).toBe(StatusCodes.Good);
    write("Scalar.Int32", BuiltinType.Double, 1);
    expect(results[0]).toBe(StatusCodes.BadTypeMismatch);
    write("ReadOnly.Int32", BuiltinType.Int32, 1);
    expect(results[0]).toBe(StatusCodes.BadNotWritable);
    const out: DataValue[] = [];
    ns.read(viewer, [{ nodeId: stringNodeId("Scalar.Double", index), attributeId: AttributeIds.Value },
      { nodeId: stringNodeId("ReadOnly.Int32", index), attributeId: AttributeIds.Value }], out);
    expect(out[0].value?.value).toBe(3.25);
    expect(out[0].sourceTimestamp).toBe(viewer.now);
    expect(out[1].value?.value).toBe(42);
  });
});
