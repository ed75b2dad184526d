// EventFilter (Part 4 §7.22.3): which fields an event monitored item reports (selectClauses of
// SimpleAttributeOperands, §7.7.4.5) and which events pass (whereClause, a ContentFilter of
// §7.7). The filter a client sends is checked once, into an EventFilterResult the
// CreateMonitoredItems response carries, and compiled into closures-free records that each
// event is evaluated against.
//
// Operators: those the Standard Event Subscription facet lists (Part 7): Equals, IsNull,
// GreaterThan, LessThan, GreaterThanOrEqual, LessThanOrEqual, Like, Not, Between, InList, And,
// Or, Cast, BitwiseAnd, BitwiseOr, OfType. InView and RelatedTo need a view or a node graph
// that events do not have here: BadFilterOperatorUnsupported. AttributeOperand (Query only):
// BadFilterOperandInvalid. Logic is three-valued (Part 4 §7.7.3, Table 120): a comparison with a
// null operand is null, And/Or/Not follow the table, and an event passes only when the first
// element is TRUE.
import type { NamespaceRegistry } from "../address-space/namespace-registry.js";
import {
  BuiltinType,
  IdType,
  NULL_VARIANT,
  VariantArrayType,
  numericNodeId,
  type ExtensionObject,
  type LocalizedText,
  type NodeId,
  type QualifiedName,
  type Variant,
} from "../ua/builtins.js";
import { FilterOperator } from "../ua/generated/enums.js";
import { AttributeIds, DataTypeIds, ObjectIds, ObjectTypeIds } from "../ua/generated/node-ids.js";
import { StatusCodes } from "../ua/generated/status-codes.js";
import type {
  ContentFilterElementResult,
  ContentFilterResult,
  EventFilter,
  EventFilterResult,
  SimpleAttributeOperand,
} from "../ua/generated/types.js";
import { nodeIdKey } from "../ua/node-id.js";
import { applyRange, parseNumericRange, type NumericRange } from "../ua/numeric-range.js";
import type { UaEvent } from "./event.js";

/** Published as ServerCapabilities.MaxSelectClauseParameters / MaxWhereClauseParameters (Part 5 §6.3.2). */
export const MAX_SELECT_CLAUSES = 64;
export const MAX_WHERE_ELEMENTS = 64;

/** A field of the event, as a select clause or a where-clause operand names it. */
export interface FieldRef {
  /** The EventType the path starts from; undefined for BaseEventType (no type check, Part 4 §7.22.3). */
  readonly typeId: number | undefined;
  /** Browse names joined by "/": the key of UaEvent.fields. */
  readonly key: string;
  /** AttributeId NodeId with an empty path: the ConditionId (Part 9 §5.5.2). */
  readonly conditionId: boolean;
  readonly range: NumericRange | undefined;
}

const enum OperandKind {
  Element = 0,
  Literal = 1,
  Field = 2,
}

type Operand =
  | { readonly kind: OperandKind.Element; readonly index: number }
  | { readonly kind: OperandKind.Literal; readonly value: Variant }
  | { readonly kind: OperandKind.Field; readonly field: FieldRef };

interface Element {
  readonly op: FilterOperator;
  readonly operands: readonly Operand[];
}

const TRUE: Variant = Object.freeze({ dataType: BuiltinType.Boolean, arrayType: VariantArrayType.Scalar, value: true });
const FALSE: Variant = Object.freeze({ dataType: BuiltinType.Boolean, arrayType: VariantArrayType.Scalar, value: false });
const bool = (b: boolean): Variant => (b ? TRUE : FALSE);

/** Operand counts per operator (Part 4 §7.7.3, Table 119): [min, max]. */
function operandCount(op: FilterOperator): [number, number] | undefined {
  switch (op) {
    case FilterOperator.IsNull:
    case FilterOperator.Not:
    case FilterOperator.OfType:
      return [1, 1];
    case FilterOperator.Between:
      return [3, 3];
    case FilterOperator.InList:
      return [2, Infinity];
    case FilterOperator.Equals:
    case FilterOperator.GreaterThan:
    case FilterOperator.LessThan:
    case FilterOperator.GreaterThanOrEqual:
    case FilterOperator.LessThanOrEqual:
    case FilterOperator.Like:
    case FilterOperator.And:
    case FilterOperator.Or:
    case FilterOperator.Cast:
    case FilterOperator.BitwiseAnd:
    case FilterOperator.BitwiseOr:
      return [2, 2];
    default:
      return undefined;
  }
}

/** Checks a SimpleAttributeOperand (Part 4 §7.7.4.5) and makes its FieldRef. */
function compileField(registry: NamespaceRegistry, o: SimpleAttributeOperand): { status: number; field?: FieldRef } {
  const t = o.typeDefinitionId;
  if (t === undefined || t === null || t.namespace !== 0 || t.idType !== IdType.Numeric) return { status: StatusCodes.BadTypeDefinitionInvalid };
  if (!registry.isSubtypeOf(t, numericNodeId(ObjectTypeIds.BaseEventType))) return { status: StatusCodes.BadTypeDefinitionInvalid };
  const path = o.browsePath ?? [];
  for (const q of path) if (q === null || q === undefined || !q.name) return { status: StatusCodes.BadBrowseNameInvalid };
  let conditionId = false;
  if (o.attributeId === AttributeIds.NodeId) {
    if (path.length > 0) return { status: StatusCodes.BadAttributeIdInvalid };
    conditionId = true;
  } else if (o.attributeId !== AttributeIds.Value) {
    return { status: StatusCodes.BadAttributeIdInvalid };
  } else if (path.length === 0) {
    return { status: StatusCodes.BadBrowseNameInvalid };
  }
  let range: NumericRange | undefined;
  if (o.indexRange !== undefined && o.indexRange !== "") {
    const parsed = parseNumericRange(o.indexRange);
    if (!parsed.ok) return { status: StatusCodes.BadIndexRangeInvalid };
    range = parsed.range;
  }
  const typeId = t.value === ObjectTypeIds.BaseEventType ? undefined : (t.value as number);
  return { status: StatusCodes.Good, field: { typeId, key: pathKey(path), conditionId, range } };
}

function pathKey(path: readonly QualifiedName[]): string {
  let key = "";
  for (let i = 0; i < path.length; i++) {
    const q = path[i];
    if (i > 0) key += "/";
    key += q.namespaceIndex === 0 ? q.name : `${q.namespaceIndex}:${q.name}`;
  }
  return key;
}

function operandOf(registry: NamespaceRegistry, eo: ExtensionObject | null | undefined, own: number, count: number): { status: number; operand?: Operand } {
  const id = eo?.typeId?.namespace === 0 ? eo.typeId.value : -1;
  const body = eo?.body as Record<string, unknown> | null | undefined;
  if (body === null || body === undefined || typeof body !== "object" || Buffer.isBuffer(body)) return { status: StatusCodes.BadFilterOperandInvalid };
  switch (id) {
    case ObjectIds.ElementOperand_Encoding_DefaultBinary:
    case DataTypeIds.ElementOperand: {
      // Part 4 §7.7.4.2: an element refers only to later elements (no loops).
      const index = body.index as number;
      if (!(index > own && index < count)) return { status: StatusCodes.BadFilterOperandInvalid };
      return { status: StatusCodes.Good, operand: { kind: OperandKind.Element, index } };
    }
    case ObjectIds.LiteralOperand_Encoding_DefaultBinary:
    case DataTypeIds.LiteralOperand:
      return { status: StatusCodes.Good, operand: { kind: OperandKind.Literal, value: (body.value as Variant | undefined) ?? NULL_VARIANT } };
    case ObjectIds.SimpleAttributeOperand_Encoding_DefaultBinary:
    case DataTypeIds.SimpleAttributeOperand: {
      const f = compileField(registry, body as unknown as SimpleAttributeOperand);
      return f.field ? { status: StatusCodes.Good, operand: { kind: OperandKind.Field, field: f.field } } : { status: f.status };
    }
    default:
      return { status: StatusCodes.BadFilterOperandInvalid };
  }
}

function isNodeIdLiteral(o: Operand | undefined): boolean {
  return o !== undefined && o.kind === OperandKind.Literal && o.value.dataType === BuiltinType.NodeId && o.value.arrayType === VariantArrayType.Scalar;
}

export interface ParsedEventFilter {
  /** Good, or the operation's status (BadEventFilterInvalid, BadFilterNotAllowed, ...). */
  readonly status: number;
  readonly filter?: CompiledEventFilter;
  /** EventFilterResult as an ExtensionObject, when any clause is not Good. */
  readonly result?: ExtensionObject;
}

function isNullFilter(f: ExtensionObject | undefined): boolean {
  return f === undefined || f === null || (f.body === null && f.typeId.namespace === 0 && f.typeId.value === 0);
}

/**
 * Checks and compiles the filter of an event monitored item. Part 4 §7.22.3: at least one valid
 * select clause; an invalid where clause fails the item; each clause's status goes into the
 * EventFilterResult.
 */
export function parseEventFilter(registry: NamespaceRegistry, filter: ExtensionObject | undefined): ParsedEventFilter {
  if (isNullFilter(filter)) return { status: StatusCodes.BadEventFilterInvalid };
  const f = filter as ExtensionObject;
  const id = f.typeId.namespace === 0 ? f.typeId.value : -1;
  if (id !== ObjectIds.EventFilter_Encoding_DefaultBinary && id !== DataTypeIds.EventFilter) {
    // A DataChangeFilter or an AggregateFilter on an EventNotifier (Part 4 §7.22.1).
    return { status: StatusCodes.BadFilterNotAllowed };
  }
  const body = f.body as Partial<EventFilter> | null;
  if (body === null || typeof body !== "object" || Buffer.isBuffer(body)) return { status: StatusCodes.BadEventFilterInvalid };
  const clauses = body.selectClauses ?? [];
  const elements = body.whereClause?.elements ?? [];
  if (clauses.length === 0 || clauses.length > MAX_SELECT_CLAUSES || elements.length > MAX_WHERE_ELEMENTS) return { status: StatusCodes.BadEventFilterInvalid };

  const selectResults: number[] = [];
  const selects: (FieldRef | undefined)[] = [];
  let anyGood = false;
  let anyBad = false;
  for (const c of clauses) {
    const r = compileField(registry, c);
    selectResults.push(r.status);
    selects.push(r.field);
    if (r.field) anyGood = true;
    else anyBad = true;
  }

  const elementResults: ContentFilterElementResult[] = [];
  const compiled: Element[] = [];
  let whereBad = false;
  for (let i = 0; i < elements.length; i++) {
    const e = elements[i];
    const op = e.filterOperator;
    const raw = e.filterOperands ?? [];
    const counts = operandCount(op);
    if (counts === undefined) {
      const unsupported = op === FilterOperator.InView || op === FilterOperator.RelatedTo;
      elementResults.push({ statusCode: unsupported ? StatusCodes.BadFilterOperatorUnsupported : StatusCodes.BadFilterOperatorInvalid, operandStatusCodes: [], operandDiagnosticInfos: [] });
      whereBad = true;
      continue;
    }
    if (raw.length < counts[0] || raw.length > counts[1]) {
      elementResults.push({ statusCode: StatusCodes.BadFilterOperandCountMismatch, operandStatusCodes: [], operandDiagnosticInfos: [] });
      whereBad = true;
      continue;
    }
    const operandStatus: number[] = [];
    const operands: Operand[] = [];
    let bad = false;
    for (const eo of raw) {
      const r = operandOf(registry, eo, i, elements.length);
      operandStatus.push(r.status);
      if (r.operand) operands.push(r.operand);
      else bad = true;
    }
    // OfType names a type, Cast a target DataType: both as NodeId literals (Part 4 Table 119).
    if (!bad && op === FilterOperator.OfType && !isNodeIdLiteral(operands[0])) {
      operandStatus[0] = StatusCodes.BadFilterOperandInvalid;
      bad = true;
    }
    if (!bad && op === FilterOperator.Cast && !isNodeIdLiteral(operands[1])) {
      operandStatus[1] = StatusCodes.BadFilterOperandInvalid;
      bad = true;
    }
    elementResults.push({ statusCode: bad ? StatusCodes.BadFilterOperandInvalid : StatusCodes.Good, operandStatusCodes: bad ? operandStatus : [], operandDiagnosticInfos: [] });
    if (bad) whereBad = true;
    else compiled.push({ op, operands });
  }

  let result: ExtensionObject | undefined;
  if (anyBad || whereBad) {
    const whereClauseResult: ContentFilterResult = { elementResults: whereBad ? elementResults : [], elementDiagnosticInfos: [] };
    const r: EventFilterResult = { selectClauseResults: anyBad ? selectResults : [], selectClauseDiagnosticInfos: [], whereClauseResult };
    result = { typeId: numericNodeId(ObjectIds.EventFilterResult_Encoding_DefaultBinary), body: r };
  }
  if (!anyGood || whereBad) return { status: StatusCodes.BadEventFilterInvalid, result };
  return { status: StatusCodes.Good, filter: new CompiledEventFilter(registry, selects, compiled), result };
}

// ---- evaluation ----------------------------------------------------------------------------

function isNull(v: Variant): boolean {
  return v.dataType === BuiltinType.Null || v.value === null || v.value === undefined;
}

function isNumeric(t: BuiltinType): boolean {
  return (t >= BuiltinType.SByte && t <= BuiltinType.Double) || t === BuiltinType.DateTime || t === BuiltinType.StatusCode;
}

/** A value compared by Part 4 §7.7.3's implicit conversions: numbers, then text, else encoded identity. */
function comparable(v: Variant): number | bigint | string | boolean | undefined {
  if (v.arrayType !== VariantArrayType.Scalar) return undefined;
  const x = v.value;
  switch (v.dataType) {
    case BuiltinType.Boolean:
      return x as boolean;
    case BuiltinType.String:
    case BuiltinType.Guid:
    case BuiltinType.XmlElement:
      return x as string;
    case BuiltinType.LocalizedText:
      return (x as LocalizedText).text ?? "";
    case BuiltinType.QualifiedName:
      return (x as QualifiedName).name;
    case BuiltinType.NodeId:
      return String(nodeIdKey(x as NodeId));
    case BuiltinType.ByteString:
      return Buffer.isBuffer(x) ? x.toString("hex") : undefined;
    default:
      if (isNumeric(v.dataType)) return typeof x === "bigint" ? x : (x as number);
      return undefined;
  }
}

function numberOf(x: number | bigint | string | boolean): number | bigint | undefined {
  if (typeof x === "number" || typeof x === "bigint") return x;
  if (typeof x === "boolean") return x ? 1 : 0;
  const n = Number(x);
  return x.trim() !== "" && Number.isFinite(n) ? n : undefined;
}

/** <0, 0, >0, or undefined when the two cannot be compared. */
function compare(a: Variant, b: Variant): number | undefined {
  const x = comparable(a);
  const y = comparable(b);
  if (x === undefined || y === undefined) return undefined;
  if (typeof x === "string" && typeof y === "string") return x < y ? -1 : x > y ? 1 : 0;
  if (typeof x === "boolean" && typeof y === "boolean") return Number(x) - Number(y);
  const nx = numberOf(x);
  const ny = numberOf(y);
  if (nx === undefined || ny === undefined) return undefined;
  if (typeof nx === "bigint" || typeof ny === "bigint") {
    const bx = typeof nx === "bigint" ? nx : Number.isInteger(nx) ? BigInt(nx) : undefined;
    const by = typeof ny === "bigint" ? ny : Number.isInteger(ny) ? BigInt(ny) : undefined;
    if (bx === undefined || by === undefined) return Number(nx) - Number(ny);
    return bx < by ? -1 : bx > by ? 1 : 0;
  }
  return nx - ny;
}

/** Part 4 Table 119 Like: % any run, _ one character, [list] / [^list] one character of (not of) the list, \ escapes. */
function likePattern(pattern: string): RegExp {
  let re = "^";
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i];
    if (c === "\\" && i + 1 < pattern.length) {
      re += pattern[++i].replace(/[.*+?^${}()|[\]\\/-]/g, "\\$&");
    } else if (c === "%") {
      re += "[\\s\\S]*";
    } else if (c === "_") {
      re += "[\\s\\S]";
    } else if (c === "[") {
      const end = pattern.indexOf("]", i + 1);
      if (end < 0) {
        re += "\\[";
        continue;
      }
      let body = pattern.slice(i + 1, end);
      const negate = body.startsWith("^");
      if (negate) body = body.slice(1);
      re += `[${negate ? "^" : ""}${body.replace(/[\\\]]/g, "\\$&")}]`;
      i = end;
    } else {
      re += c.replace(/[.*+?^${}()|[\]\\/-]/g, "\\$&");
    }
  }
  return new RegExp(re + "$", "s");
}

const INTEGER_TYPES = new Set([BuiltinType.SByte, BuiltinType.Byte, BuiltinType.Int16, BuiltinType.UInt16, BuiltinType.Int32, BuiltinType.UInt32, BuiltinType.Int64, BuiltinType.UInt64]);

/** Part 4 Table 119 Cast: to a built-in numeric, Boolean or String type; null when it does not convert. */
function cast(v: Variant, target: NodeId, registry: NamespaceRegistry): Variant {
  const to = registry.builtinTypeOf(target);
  const x = comparable(v);
  if (to === undefined || x === undefined) return NULL_VARIANT;
  if (to === v.dataType) return v;
  if (to === BuiltinType.String) return { dataType: to, arrayType: VariantArrayType.Scalar, value: String(x) };
  if (to === BuiltinType.Boolean) {
    const n = numberOf(x);
    if (typeof x === "string" && /^(true|false)$/i.test(x)) return bool(x.toLowerCase() === "true");
    return n === undefined ? NULL_VARIANT : bool(Number(n) !== 0);
  }
  if (!isNumeric(to)) return NULL_VARIANT;
  const n = numberOf(x);
  if (n === undefined) return NULL_VARIANT;
  if (to === BuiltinType.Int64 || to === BuiltinType.UInt64) {
    const num = Number(n);
    if (typeof n !== "bigint" && !Number.isFinite(num)) return NULL_VARIANT;
    return { dataType: to, arrayType: VariantArrayType.Scalar, value: typeof n === "bigint" ? n : BigInt(Math.trunc(num)) };
  }
  const num = Number(n);
  return { dataType: to, arrayType: VariantArrayType.Scalar, value: INTEGER_TYPES.has(to) ? Math.trunc(num) : num };
}

function bitwise(a: Variant, b: Variant, or: boolean): Variant {
  if (!INTEGER_TYPES.has(a.dataType) || !INTEGER_TYPES.has(b.dataType)) return NULL_VARIANT;
  const x = BigInt(a.value as number | bigint);
  const y = BigInt(b.value as number | bigint);
  const r = or ? x | y : x & y;
  const wide = a.dataType === BuiltinType.Int64 || a.dataType === BuiltinType.UInt64;
  return { dataType: a.dataType, arrayType: VariantArrayType.Scalar, value: wide ? r : Number(r) };
}

function truth(v: Variant): boolean | null {
  if (isNull(v) || v.dataType !== BuiltinType.Boolean) return null;
  return v.value === true;
}

export class CompiledEventFilter {
  private readonly typeChecks = new Map<number, boolean>();
  private readonly patterns = new Map<string, RegExp>();

  constructor(
    private readonly registry: NamespaceRegistry,
    /** One per select clause; undefined for the invalid ones (their field is always null). */
    readonly selects: readonly (FieldRef | undefined)[],
    private readonly where: readonly Element[],
  ) {}

  /** Whether `event` passes the where clause (no clause: every event). */
  passes(event: UaEvent): boolean {
    if (this.where.length === 0) return true;
    return truth(this.evaluate(event, 0)) === true;
  }

  /** The selected fields, one Variant per select clause (Part 4 §7.22.3 EventFieldList). */
  fieldsOf(event: UaEvent): Variant[] {
    const s = this.selects;
    const out = new Array<Variant>(s.length);
    for (let i = 0; i < s.length; i++) out[i] = s[i] === undefined ? NULL_VARIANT : this.field(event, s[i]!);
    return out;
  }

  private isOfType(eventType: number, typeId: number): boolean {
    if (typeId < 0) return false;
    const key = eventType * 65536 + (typeId % 65536);
    let r = this.typeChecks.get(key);
    if (r === undefined) {
      r = this.registry.isSubtypeOf(numericNodeId(eventType), numericNodeId(typeId));
      this.typeChecks.set(key, r);
    }
    return r;
  }

  private field(event: UaEvent, f: FieldRef): Variant {
    if (f.typeId !== undefined && !this.isOfType(event.typeId, f.typeId)) return NULL_VARIANT;
    if (f.conditionId) return event.conditionId ? { dataType: BuiltinType.NodeId, arrayType: VariantArrayType.Scalar, value: event.conditionId } : NULL_VARIANT;
    const v = event.get(f.key);
    if (f.range === undefined || isNull(v)) return v;
    const r = applyRange(v, f.range);
    return r.ok ? r.value : NULL_VARIANT;
  }

  private operand(event: UaEvent, o: Operand): Variant {
    switch (o.kind) {
      case OperandKind.Element:
        return this.evaluate(event, o.index);
      case OperandKind.Literal:
        return o.value;
      default:
        return this.field(event, o.field);
    }
  }

  private evaluate(event: UaEvent, index: number): Variant {
    const e = this.where[index];
    if (e === undefined) return NULL_VARIANT;
    const ops = e.operands;
    const a = this.operand(event, ops[0]);
    switch (e.op) {
      case FilterOperator.IsNull:
        return bool(isNull(a));
      case FilterOperator.Not: {
        const t = truth(a);
        return t === null ? NULL_VARIANT : bool(!t);
      }
      case FilterOperator.And: {
        const x = truth(a);
        if (x === false) return FALSE;
        const y = truth(this.operand(event, ops[1]));
        if (y === false) return FALSE;
        return x === null || y === null ? NULL_VARIANT : TRUE;
      }
      case FilterOperator.Or: {
        const x = truth(a);
        if (x === true) return TRUE;
        const y = truth(this.operand(event, ops[1]));
        if (y === true) return TRUE;
        return x === null || y === null ? NULL_VARIANT : FALSE;
      }
      case FilterOperator.OfType:
        return bool(this.isOfType(event.typeId, nodeTypeId(a)));
      case FilterOperator.Cast:
        return isNull(a) ? NULL_VARIANT : cast(a, this.operand(event, ops[1]).value as NodeId, this.registry);
      default:
        break;
    }
    if (isNull(a)) return NULL_VARIANT;
    const b = this.operand(event, ops[1]);
    switch (e.op) {
      case FilterOperator.Equals:
      case FilterOperator.GreaterThan:
      case FilterOperator.LessThan:
      case FilterOperator.GreaterThanOrEqual:
      case FilterOperator.LessThanOrEqual: {
        if (isNull(b)) return NULL_VARIANT;
        const c = compare(a, b);
        if (c === undefined) return e.op === FilterOperator.Equals ? FALSE : NULL_VARIANT;
        if (e.op === FilterOperator.Equals) return bool(c === 0);
        if (e.op === FilterOperator.GreaterThan) return bool(c > 0);
        if (e.op === FilterOperator.LessThan) return bool(c < 0);
        if (e.op === FilterOperator.GreaterThanOrEqual) return bool(c >= 0);
        return bool(c <= 0);
      }
      case FilterOperator.Between: {
        const hi = this.operand(event, ops[2]);
        if (isNull(b) || isNull(hi)) return NULL_VARIANT;
        const lo = compare(a, b);
        const up = compare(a, hi);
        return lo === undefined || up === undefined ? NULL_VARIANT : bool(lo >= 0 && up <= 0);
      }
      case FilterOperator.InList: {
        for (let i = 1; i < ops.length; i++) {
          const item = i === 1 ? b : this.operand(event, ops[i]);
          if (!isNull(item) && compare(a, item) === 0) return TRUE;
        }
        return FALSE;
      }
      case FilterOperator.Like: {
        const s = comparable(a);
        const p = comparable(b);
        if (typeof s !== "string" || typeof p !== "string") return NULL_VARIANT;
        let re = this.patterns.get(p);
        if (re === undefined) {
          re = likePattern(p);
          this.patterns.set(p, re);
        }
        return bool(re.test(s));
      }
      case FilterOperator.BitwiseAnd:
      case FilterOperator.BitwiseOr:
        return isNull(b) ? NULL_VARIANT : bitwise(a, b, e.op === FilterOperator.BitwiseOr);
      default:
        return NULL_VARIANT;
    }
  }
}

function nodeTypeId(v: Variant): number {
  const id = v.value as NodeId;
  return id.namespace === 0 && id.idType === IdType.Numeric ? (id.value as number) : -1;
}
