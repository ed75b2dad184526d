import { describe, expect, it } from "vitest";
import { NamespaceRegistry } from "../../src/address-space/namespace-registry.js";
import type { AttributeRead, RequestContext } from "../../src/address-space/node-manager.js";
import { Ns0Manager } from "../../src/address-space/ns0-manager.js";
import { Ns0Table } from "../../src/address-space/ns0-table.js";
import { BuiltinType, VariantArrayType, numericNodeId, type DataValue, type ExtensionObject, type NodeId } from "../../src/ua/builtins.js";
import { NodeClass, ServerState } from "../../src/ua/generated/enums.js";
import {
  AttributeIds,
  DataTypeIds,
  ObjectIds,
  ObjectTypeIds,
  ReferenceTypeIds,
  VariableIds,
  VariableTypeIds,
} from "../../src/ua/generated/node-ids.js";
import * as T from "../../src/ua/generated/ns0.js";
import { StatusCodes } from "../../src/ua/generated/status-codes.js";
import type { ServerStatusDataType } from "../../src/ua/generated/types.js";
import { nodeIdKey } from "../../src/ua/node-id.js";

const NOW = Date.UTC(2024, 5, 1, 12, 0, 0);
const ctx: RequestContext = { sessionId: "s", role: "viewer", now: NOW };
const id = (n: number): NodeId => numericNodeId(n);

function setup(): { registry: NamespaceRegistry; ns0: Ns0Manager } {
  const registry = new NamespaceRegistry();
  const ns0 = new Ns0Manager(registry, {
    applicationUri: "urn:fieldgate:test-server",
    startTime: NOW - 60_000,
    buildInfo: {
      productUri: "urn:fieldgate",
      manufacturerName: "fieldgate",
      productName: "fieldgate",
      softwareVersion: "0.1.0",
      buildNumber: "42",
      buildDate: NOW - 86_400_000,
    },
    capabilities: { maxNodesPerRead: 1000, maxNodesPerBrowse: 500, maxBrowseContinuationPoints: 10, maxArrayLength: 65536 },
  });
  return { registry, ns0 };
}

function read(ns0: Ns0Manager, nodeId: NodeId, attributeId: number = AttributeIds.Value): DataValue {
  const results: DataValue[] = [];
  ns0.read(ctx, [{ nodeId, attributeId }], results);
  return results[0];
}

describe("generated namespace 0", () => {
  // How fast it loads is the bench's to say (idle: start to listening), not a timed test's.
  it("has the expected size", () => {
    const table = new Ns0Table();
    expect(table.count).toBe(T.ns0Ids.length);
    expect(table.count).toBeGreaterThan(800);
    expect(table.count).toBeLessThan(1500);
  });

  it("has every reference target and both directions of every reference", () => {
    const ids = new Set(T.ns0Ids);
    const keys = new Set<string>();
    for (let p = 0; p < T.ns0Count; p++) {
      for (let k = T.ns0RefStart[p]; k < T.ns0RefStart[p + 1]; k += 2) {
        const target = Math.abs(T.ns0Refs[k + 1]);
        expect(ids.has(target), `target i=${target} of i=${T.ns0Ids[p]}`).toBe(true);
        expect(ids.has(T.ns0Refs[k])).toBe(true);
        keys.add(`${T.ns0Ids[p]}:${T.ns0Refs[k]}:${T.ns0Refs[k + 1]}`);
      }
    }
    for (const key of keys) {
      const [src, type, target] = key.split(":").map(Number);
      expect(keys.has(`${Math.abs(target)}:${type}:${target > 0 ? -src : src}`), key).toBe(true);
    }
  });

  it("lets a client browse everything from Root without dangling references", () => {
    const { registry } = setup();
    const seen = new Set<string | number>();
    const queue: NodeId[] = [id(ObjectIds.RootFolder)];
    seen.add(ObjectIds.RootFolder);
    while (queue.length > 0) {
      const node = queue.shift()!;
      const refs = registry.managerFor(node)!.references(node);
      expect(refs, `references of ${String(node.value)}`).toBeDefined();
      for (const r of refs!) {
        const s = registry.managerFor(r.targetId)?.summary(r.targetId);
        expect(s, `target ${String(r.targetId.value)} of ${String(node.value)}`).toBeDefined();
        if (!r.isForward || !registry.isHierarchical(r.referenceTypeId)) continue;
        const key = nodeIdKey(r.targetId);
        if (!seen.has(key)) {
          seen.add(key);
          queue.push(r.targetId);
        }
      }
    }
    // The Server object, the type trees and the capabilities are all reachable.
    for (const n of [ObjectIds.Server, VariableIds.Server_ServerStatus_CurrentTime, ObjectTypeIds.ServerType, DataTypeIds.Double,
      ReferenceTypeIds.HasComponent, VariableTypeIds.AnalogItemType, VariableIds.Server_ServerCapabilities_OperationLimits_MaxNodesPerRead]) {
      expect(seen.has(n), `i=${n} reachable`).toBe(true);
    }
    expect(seen.size).toBeGreaterThan(700);
  });

  it("keeps the types clients resolve", () => {
    const { ns0 } = setup();
    for (const n of [ObjectTypeIds.BaseObjectType, ObjectTypeIds.FolderType, VariableTypeIds.BaseVariableType,
      VariableTypeIds.BaseDataVariableType, VariableTypeIds.PropertyType, VariableTypeIds.DataItemType,
      VariableTypeIds.AnalogItemType, VariableTypeIds.BaseAnalogType, ObjectTypeIds.ServerType,
      VariableTypeIds.ServerStatusType, VariableTypeIds.BuildInfoType, ObjectTypeIds.ServerCapabilitiesType,
      ObjectTypeIds.OperationLimitsType, ObjectTypeIds.ModellingRuleType, ObjectIds.ModellingRule_Mandatory,
      ObjectIds.ModellingRule_Optional, ObjectIds.Server, ObjectIds.ViewsFolder]) {
      expect(ns0.summary(id(n)), `i=${n}`).toBeDefined();
    }
    expect(ns0.summary(id(ObjectIds.Server))!.typeDefinition).toEqual(id(ObjectTypeIds.ServerType));
  });
});

describe("reference type hierarchy", () => {
  const { registry } = setup();
  it("answers isSubtypeOf", () => {
    expect(registry.isSubtypeOf(id(ReferenceTypeIds.HasComponent), id(ReferenceTypeIds.HierarchicalReferences))).toBe(true);
    expect(registry.isSubtypeOf(id(ReferenceTypeIds.HasProperty), id(ReferenceTypeIds.Aggregates))).toBe(true);
    expect(registry.isSubtypeOf(id(ReferenceTypeIds.Organizes), id(ReferenceTypeIds.Organizes))).toBe(true);
    expect(registry.isSubtypeOf(id(ReferenceTypeIds.HasTypeDefinition), id(ReferenceTypeIds.HierarchicalReferences))).toBe(false);
    expect(registry.isSubtypeOf(id(ReferenceTypeIds.HierarchicalReferences), id(ReferenceTypeIds.HasComponent))).toBe(false);
    expect(registry.isSubtypeOf(id(DataTypeIds.UtcTime), id(DataTypeIds.DateTime))).toBe(true);
    expect(registry.isSubtypeOf(id(999999), id(ReferenceTypeIds.References))).toBe(false);
  });
  it("knows the hierarchical set and reference types", () => {
    expect(registry.isHierarchical(id(ReferenceTypeIds.Organizes))).toBe(true);
    expect(registry.isHierarchical(id(ReferenceTypeIds.HasSubtype))).toBe(true);
    expect(registry.isHierarchical(id(ReferenceTypeIds.HasTypeDefinition))).toBe(false);
    expect(registry.hierarchicalReferenceTypes.has(ReferenceTypeIds.HasProperty)).toBe(true);
    expect(registry.isReferenceType(id(ReferenceTypeIds.HasEncoding))).toBe(true);
    expect(registry.isReferenceType(id(ObjectIds.Server))).toBe(false);
  });
  it("maps DataTypes to built-in types", () => {
    expect(registry.builtinTypeOf(id(DataTypeIds.Duration))).toBe(BuiltinType.Double);
    expect(registry.builtinTypeOf(id(DataTypeIds.UtcTime))).toBe(BuiltinType.DateTime);
    expect(registry.builtinTypeOf(id(DataTypeIds.ServerState))).toBe(BuiltinType.Int32);
    expect(registry.builtinTypeOf(id(DataTypeIds.ServerStatusDataType))).toBe(BuiltinType.ExtensionObject);
    expect(registry.builtinTypeOf(id(DataTypeIds.Number))).toBe(BuiltinType.Variant);
    expect(registry.builtinTypeOf(id(DataTypeIds.LocaleId))).toBe(BuiltinType.String);
  });
});

describe("Ns0Manager attributes", () => {
  const { ns0 } = setup();
  const all = Array.from({ length: 27 }, (_, i) => i + 1);
  const readAll = (n: number): DataValue[] => {
    const items: AttributeRead[] = all.map((attributeId) => ({ nodeId: id(n), attributeId }));
    const results: DataValue[] = [];
    ns0.read(ctx, items, results);
    return results;
  };
  const ok = (dv: DataValue): unknown => {
    expect(dv.statusCode ?? StatusCodes.Good).toBe(StatusCodes.Good);
    return dv.value?.value;
  };
  const invalid = (dv: DataValue): void => expect(dv.statusCode).toBe(StatusCodes.BadAttributeIdInvalid);

  it("Object", () => {
    const r = readAll(ObjectIds.Server);
    expect(ok(r[0])).toEqual(id(ObjectIds.Server));
    expect(ok(r[1])).toBe(NodeClass.Object);
    expect(ok(r[2])).toEqual({ namespaceIndex: 0, name: "Server" });
    expect(ok(r[3])).toEqual({ text: "Server" });
    expect(r[4].value?.dataType).toBe(BuiltinType.LocalizedText);
    expect(ok(r[5])).toBe(0);
    expect(ok(r[6])).toBe(0);
    expect(ok(r[11])).toBe(1); // EventNotifier SubscribeToEvents
    for (const a of [8, 9, 10, 11, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23]) invalid(r[a - 1]);
  });

  it("Variable", () => {
    const r = readAll(VariableIds.Server_NamespaceArray);
    expect(ok(r[1])).toBe(NodeClass.Variable);
    expect(r[12].value?.arrayType).toBe(VariantArrayType.Array);
    expect(ok(r[13])).toEqual(id(DataTypeIds.String));
    expect(ok(r[14])).toBe(1);
    expect(ok(r[15])).toEqual([0]);
    expect(ok(r[16])).toBe(1);
    expect(ok(r[17])).toBe(1);
    expect(ok(r[18])).toBe(1000);
    expect(ok(r[19])).toBe(false);
    for (const a of [8, 9, 10, 11, 12, 21, 22, 23]) invalid(r[a - 1]);
    // EnabledFlag is writable in the spec; fieldgate serves ns0 read-only and says so.
    expect(ok(read(ns0, id(VariableIds.Server_ServerDiagnostics_EnabledFlag), AttributeIds.AccessLevel))).toBe(1);
  });

  it("ObjectType, VariableType, ReferenceType, DataType", () => {
    const ot = readAll(ObjectTypeIds.BaseObjectType);
    expect(ok(ot[1])).toBe(NodeClass.ObjectType);
    expect(ok(ot[7])).toBe(false);
    invalid(ot[12]);
    const vt = readAll(VariableTypeIds.BaseVariableType);
    expect(ok(vt[1])).toBe(NodeClass.VariableType);
    expect(ok(vt[7])).toBe(true);
    expect(ok(vt[13])).toEqual(id(DataTypeIds.BaseDataType));
    expect(ok(vt[14])).toBe(-2);
    expect(vt[12].statusCode ?? 0).toBe(StatusCodes.Good);
    invalid(vt[16]);
    const rt = readAll(ReferenceTypeIds.HasComponent);
    expect(ok(rt[1])).toBe(NodeClass.ReferenceType);
    expect(ok(rt[7])).toBe(false);
    expect(ok(rt[8])).toBe(false);
    expect(ok(rt[9])).toEqual({ text: "ComponentOf" });
    expect(ok(read(ns0, id(ReferenceTypeIds.References), AttributeIds.Symmetric))).toBe(true);
    const dt = readAll(DataTypeIds.ServerState);
    expect(ok(dt[1])).toBe(NodeClass.DataType);
    expect(ok(dt[7])).toBe(false);
    const def = ok(dt[22]) as ExtensionObject;
    expect(def.typeId).toEqual(id(ObjectIds.EnumDefinition_Encoding_DefaultBinary));
    expect((def.body as { fields: { name: string }[] }).fields.map((f) => f.name)[0]).toBe("Running");
    invalid(dt[12]);
    const st = ok(read(ns0, id(DataTypeIds.BuildInfo), AttributeIds.DataTypeDefinition)) as ExtensionObject;
    expect(st.typeId).toEqual(id(ObjectIds.StructureDefinition_Encoding_DefaultBinary));
    const body = st.body as { defaultEncodingId: NodeId; fields: { name: string; dataType: NodeId }[] };
    expect(body.defaultEncodingId).toEqual(id(ObjectIds.BuildInfo_Encoding_DefaultBinary));
    expect(body.fields.map((f) => f.name)).toEqual(["ProductUri", "ManufacturerName", "ProductName", "SoftwareVersion", "BuildNumber", "BuildDate"]);
    expect(body.fields[5].dataType).toEqual(id(DataTypeIds.UtcTime));
    invalid(read(ns0, id(DataTypeIds.Double), AttributeIds.DataTypeDefinition));
  });

  it("EnumStrings and EnumValues", () => {
    const strings = ok(read(ns0, id(VariableIds.ServerState_EnumStrings))) as { text: string }[];
    expect(strings.map((s) => s.text)).toEqual(["Running", "Failed", "NoConfiguration", "Suspended", "Shutdown", "Test", "CommunicationFault", "Unknown"]);
    const values = ok(read(ns0, id(VariableIds.NodeAttributesMask_EnumValues))) as ExtensionObject[];
    expect(values[0].typeId).toEqual(id(ObjectIds.EnumValueType_Encoding_DefaultBinary));
    expect((values[1].body as { value: bigint }).value).toBe(1n);
  });

  it("unknown nodes, attribute ids out of range", () => {
    expect(read(ns0, id(2300)).statusCode).toBe(StatusCodes.BadNodeIdUnknown);
    expect(read(ns0, { namespace: 0, idType: 1, value: "x" }).statusCode).toBe(StatusCodes.BadNodeIdUnknown);
    invalid(read(ns0, id(ObjectIds.Server), 0));
    invalid(read(ns0, id(ObjectIds.Server), 99));
    expect(ns0.references(id(2300))).toBeUndefined();
    expect(ns0.summary(id(2300))).toBeUndefined();
  });

  it("refuses every write", () => {
    const results: number[] = [];
    const value: DataValue = { value: { dataType: BuiltinType.Boolean, arrayType: VariantArrayType.Scalar, value: true } };
    ns0.write(ctx, [
      { nodeId: id(VariableIds.Server_ServerDiagnostics_EnabledFlag), attributeId: AttributeIds.Value, value },
      { nodeId: id(ObjectIds.Server), attributeId: AttributeIds.DisplayName, value },
      { nodeId: id(ObjectIds.Server), attributeId: AttributeIds.Value, value },
      { nodeId: id(2300), attributeId: AttributeIds.Value, value },
    ], results);
    expect(results).toEqual([StatusCodes.BadNotWritable, StatusCodes.BadNotWritable, StatusCodes.BadAttributeIdInvalid, StatusCodes.BadNodeIdUnknown]);
    const some: number[] = [9, 9, 9];
    const items = [
      { nodeId: id(ObjectIds.Server), attributeId: 4, value },
      { nodeId: id(ObjectIds.Server), attributeId: 4, value },
      { nodeId: id(2300), attributeId: 13, value },
    ];
    ns0.write(ctx, items, some, [2, 0]);
    expect(some).toEqual([StatusCodes.BadNotWritable, 9, StatusCodes.BadNodeIdUnknown]);
  });
});

describe("Server object live values", () => {
  it("ServerStatus and its children", () => {
    const { ns0 } = setup();
    const status = read(ns0, id(VariableIds.Server_ServerStatus));
    const eo = status.value!.value as ExtensionObject;
    expect(eo.typeId).toEqual(id(ObjectIds.ServerStatusDataType_Encoding_DefaultBinary));
    const body = eo.body as ServerStatusDataType;
    expect(body.currentTime).toBe(NOW);
    expect(body.startTime).toBe(NOW - 60_000);
    expect(body.state).toBe(ServerState.Running);
    expect(body.buildInfo.productName).toBe("fieldgate");
    expect(status.sourceTimestamp).toBe(NOW);
    expect(read(ns0, id(VariableIds.Server_ServerStatus_CurrentTime)).value!.value).toBe(NOW);
    expect(read(ns0, id(VariableIds.Server_ServerStatus_StartTime)).value!.value).toBe(NOW - 60_000);
    expect(read(ns0, id(VariableIds.Server_ServerStatus_State)).value).toEqual({ dataType: BuiltinType.Int32, arrayType: 0, value: 0 });
    expect(read(ns0, id(VariableIds.Server_ServerStatus_BuildInfo_BuildNumber)).value!.value).toBe("42");
    const bi = read(ns0, id(VariableIds.Server_ServerStatus_BuildInfo)).value!.value as ExtensionObject;
    expect(bi.typeId).toEqual(id(ObjectIds.BuildInfo_Encoding_DefaultBinary));
    ns0.setShutdown(5, { text: "maintenance" });
    expect(read(ns0, id(VariableIds.Server_ServerStatus_State)).value!.value).toBe(ServerState.Shutdown);
    expect(read(ns0, id(VariableIds.Server_ServerStatus_SecondsTillShutdown)).value!.value).toBe(5);
    expect(read(ns0, id(VariableIds.Server_ServerStatus_ShutdownReason)).value!.value).toEqual({ text: "maintenance" });
    expect(((read(ns0, id(VariableIds.Server_ServerStatus)).value!.value as ExtensionObject).body as ServerStatusDataType).secondsTillShutdown).toBe(5);
  });

  it("NamespaceArray follows the registry, ServerArray and ServiceLevel", () => {
    const { registry, ns0 } = setup();
    expect(read(ns0, id(VariableIds.Server_NamespaceArray)).value!.value).toEqual(["http://opcfoundation.org/UA/"]);
    registry.register("urn:x");
    expect(read(ns0, id(VariableIds.Server_NamespaceArray)).value!.value).toEqual(["http://opcfoundation.org/UA/", "urn:x"]);
    expect(read(ns0, id(VariableIds.Server_ServerArray)).value!.value).toEqual(["urn:fieldgate:test-server"]);
    expect(read(ns0, id(VariableIds.Server_ServiceLevel)).value).toMatchObject({ dataType: BuiltinType.Byte, value: 255 });
  });

  it("capabilities and operation limits from the options", () => {
    const { ns0 } = setup();
    const v = (n: number): unknown => read(ns0, id(n)).value;
    expect(v(VariableIds.Server_ServerCapabilities_OperationLimits_MaxNodesPerRead)).toEqual({ dataType: BuiltinType.UInt32, arrayType: 0, value: 1000 });
    expect(v(VariableIds.Server_ServerCapabilities_OperationLimits_MaxNodesPerBrowse)).toMatchObject({ value: 500 });
    expect(v(VariableIds.Server_ServerCapabilities_OperationLimits_MaxNodesPerWrite)).toMatchObject({ value: 0 });
    expect(v(VariableIds.Server_ServerCapabilities_MaxBrowseContinuationPoints)).toEqual({ dataType: BuiltinType.UInt16, arrayType: 0, value: 10 });
    expect(v(VariableIds.Server_ServerCapabilities_MaxArrayLength)).toMatchObject({ value: 65536 });
    expect(v(VariableIds.Server_ServerCapabilities_MinSupportedSampleRate)).toEqual({ dataType: BuiltinType.Double, arrayType: 0, value: 0 });
    expect(v(VariableIds.Server_ServerCapabilities_LocaleIdArray)).toEqual({ dataType: BuiltinType.String, arrayType: 1, value: ["en"] });
    expect(v(VariableIds.Server_ServerCapabilities_SoftwareCertificates)).toEqual({ dataType: BuiltinType.ExtensionObject, arrayType: 1, value: [] });
  });

  it("setValue, setValueSource and the change listener", () => {
    const { ns0 } = setup();
    const seen: number[] = [];
    ns0.onValueChange = (nodeId, dv) => seen.push(dv.value!.value as number);
    const n = id(VariableIds.Server_ServerDiagnostics_ServerDiagnosticsSummary_CurrentSessionCount);
    const dv: DataValue = { value: { dataType: BuiltinType.UInt32, arrayType: 0, value: 3 }, sourceTimestamp: NOW };
    ns0.setValue(n, dv);
    expect(read(ns0, n)).toBe(dv);
    expect(seen).toEqual([3]);
    ns0.setValueSource(id(VariableIds.Server_ServerDiagnostics_ServerDiagnosticsSummary_CumulatedSessionCount), (now) => ({
      value: { dataType: BuiltinType.UInt32, arrayType: 0, value: 7 },
      sourceTimestamp: now,
    }));
    const summary = read(ns0, id(VariableIds.Server_ServerDiagnostics_ServerDiagnosticsSummary)).value!.value as ExtensionObject;
    expect(summary.body).toMatchObject({ currentSessionCount: 3, cumulatedSessionCount: 7, rejectedRequestsCount: 0 });
    expect(() => ns0.setValue(id(ObjectIds.Server), dv)).toThrow();
    expect(() => ns0.setValue(id(2300), dv)).toThrow();
  });
});
