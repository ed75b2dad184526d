// View service set (Part 4 §5.8): Browse, BrowseNext, TranslateBrowsePathsToNodeIds,
// RegisterNodes, UnregisterNodes. References come from the node manager that owns each node;
// target attributes from the manager that owns each target.
import { randomBytes } from "node:crypto";
import type { NodeReference } from "../address-space/node-manager.js";
import type { NamespaceRegistry } from "../address-space/namespace-registry.js";
import type { ExpandedNodeId, NodeId, QualifiedName } from "../ua/builtins.js";
import { NULL_NODE_ID } from "../ua/builtins.js";
import { UaStatusError } from "../ua/errors.js";
import { BrowseDirection, BrowseResultMask, NodeClass } from "../ua/generated/enums.js";
import type { SlicedTask } from "../sampling/slices.js";
import { ObjectIds } from "../ua/generated/node-ids.js";
import { StatusCodes } from "../ua/generated/status-codes.js";
import {
  decodeBrowseNextRequest,
  decodeBrowseRequest,
  decodeRegisterNodesRequest,
  decodeTranslateBrowsePathsToNodeIdsRequest,
  decodeUnregisterNodesRequest,
  encodeBrowseNextResponse,
  encodeBrowseResponse,
  encodeRegisterNodesResponse,
  encodeTranslateBrowsePathsToNodeIdsResponse,
  encodeUnregisterNodesResponse,
  type BrowseDescription,
  type BrowseNextRequest,
  type BrowseNextResponse,
  type BrowsePath,
  type BrowsePathResult,
  type BrowseRequest,
  type BrowseResponse,
  type BrowseResult,
  type ReferenceDescription,
  type RegisterNodesRequest,
  type RegisterNodesResponse,
  type TranslateBrowsePathsToNodeIdsRequest,
  type TranslateBrowsePathsToNodeIdsResponse,
  type UnregisterNodesRequest,
  type UnregisterNodesResponse,
} from "../ua/generated/types.js";
import { isNullNodeId, nodeIdKey } from "../ua/node-id.js";
import { defineService, responseHeader, SessionRequirement, type ServiceContext } from "../services/service-table.js";
import type { Session } from "../sessions/session.js";

/** Part 4 §7.33: the per-operation limit check shared by the services of this set. */
export function checkOperationCount(count: number, max: number): void {
  if (count === 0) throw new UaStatusError(StatusCodes.BadNothingToDo);
  if (count > max) throw new UaStatusError(StatusCodes.BadTooManyOperations);
}

const NULL_EXPANDED: ExpandedNodeId = Object.freeze({ nodeId: NULL_NODE_ID, serverIndex: 0 });
const EMPTY_NAME: QualifiedName = Object.freeze({ namespaceIndex: 0, name: "" });

function expanded(nodeId: NodeId): ExpandedNodeId {
  return { nodeId, serverIndex: 0 };
}

/** Does a reference of type `typeId` pass the filter `wanted` (null = every type)? */
function referenceTypeMatches(registry: NamespaceRegistry, typeId: NodeId, wanted: NodeId, includeSubtypes: boolean): boolean {
  if (isNullNodeId(wanted)) return true;
  if (nodeIdKey(typeId) === nodeIdKey(wanted)) return true;
  return includeSubtypes && registry.isSubtypeOf(typeId, wanted);
}

/** Where a Browse of one node stopped: its description and the index of the next reference that matches. */
interface BrowseCursor {
  readonly description: BrowseDescription;
  readonly next: number;
  readonly maxReferences: number;
}

/**
 * Up to `max` references of one BrowseDescription, from index `from` of the node's references,
 * filtered and described per its resultMask; `next` is the index of the next reference that
 * matches (-1: none). Only what a page returns is described: a Browse of a folder of 10,000
 * tags costs its 1,000 references, not 10,000 (Part 4 §5.8.2 continuation points).
 */
function browseFrom(registry: NamespaceRegistry, d: BrowseDescription, from: number, max: number): { status: number; refs: ReferenceDescription[]; next: number } {
  if (d.browseDirection < BrowseDirection.Forward || d.browseDirection > BrowseDirection.Both) {
    return { status: StatusCodes.BadBrowseDirectionInvalid, refs: [], next: -1 };
  }
  if (!isNullNodeId(d.referenceTypeId) && !registry.isReferenceType(d.referenceTypeId)) {
    return { status: StatusCodes.BadReferenceTypeIdInvalid, refs: [], next: -1 };
  }
  const manager = registry.managerFor(d.nodeId);
  const all = manager?.references(d.nodeId);
  if (all === undefined) return { status: StatusCodes.BadNodeIdUnknown, refs: [], next: -1 };
  const mask = d.resultMask;
  const classMask = d.nodeClassMask;
  const refs: ReferenceDescription[] = [];
  for (let i = from; i < all.length; i++) {
    const ref = all[i]!;
    if (d.browseDirection === BrowseDirection.Forward && !ref.isForward) continue;
    if (d.browseDirection === BrowseDirection.Inverse && ref.isForward) continue;
    if (!referenceTypeMatches(registry, ref.referenceTypeId, d.referenceTypeId, d.includeSubtypes)) continue;
    const target = registry.managerFor(ref.targetId)?.summary(ref.targetId);
    if (target === undefined) continue; // never hand out a dangling reference
    if (classMask !== 0 && (target.nodeClass & classMask) === 0) continue;
    if (refs.length === max) return { status: StatusCodes.Good, refs, next: i };
    refs.push(describe(ref, target, mask));
  }
  return { status: StatusCodes.Good, refs, next: -1 };
}

function describe(
  ref: NodeReference,
  target: { nodeClass: number; browseName: QualifiedName; displayName: { locale?: string; text?: string }; typeDefinition?: NodeId },
  mask: number,
): ReferenceDescription {
  return {
    referenceTypeId: mask & BrowseResultMask.ReferenceTypeId ? ref.referenceTypeId : NULL_NODE_ID,
    isForward: mask & BrowseResultMask.IsForward ? ref.isForward : false,
    nodeId: expanded(ref.targetId),
    browseName: mask & BrowseResultMask.BrowseName ? target.browseName : EMPTY_NAME,
    displayName: mask & BrowseResultMask.DisplayName ? target.displayName : {},
    nodeClass: mask & BrowseResultMask.NodeClass ? target.nodeClass : NodeClass.Unspecified,
    typeDefinition:
      mask & BrowseResultMask.TypeDefinition && target.typeDefinition ? expanded(target.typeDefinition) : NULL_EXPANDED,
  };
}

/**
 * A BrowseResult of one node from index `from`: its page, and a continuation point where more
 * references match (a new one, or `reuse`, the id a BrowseNext came with).
 */
function pageOf(registry: NamespaceRegistry, session: Session, d: BrowseDescription, from: number, max: number, limit: number, reuse?: Buffer): BrowseResult {
  const { status, refs, next } = browseFrom(registry, d, from, max);
  if (status !== StatusCodes.Good) return { statusCode: status, continuationPoint: undefined, references: [] };
  if (next < 0) return { statusCode: StatusCodes.Good, continuationPoint: undefined, references: refs };
  if (reuse === undefined && session.browseContinuations.size >= limit) {
    // Part 4 §5.8.2: no room for another continuation point.
    return { statusCode: StatusCodes.BadNoContinuationPoints, continuationPoint: undefined, references: [] };
  }
  const id = reuse ?? randomBytes(16);
  const cursor: BrowseCursor = { description: d, next, maxReferences: max };
  session.browseContinuations.set(id.toString("base64"), cursor);
  return { statusCode: StatusCodes.Good, continuationPoint: id, references: refs };
}

/** Nodes of one Browse between two looks at the clock. */
const NODES_PER_CHECK = 16;

export const browse = defineService<BrowseRequest, BrowseResponse>({
  name: "Browse",
  requestEncodingId: ObjectIds.BrowseRequest_Encoding_DefaultBinary,
  responseEncodingId: ObjectIds.BrowseResponse_Encoding_DefaultBinary,
  requires: SessionRequirement.Activated,
  decode: decodeBrowseRequest,
  encode: encodeBrowseResponse,
  async handle(ctx: ServiceContext, req: BrowseRequest): Promise<BrowseResponse> {
    const { limits, registry } = ctx.server;
    const nodes = req.nodesToBrowse ?? [];
    checkOperationCount(nodes.length, limits.maxNodesPerBrowse);
    // fieldgate has no Views: any view other than the whole address space is unknown.
    if (!isNullNodeId(req.view.viewId)) throw new UaStatusError(StatusCodes.BadViewIdUnknown);
    const max =
      req.requestedMaxReferencesPerNode === 0
        ? limits.maxReferencesPerNode
        : Math.min(req.requestedMaxReferencesPerNode, limits.maxReferencesPerNode);
    const session = ctx.session!;
    const results: BrowseResult[] = new Array(nodes.length);
    // A request of many big folders is browsed in the server's slices; the usual few nodes in the first.
    const task = ctx.server.slicer.task("Browse (a slice)");
    try {
      await task.loop(nodes.length, (from) => browseSome(registry, session, nodes, results, from, max, limits.maxBrowseContinuationPoints, task));
    } finally {
      task.done();
    }
    return { responseHeader: responseHeader(ctx, req.requestHeader), results, diagnosticInfos: [] };
  },
});

/** Browses nodes from `from` on into `results`, until the slice is spent; returns where it stopped. */
function browseSome(
  registry: NamespaceRegistry,
  session: Session,
  nodes: readonly BrowseDescription[],
  results: BrowseResult[],
  from: number,
  max: number,
  maxContinuationPoints: number,
  task: SlicedTask,
): number {
  let i = from;
  while (i < nodes.length) {
    results[i] = pageOf(registry, session, nodes[i]!, 0, max, maxContinuationPoints);
    i++;
    if (i % NODES_PER_CHECK === 0 && task.over()) break;
  }
  return i;
}

export const browseNext = defineService<BrowseNextRequest, BrowseNextResponse>({
  name: "BrowseNext",
  requestEncodingId: ObjectIds.BrowseNextRequest_Encoding_DefaultBinary,
  responseEncodingId: ObjectIds.BrowseNextResponse_Encoding_DefaultBinary,
  requires: SessionRequirement.Activated,
  decode: decodeBrowseNextRequest,
  encode: encodeBrowseNextResponse,
  handle(ctx: ServiceContext, req: BrowseNextRequest): BrowseNextResponse {
    const session = ctx.session!;
    const points = req.continuationPoints ?? [];
    checkOperationCount(points.length, ctx.server.limits.maxNodesPerBrowse);
    const results: BrowseResult[] = new Array(points.length);
    for (let i = 0; i < points.length; i++) {
      const key = points[i]?.toString("base64") ?? "";
      const cp = session.browseContinuations.get(key) as BrowseCursor | undefined;
      if (cp === undefined) {
        results[i] = { statusCode: StatusCodes.BadContinuationPointInvalid, continuationPoint: undefined, references: [] };
        continue;
      }
      session.browseContinuations.delete(key);
      if (req.releaseContinuationPoints) {
        results[i] = { statusCode: StatusCodes.Good, continuationPoint: undefined, references: [] };
        continue;
      }
      // The same id continues: clients may compare it, and it was just freed.
      results[i] = pageOf(ctx.server.registry, session, cp.description, cp.next, cp.maxReferences, Infinity, points[i]);
    }
    return { responseHeader: responseHeader(ctx, req.requestHeader), results, diagnosticInfos: [] };
  },
});

/** Part 4 §5.8.4: follows one RelativePath from its starting node. */
function translateOne(registry: NamespaceRegistry, path: BrowsePath, maxElements: number): BrowsePathResult {
  const elements = path.relativePath.elements ?? [];
  if (elements.length === 0) return { statusCode: StatusCodes.BadNothingToDo, targets: [] };
  if (elements.length > maxElements) return { statusCode: StatusCodes.BadTooManyOperations, targets: [] };
  for (const e of elements) {
    if (!e.targetName || e.targetName.name === undefined || e.targetName.name === "") {
      return { statusCode: StatusCodes.BadBrowseNameInvalid, targets: [] };
    }
  }
  if (registry.managerFor(path.startingNode)?.summary(path.startingNode) === undefined) {
    return { statusCode: StatusCodes.BadNodeIdUnknown, targets: [] };
  }
  let current: NodeId[] = [path.startingNode];
  for (const e of elements) {
    const next = new Map<string | number, NodeId>();
    for (const node of current) {
      const refs = registry.managerFor(node)?.references(node);
      if (!refs) continue;
      for (const ref of refs) {
        if (ref.isForward === e.isInverse) continue;
        if (!referenceTypeMatches(registry, ref.referenceTypeId, e.referenceTypeId, e.includeSubtypes)) continue;
        const target = registry.managerFor(ref.targetId)?.summary(ref.targetId);
        if (!target) continue;
        if (target.browseName.name !== e.targetName.name || target.browseName.namespaceIndex !== e.targetName.namespaceIndex) continue;
        next.set(nodeIdKey(ref.targetId), ref.targetId);
      }
    }
    if (next.size === 0) return { statusCode: StatusCodes.BadNoMatch, targets: [] };
    current = [...next.values()];
  }
  return {
    statusCode: StatusCodes.Good,
    targets: current.map((id) => ({ targetId: expanded(id), remainingPathIndex: 0xffffffff })),
  };
}

export const translateBrowsePathsToNodeIds = defineService<TranslateBrowsePathsToNodeIdsRequest, TranslateBrowsePathsToNodeIdsResponse>({
  name: "TranslateBrowsePathsToNodeIds",
  requestEncodingId: ObjectIds.TranslateBrowsePathsToNodeIdsRequest_Encoding_DefaultBinary,
  responseEncodingId: ObjectIds.TranslateBrowsePathsToNodeIdsResponse_Encoding_DefaultBinary,
  requires: SessionRequirement.Activated,
  decode: decodeTranslateBrowsePathsToNodeIdsRequest,
  encode: encodeTranslateBrowsePathsToNodeIdsResponse,
  handle(ctx: ServiceContext, req: TranslateBrowsePathsToNodeIdsRequest): TranslateBrowsePathsToNodeIdsResponse {
    const { limits, registry } = ctx.server;
    const paths = req.browsePaths ?? [];
    checkOperationCount(paths.length, limits.maxNodesPerTranslateBrowsePathsToNodeIds);
    const results = paths.map((p) => translateOne(registry, p, limits.maxBrowsePathElements));
    return { responseHeader: responseHeader(ctx, req.requestHeader), results, diagnosticInfos: [] };
  },
});

export const registerNodes = defineService<RegisterNodesRequest, RegisterNodesResponse>({
  name: "RegisterNodes",
  requestEncodingId: ObjectIds.RegisterNodesRequest_Encoding_DefaultBinary,
  responseEncodingId: ObjectIds.RegisterNodesResponse_Encoding_DefaultBinary,
  requires: SessionRequirement.Activated,
  decode: decodeRegisterNodesRequest,
  encode: encodeRegisterNodesResponse,
  handle(ctx: ServiceContext, req: RegisterNodesRequest): RegisterNodesResponse {
    const nodes = req.nodesToRegister ?? [];
    checkOperationCount(nodes.length, ctx.server.limits.maxNodesPerRegisterNodes);
    // Part 4 §5.8.5: registration is an optimisation hint; every NodeId here is already
    // resolved in O(1), so the registered id is the id itself.
    return { responseHeader: responseHeader(ctx, req.requestHeader), registeredNodeIds: nodes };
  },
});

export const unregisterNodes = defineService<UnregisterNodesRequest, UnregisterNodesResponse>({
  name: "UnregisterNodes",
  requestEncodingId: ObjectIds.UnregisterNodesRequest_Encoding_DefaultBinary,
  responseEncodingId: ObjectIds.UnregisterNodesResponse_Encoding_DefaultBinary,
  requires: SessionRequirement.Activated,
  decode: decodeUnregisterNodesRequest,
  encode: encodeUnregisterNodesResponse,
  handle(ctx: ServiceContext, req: UnregisterNodesRequest): UnregisterNodesResponse {
    checkOperationCount((req.nodesToUnregister ?? []).length, ctx.server.limits.maxNodesPerRegisterNodes);
    return { responseHeader: responseHeader(ctx, req.requestHeader) };
  },
});
