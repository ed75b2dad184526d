// The namespace table of the server (Part 3 §8.2.2: NamespaceArray; index 0 is the OPC UA
// namespace) and the NodeManager of each index, plus the type-hierarchy questions services ask
// (Browse and TranslateBrowsePathsToNodeIds with includeSubtypes, Part 4 §5.8.2 / §5.8.4).
//
// Namespace 0 is answered by Ns0Manager, which registers itself at index 0. Conventionally
// index 1 is the server's own application namespace (Part 3 §8.2.2); the registry just hands
// out indices in registration order, so the server registers its namespaces in the order it
// wants them.
import { BuiltinType, IdType, type NodeId } from "../ua/builtins.js";
import { UaStatusError } from "../ua/errors.js";
import { ReferenceTypeIds } from "../ua/generated/node-ids.js";
import { StatusCodes } from "../ua/generated/status-codes.js";
import { nodeIdEquals } from "../ua/node-id.js";
import type { NodeManager } from "./node-manager.js";
import { ns0Table, type Ns0Table } from "./ns0-table.js";

export const UA_NAMESPACE_URI = "http://opcfoundation.org/UA/";

/** Builds the manager of a namespace once its index is known. */
export type NodeManagerFactory = (namespaceIndex: number, registry: NamespaceRegistry) => NodeManager;

/**
 * A manager that accepts references added from outside (Ns0Manager, MemoryNamespace). The
 * source node is the manager's own; the target may live in any namespace.
 */
export interface ReferenceTarget {
  addReference(sourceId: NodeId, referenceTypeId: NodeId, targetId: NodeId, isForward?: boolean): void;
}

function acceptsReferences(m: NodeManager | undefined): m is NodeManager & ReferenceTarget {
  return m !== undefined && typeof (m as Partial<ReferenceTarget>).addReference === "function";
}

export class NamespaceRegistry {
  private readonly uriList: string[] = [UA_NAMESPACE_URI];
  private readonly managers: (NodeManager | undefined)[] = [undefined];
  private readonly table: Ns0Table = ns0Table();
  /** Bumped by every change of the namespace table; readers of NamespaceArray cache by it. */
  private changes = 0;

  /** The ns0 ReferenceTypes below HierarchicalReferences (i=33), itself included. */
  get hierarchicalReferenceTypes(): ReadonlySet<number> {
    return this.table.hierarchicalReferenceTypes;
  }

  get version(): number {
    return this.changes;
  }

  /**
   * Registers a namespace URI and returns its index; an already registered URI keeps its index.
   * With a manager (or a factory called with the index) the namespace gets that manager; a
   * namespace has at most one.
   */
  register(uri: string, manager?: NodeManager | NodeManagerFactory): number {
    let index = this.uriList.indexOf(uri);
    if (index < 0) {
      index = this.uriList.length;
      this.uriList.push(uri);
      this.managers.push(undefined);
      this.changes++;
    }
    if (manager !== undefined) {
      if (this.managers[index] !== undefined) {
        throw new UaStatusError(StatusCodes.BadInvalidState, `namespace ${uri} already has a node manager`);
      }
      this.managers[index] = typeof manager === "function" ? manager(index, this) : manager;
    }
    return index;
  }

  /** Index of a namespace URI, -1 when not registered. */
  indexOf(uri: string): number {
    return this.uriList.indexOf(uri);
  }

  uriAt(index: number): string | undefined {
    return this.uriList[index];
  }

  /** The NamespaceArray (a live view: do not modify). */
  uris(): readonly string[] {
    return this.uriList;
  }

  managerAt(index: number): NodeManager | undefined {
    return this.managers[index];
  }

  managerFor(nodeId: NodeId): NodeManager | undefined {
    return this.managers[nodeId.namespace];
  }

  /**
   * Adds `source --referenceType--> target` and its inverse, each in the manager owning the
   * node (Part 3 §7.1: a reference is seen from both ends). Use it to hang a namespace's folder
   * under Objects: `registry.addReference(ObjectsFolder, Organizes, folderId)`.
   */
  addReference(sourceId: NodeId, referenceTypeId: NodeId, targetId: NodeId): void {
    const from = this.managerFor(sourceId);
    const to = this.managerFor(targetId);
    if (!acceptsReferences(from) || !acceptsReferences(to)) {
      throw new UaStatusError(StatusCodes.BadNodeIdUnknown, "addReference: no manager accepting references for one end");
    }
    from.addReference(sourceId, referenceTypeId, targetId, true);
    to.addReference(targetId, referenceTypeId, sourceId, false);
  }

  /**
   * True when `typeId` equals `baseId` or is a subtype of it (HasSubtype, Part 3 §7.10). Only
   * the namespace 0 hierarchy is known: fieldgate defines no types in other namespaces.
   */
  isSubtypeOf(typeId: NodeId, baseId: NodeId): boolean {
    if (typeId.namespace !== 0 || baseId.namespace !== 0) return nodeIdEquals(typeId, baseId);
    if (typeId.idType !== IdType.Numeric || baseId.idType !== IdType.Numeric) return nodeIdEquals(typeId, baseId);
    return this.table.isSubtypeOf(typeId.value as number, baseId.value as number);
  }

  /** Whether a ReferenceType is HierarchicalReferences or one of its subtypes. */
  isHierarchical(referenceTypeId: NodeId): boolean {
    return (
      referenceTypeId.namespace === 0 &&
      typeof referenceTypeId.value === "number" &&
      this.table.hierarchicalReferenceTypes.has(referenceTypeId.value)
    );
  }

  /** Whether `referenceTypeId` is an ns0 ReferenceType (for Browse's BadReferenceTypeIdInvalid). */
  isReferenceType(referenceTypeId: NodeId): boolean {
    return this.isSubtypeOf(referenceTypeId, { namespace: 0, idType: IdType.Numeric, value: ReferenceTypeIds.References });
  }

  /**
   * The built-in type values of an ns0 DataType are encoded as: Enumerations give Int32,
   * Structures ExtensionObject, BaseDataType and the abstract numbers Variant (any).
   * Undefined for DataTypes outside the reduced namespace 0.
   */
  builtinTypeOf(dataTypeId: NodeId): BuiltinType | undefined {
    if (dataTypeId.namespace !== 0 || typeof dataTypeId.value !== "number") return undefined;
    return this.table.builtinTypeOf(dataTypeId.value);
  }
}
