// Method service set (Part 4 §5.11): Call. Each CallMethodRequest is checked in the order of
// Part 4 §5.11.2 (Table 66) before its handler runs: the Method is known (BadMethodInvalid), the
// object exists and has it (BadNodeIdUnknown, BadMethodInvalid), the caller's role may call it
// (BadUserAccessDenied; a Method the server does not run, BadNotExecutable), the number of arguments (BadArgumentsMissing, BadTooManyArguments) and
// each argument's type and rank against the Method's InputArguments (BadInvalidArgument with a
// BadTypeMismatch per wrong argument, as open62541 and the .NET stack answer). A handler's own
// refusals come back the same way. Every call is audited (AuditUpdateMethodEventType,
// Part 5 §6.4.27) when someone listens.
import type { MethodCaller, MethodEntry } from "../address-space/methods.js";
import { mayCall } from "../address-space/methods.js";
import type { NamespaceRegistry } from "../address-space/namespace-registry.js";
import { rankMatches } from "../address-space/value-checks.js";
import { BuiltinType, type Variant } from "../ua/builtins.js";
import { statusOf, UaStatusError } from "../ua/errors.js";
import { ObjectIds, ReferenceTypeIds } from "../ua/generated/node-ids.js";
import { NodeClassMask } from "../address-space/node-manager.js";
import { nodeIdEquals } from "../ua/node-id.js";
import { StatusCodes } from "../ua/generated/status-codes.js";
import {
  decodeCallRequest,
  encodeCallResponse,
  type Argument,
  type CallMethodRequest,
  type CallMethodResult,
  type CallRequest,
  type CallResponse,
} from "../ua/generated/types.js";
import { defineService, responseHeader, SessionRequirement, type ServiceContext } from "./service-table.js";
import { checkOperationCount } from "./view.js";

const EMPTY_VARIANTS: readonly Variant[] = Object.freeze([]);

function failed(statusCode: number, inputArgumentResults?: number[]): CallMethodResult {
  return { statusCode, inputArgumentResults, inputArgumentDiagnosticInfos: [], outputArguments: [] };
}

function isNumber(t: BuiltinType): boolean {
  return t >= BuiltinType.SByte && t <= BuiltinType.Double;
}

/**
 * Part 4 §5.11.2: an argument of the declared DataType (its built-in encoding; BaseDataType takes
 * anything, the abstract Number/Integer/UInteger any number) and ValueRank. An empty Variant
 * fits nothing but BaseDataType (open62541 answers it BadTypeMismatch too).
 */
export function argumentStatus(registry: NamespaceRegistry, arg: Argument, v: Variant | undefined): number {
  if (v === undefined || v.dataType === BuiltinType.Null) return StatusCodes.BadTypeMismatch;
  const expected = registry.builtinTypeOf(arg.dataType);
  if (expected === undefined) return StatusCodes.BadTypeMismatch;
  if (expected === BuiltinType.Variant) {
    // Number (26), Integer (27), UInteger (28) arrive here as Variant too: narrow them.
    const id = arg.dataType.namespace === 0 ? arg.dataType.value : -1;
    if (id === 26 && !isNumber(v.dataType)) return StatusCodes.BadTypeMismatch;
    if (id === 27 && ![BuiltinType.SByte, BuiltinType.Int16, BuiltinType.Int32, BuiltinType.Int64].includes(v.dataType)) return StatusCodes.BadTypeMismatch;
    if (id === 28 && ![BuiltinType.Byte, BuiltinType.UInt16, BuiltinType.UInt32, BuiltinType.UInt64].includes(v.dataType)) return StatusCodes.BadTypeMismatch;
  } else if (v.dataType !== expected) {
    return StatusCodes.BadTypeMismatch;
  }
  return rankMatches(arg.valueRank, v) ? StatusCodes.Good : StatusCodes.BadTypeMismatch;
}

/**
 * A Method the address space shows but the server does not run: BadNotExecutable when it is a
 * Method of the object (Part 3 §5.7: its Executable attribute is false), else what is wrong.
 */
function withoutHandler(registry: NamespaceRegistry, req: CallMethodRequest): number {
  const method = registry.managerFor(req.methodId)?.summary(req.methodId);
  if (method === undefined || method.nodeClass !== NodeClassMask.Method) return StatusCodes.BadMethodInvalid;
  const refs = registry.managerFor(req.objectId)?.references(req.objectId);
  if (refs === undefined) return StatusCodes.BadNodeIdUnknown;
  const has = refs.some((r) => r.isForward && r.referenceTypeId.namespace === 0 && r.referenceTypeId.value === ReferenceTypeIds.HasComponent && nodeIdEquals(r.targetId, req.methodId));
  return has ? StatusCodes.BadNotExecutable : StatusCodes.BadMethodInvalid;
}

/** The checks of Part 4 §5.11.2 that need no handler; undefined when the call may go ahead. */
export function checkCall(registry: NamespaceRegistry, entry: MethodEntry | undefined, req: CallMethodRequest, caller: MethodCaller): CallMethodResult | undefined {
  if (entry === undefined) return failed(withoutHandler(registry, req));
  const objectStatus = entry.objectStatus(req.objectId);
  if (objectStatus !== StatusCodes.Good) return failed(objectStatus);
  if (!mayCall(entry, caller.role)) return failed(StatusCodes.BadUserAccessDenied);
  const args = req.inputArguments ?? EMPTY_VARIANTS;
  const declared = entry.inputArguments;
  if (args.length < declared.length) return failed(StatusCodes.BadArgumentsMissing);
  if (args.length > declared.length) return failed(StatusCodes.BadTooManyArguments);
  let bad = false;
  const results = declared.map((d, i) => {
    const s = argumentStatus(registry, d, args[i]);
    if (s !== StatusCodes.Good) bad = true;
    return s;
  });
  return bad ? failed(StatusCodes.BadInvalidArgument, results) : undefined;
}

async function callOne(ctx: ServiceContext, caller: MethodCaller, req: CallMethodRequest): Promise<CallMethodResult> {
  const server = ctx.server;
  const entry = server.methods.get(req.methodId);
  const refused = checkCall(server.registry, entry, req, caller);
  let result: CallMethodResult;
  if (refused !== undefined) {
    result = refused;
  } else {
    try {
      const out = await entry!.handler({ caller, objectId: req.objectId, methodId: req.methodId, inputArguments: req.inputArguments ?? EMPTY_VARIANTS });
      result = {
        statusCode: out.statusCode,
        inputArgumentResults: out.inputArgumentResults ? [...out.inputArgumentResults] : [],
        inputArgumentDiagnosticInfos: [],
        outputArguments: out.statusCode === StatusCodes.Good ? [...(out.outputArguments ?? [])] : [],
      };
    } catch (err) {
      result = failed(statusOf(err));
    }
  }
  server.events.audit.methodCall(caller, { objectId: req.objectId, methodId: req.methodId, inputArguments: req.inputArguments ?? EMPTY_VARIANTS, status: result.statusCode });
  return result;
}

export const call = defineService<CallRequest, CallResponse>({
  name: "Call",
  requestEncodingId: ObjectIds.CallRequest_Encoding_DefaultBinary,
  responseEncodingId: ObjectIds.CallResponse_Encoding_DefaultBinary,
  requires: SessionRequirement.Activated,
  decode: decodeCallRequest,
  encode: encodeCallResponse,
  async handle(ctx: ServiceContext, req: CallRequest): Promise<CallResponse> {
    const methods = req.methodsToCall ?? [];
    checkOperationCount(methods.length, ctx.server.limits.maxNodesPerMethodCall);
    const session = ctx.session!;
    const caller: MethodCaller = {
      sessionId: session.sessionId,
      session,
      role: session.role,
      userId: session.userId,
      auditEntryId: req.requestHeader.auditEntryId ?? "",
      now: ctx.now,
    };
    // One after the other, in request order: a method's effects (an Acknowledge, a refresh)
    // are in place before the next one of the same request runs.
    const results: CallMethodResult[] = [];
    for (const m of methods) {
      if (session.closed) throw new UaStatusError(StatusCodes.BadSessionIdInvalid);
      results.push(await callOne(ctx, caller, m));
    }
    return { responseHeader: responseHeader(ctx, req.requestHeader), results, diagnosticInfos: [] };
  },
});
