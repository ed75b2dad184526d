// Attributes of the node classes namespace 0 does not exercise (Method, View), and the table of
// attributes per NodeClass (Part 3 §5).
import { describe, expect, it } from "vitest";
import { NodeClassMask } from "../../src/address-space/node-manager.js";
import { hasAttribute, readNonValueAttribute, summarize, type UaNode } from "../../src/address-space/ua-node.js";
import { BuiltinType, stringNodeId } from "../../src/ua/builtins.js";
import { AttributeIds } from "../../src/ua/generated/node-ids.js";
import { StatusCodes } from "../../src/ua/generated/status-codes.js";

function node(nodeClass: NodeClassMask, extra: Partial<UaNode> = {}): UaNode {
  return {
    nodeId: stringNodeId("n", 1),
    nodeClass,
    browseName: { namespaceIndex: 1, name: "n" },
    displayName: { text: "N" },
    references: [],
    ...extra,
  };
}

describe("readNonValueAttribute", () => {
  it("Method: Executable and UserExecutable", () => {
    const m = node(NodeClassMask.Method, { executable: true });
    expect(readNonValueAttribute(m, AttributeIds.Executable, 0).value).toEqual({ dataType: BuiltinType.Boolean, arrayType: 0, value: true });
    expect(readNonValueAttribute(m, AttributeIds.UserExecutable, 0).value?.value).toBe(true);
    expect(readNonValueAttribute(m, AttributeIds.EventNotifier, 0).statusCode).toBe(StatusCodes.BadAttributeIdInvalid);
  });

  it("View: ContainsNoLoops and EventNotifier", () => {
    const v = node(NodeClassMask.View, { containsNoLoops: true, eventNotifier: 0 });
    expect(readNonValueAttribute(v, AttributeIds.ContainsNoLoops, 0).value?.value).toBe(true);
    expect(readNonValueAttribute(v, AttributeIds.EventNotifier, 0).value).toEqual({ dataType: BuiltinType.Byte, arrayType: 0, value: 0 });
    expect(readNonValueAttribute(v, AttributeIds.IsAbstract, 0).statusCode).toBe(StatusCodes.BadAttributeIdInvalid);
  });

  it("common attributes have their spec types", () => {
    const o = node(NodeClassMask.Object);
    expect(readNonValueAttribute(o, AttributeIds.NodeClass, 0).value?.dataType).toBe(BuiltinType.Int32);
    expect(readNonValueAttribute(o, AttributeIds.BrowseName, 0).value?.dataType).toBe(BuiltinType.QualifiedName);
    expect(readNonValueAttribute(o, AttributeIds.Description, 0).value).toEqual({ dataType: BuiltinType.LocalizedText, arrayType: 0, value: {} });
    expect(readNonValueAttribute(o, AttributeIds.WriteMask, 0).value?.dataType).toBe(BuiltinType.UInt32);
    // Optional attributes fieldgate does not keep.
    for (const a of [AttributeIds.RolePermissions, AttributeIds.UserRolePermissions, AttributeIds.AccessRestrictions, AttributeIds.AccessLevelEx]) {
      expect(readNonValueAttribute(o, a, 0).statusCode).toBe(StatusCodes.BadAttributeIdInvalid);
    }
  });

  it("knows which class has which attribute", () => {
    expect(hasAttribute(NodeClassMask.Variable, AttributeIds.Value)).toBe(true);
    expect(hasAttribute(NodeClassMask.VariableType, AttributeIds.Value)).toBe(true);
    expect(hasAttribute(NodeClassMask.VariableType, AttributeIds.AccessLevel)).toBe(false);
    expect(hasAttribute(NodeClassMask.ReferenceType, AttributeIds.InverseName)).toBe(true);
    expect(hasAttribute(NodeClassMask.DataType, AttributeIds.DataTypeDefinition)).toBe(true);
    expect(hasAttribute(NodeClassMask.Object, 0)).toBe(false);
    expect(hasAttribute(NodeClassMask.Object, 31)).toBe(false);
    expect(hasAttribute(0, AttributeIds.NodeId)).toBe(false);
  });

  it("summaries are cached per node", () => {
    const o = node(NodeClassMask.Object);
    expect(summarize(o)).toBe(summarize(o));
    expect(summarize(o)).toEqual({ nodeClass: NodeClassMask.Object, browseName: o.browseName, displayName: o.displayName, typeDefinition: undefined });
  });
});
