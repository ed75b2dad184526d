// MemoryNamespace.removeNode: a node goes with its subtree, and no reference to a removed node
// is left behind (the device map's reload removes devices and tags this way).
import { describe, expect, it } from "vitest";
import { MemoryNamespace } from "../../src/address-space/memory-namespace.js";
import { NamespaceRegistry } from "../../src/address-space/namespace-registry.js";
import { Ns0Manager } from "../../src/address-space/ns0-manager.js";
import { BuiltinType, numericNodeId, stringNodeId, type NodeId } from "../../src/ua/builtins.js";
import { AttributeIds, ObjectIds, ReferenceTypeIds } from "../../src/ua/generated/node-ids.js";
import { StatusCodes } from "../../src/ua/generated/status-codes.js";
import { nodeIdEquals } from "../../src/ua/node-id.js";

function setup() {
  const registry = new NamespaceRegistry();
  new Ns0Manager(registry, { applicationUri: "urn:x", buildInfo: { buildDate: 0 } });
  const index = registry.register("urn:mem", (i, reg) => new MemoryNamespace(i, reg));
  const ns = registry.managerAt(index) as MemoryNamespace;
  const root = ns.addFolder({ nodeId: "Root", browseName: "Root", parent: numericNodeId(ObjectIds.ObjectsFolder) }).nodeId;
  const device = ns.addObject({ nodeId: "dev", browseName: "dev", parent: root }).nodeId;
  const tag = ns.addVariable({ nodeId: "dev.t", browseName: "t", parent: device, dataType: BuiltinType.Double }).nodeId;
  const prop = ns.addProperty(tag, { browseName: "EURange", dataType: BuiltinType.Double }).nodeId;
  const other = ns.addVariable({ nodeId: "other", browseName: "other", parent: root, dataType: BuiltinType.Double }).nodeId;
  return { registry, ns, root, device, tag, prop, other };
}

const pointsAt = (ns: MemoryNamespace, from: NodeId, to: NodeId) => ns.references(from)!.some((r) => nodeIdEquals(r.targetId, to));

describe("MemoryNamespace.removeNode", () => {
  it("removes the node and everything below it, and returns their NodeIds", () => {
    const { ns, device, tag, prop, other, root } = setup();
    const removed = ns.removeNode(device);
    expect(removed.map((id) => id.value).sort()).toEqual(["dev", "dev.t", "dev.t.EURange"]);
    for (const id of [device, tag, prop]) {
      expect(ns.getNode(id)).toBeUndefined();
      expect(ns.summary(id)).toBeUndefined();
    }
    const results: never[] = [];
    ns.read({ sessionId: "", role: "viewer", now: 0 }, [{ nodeId: tag, attributeId: AttributeIds.Value }], results);
    expect(results[0]).toEqual({ statusCode: StatusCodes.BadNodeIdUnknown });
    expect(ns.getNode(other)).toBeDefined();
    expect(ns.getNode(root)).toBeDefined();
  });

  it("leaves no reference to a removed node on the nodes that stay", () => {
    const { ns, root, device, other, tag } = setup();
    // A non-hierarchical reference from a node that stays into the subtree.
    ns.addReference(other, numericNodeId(ReferenceTypeIds.HasDescription), tag);
    expect(pointsAt(ns, root, device)).toBe(true);
    ns.removeNode(device);
    expect(pointsAt(ns, root, device)).toBe(false);
    expect(pointsAt(ns, other, tag)).toBe(true);
    ns.removeReference(other, numericNodeId(ReferenceTypeIds.HasDescription), tag);
    expect(pointsAt(ns, other, tag)).toBe(false);
    expect(ns.references(root)!.filter((r) => r.isForward).map((r) => r.targetId.value)).toEqual([61, "other"]);
  });

  it("a removed NodeId can be added again", () => {
    const { ns, root, device } = setup();
    ns.removeNode(device);
    const again = ns.addObject({ nodeId: "dev", browseName: "dev", parent: root });
    expect(again.nodeId).toEqual(stringNodeId("dev", ns.namespaceIndex));
    expect(ns.references(root)!.filter((r) => nodeIdEquals(r.targetId, device))).toHaveLength(1);
  });

  it("removing an unknown node is a no-op", () => {
    const { ns } = setup();
    const before = ns.nodeCount;
    expect(ns.removeNode(stringNodeId("nope", ns.namespaceIndex))).toEqual([]);
    expect(ns.nodeCount).toBe(before);
  });

  it("a parent in namespace 0 keeps its reference when its manager cannot remove one (Objects never loses a child here)", () => {
    const { ns, registry, root } = setup();
    const objects = numericNodeId(ObjectIds.ObjectsFolder);
    ns.removeNode(root);
    expect(ns.getNode(root)).toBeUndefined();
    // Ns0Manager has no removeReference: the dangling reference is Browse's to skip (unknown target).
    expect(registry.managerAt(0)!.references(objects)!.some((r) => nodeIdEquals(r.targetId, root))).toBe(true);
  });
});
