// The test namespace: one writable variable per built-in scalar type, a few arrays and a
// read-only variable under Objects/Test, for interop tests and for poking at the server with a
// generic client (UaExpert, node-opcua). Anyone may write here, anonymous viewers included.
import {
  BuiltinType,
  NULL_NODE_ID,
  VariantArrayType,
  type NodeId,
  type Variant,
} from "../ua/builtins.js";
import { UaStatusError } from "../ua/errors.js";
import { ObjectIds } from "../ua/generated/node-ids.js";
import { StatusCodes } from "../ua/generated/status-codes.js";
import { MemoryNamespace, type Role } from "../address-space/memory-namespace.js";
import type { NamespaceRegistry } from "../address-space/namespace-registry.js";
import type { Ns0Manager } from "../address-space/ns0-manager.js";
import { AccessLevel } from "../address-space/ua-node.js";

export const TEST_NAMESPACE_URI = "urn:fieldgate:test";

const ANYONE: readonly Role[] = ["viewer", "operator", "admin"];
const READ_WRITE = AccessLevel.CurrentRead | AccessLevel.CurrentWrite | AccessLevel.StatusWrite | AccessLevel.TimestampWrite;
const EPOCH_2024 = Date.UTC(2024, 0, 1);

/** Initial value of each scalar test variable, by type. */
const SCALARS: ReadonlyArray<readonly [string, BuiltinType, unknown]> = [
  ["Boolean", BuiltinType.Boolean, false],
  ["SByte", BuiltinType.SByte, 0],
  ["Byte", BuiltinType.Byte, 0],
  ["Int16", BuiltinType.Int16, 0],
  ["UInt16", BuiltinType.UInt16, 0],
  ["Int32", BuiltinType.Int32, 0],
  ["UInt32", BuiltinType.UInt32, 0],
  ["Int64", BuiltinType.Int64, 0n],
  ["UInt64", BuiltinType.UInt64, 0n],
  ["Float", BuiltinType.Float, 0],
  ["Double", BuiltinType.Double, 0],
  ["String", BuiltinType.String, ""],
  ["DateTime", BuiltinType.DateTime, EPOCH_2024],
  ["Guid", BuiltinType.Guid, "00000000-0000-0000-0000-000000000000"],
  ["ByteString", BuiltinType.ByteString, Buffer.alloc(0)],
  ["XmlElement", BuiltinType.XmlElement, "<a/>"],
  ["NodeId", BuiltinType.NodeId, NULL_NODE_ID],
  ["ExpandedNodeId", BuiltinType.ExpandedNodeId, { nodeId: NULL_NODE_ID, serverIndex: 0 }],
  ["StatusCode", BuiltinType.StatusCode, StatusCodes.Good],
  ["QualifiedName", BuiltinType.QualifiedName, { namespaceIndex: 0, name: "" }],
  ["LocalizedText", BuiltinType.LocalizedText, { text: "" }],
  // BaseDataType: accepts a value of any type.
  ["Variant", BuiltinType.Variant, null],
];

const ARRAYS: ReadonlyArray<readonly [string, BuiltinType, readonly unknown[]]> = [
  ["Int32", BuiltinType.Int32, [1, 2, 3, 4, 5]],
  ["Double", BuiltinType.Double, [0.5, 1.5, 2.5]],
  ["String", BuiltinType.String, ["a", "b", "c"]],
  ["Boolean", BuiltinType.Boolean, [true, false]],
  ["Byte", BuiltinType.Byte, [0, 1, 2, 254, 255]],
];

/**
 * Registers `urn:fieldgate:test` with a MemoryNamespace and fills it: folder `Test` under
 * Objects holding `Scalar.<Type>`, `Array.<Type>` and `ReadOnly.Int32` (string NodeIds).
 * `ns0`, when given, must be the registry's namespace 0 manager (a guard against wiring two
 * registries).
 */
export function createTestNamespace(registry: NamespaceRegistry, ns0?: Ns0Manager): MemoryNamespace {
  if (ns0 !== undefined && registry.managerAt(0) !== ns0) {
    throw new UaStatusError(StatusCodes.BadInvalidState, "createTestNamespace: ns0 is not the registry's namespace 0 manager");
  }
  const ns = new MemoryNamespace(registry.register(TEST_NAMESPACE_URI), registry);
  registry.register(TEST_NAMESPACE_URI, ns);

  const folder: NodeId = ns.addFolder({
    nodeId: "Test",
    browseName: "Test",
    parent: { namespace: 0, idType: 0, value: ObjectIds.ObjectsFolder },
  }).nodeId;
  const scalars = ns.addFolder({ nodeId: "Scalar", browseName: "Scalar", parent: folder }).nodeId;
  const arrays = ns.addFolder({ nodeId: "Array", browseName: "Array", parent: folder }).nodeId;

  for (const [name, type, initial] of SCALARS) {
    const value: Variant =
      type === BuiltinType.Variant
        ? { dataType: BuiltinType.Null, arrayType: VariantArrayType.Scalar, value: null }
        : { dataType: type, arrayType: VariantArrayType.Scalar, value: initial };
    ns.addVariable({
      nodeId: `Scalar.${name}`,
      browseName: name,
      parent: scalars,
      dataType: type,
      value: { value, sourceTimestamp: EPOCH_2024 },
      accessLevel: READ_WRITE,
      writeRoles: ANYONE,
    });
  }
  for (const [name, type, initial] of ARRAYS) {
    ns.addVariable({
      nodeId: `Array.${name}`,
      browseName: name,
      parent: arrays,
      dataType: type,
      valueRank: 1,
      arrayDimensions: [0],
      value: { value: { dataType: type, arrayType: VariantArrayType.Array, value: initial.slice() }, sourceTimestamp: EPOCH_2024 },
      accessLevel: READ_WRITE,
      writeRoles: ANYONE,
    });
  }
  ns.addVariable({
    nodeId: "ReadOnly.Int32",
    browseName: "ReadOnlyInt32",
    parent: folder,
    dataType: BuiltinType.Int32,
    value: { value: { dataType: BuiltinType.Int32, arrayType: VariantArrayType.Scalar, value: 42 }, sourceTimestamp: EPOCH_2024 },
    accessLevel: AccessLevel.CurrentRead,
  });
  return ns;
}
