// EventFilter checking and evaluation (src/events/event-filter.ts) on inputs a client library
// would not send: bodies that did not decode, missing operands, element loops, Like patterns
// with the characters of regular expressions, and the three-valued logic of Part 4 Table 120
// with null operands.
import { describe, expect, it } from "vitest";
import { NamespaceRegistry } from "../../src/address-space/namespace-registry.js";
import { Ns0Manager } from "../../src/address-space/ns0-manager.js";
import { parseEventFilter } from "../../src/events/event-filter.js";
import { UaEvent } from "../../src/events/event.js";
import { BuiltinType, VariantArrayType, numericNodeId, type ExtensionObject, type Variant } from "../../src/ua/builtins.js";
import { FilterOperator } from "../../src/ua/generated/enums.js";
import { AttributeIds, ObjectIds, ObjectTypeIds } from "../../src/ua/generated/node-ids.js";
import { StatusCodes } from "../../src/ua/generated/status-codes.js";

const registry = new NamespaceRegistry();
new Ns0Manager(registry, {
  applicationUri: "urn:test",
  buildInfo: { productUri: "u", manufacturerName: "m", productName: "p", softwareVersion: "1", buildNumber: "1", buildDate: 0 },
});

const eo = (typeId: number, body: unknown): ExtensionObject => ({ typeId: numericNodeId(typeId), body: body as object });
const v = (dataType: BuiltinType, value: unknown): Variant => ({ dataType, arrayType: VariantArrayType.Scalar, value });
const sao = (path: string, type: number = ObjectTypeIds.BaseEventType) =>
  eo(ObjectIds.SimpleAttributeOperand_Encoding_DefaultBinary, { typeDefinitionId: numericNodeId(type), browsePath: path.split("/").map((name) => ({ namespaceIndex: 0, name })), attributeId: AttributeIds.Value });
const lit = (value: Variant) => eo(ObjectIds.LiteralOperand_Encoding_DefaultBinary, { value });
const elem = (index: number) => eo(ObjectIds.ElementOperand_Encoding_DefaultBinary, { index });
const filter = (elements: Array<{ filterOperator: FilterOperator; filterOperands: ExtensionObject[] }>, selects = [sao("Severity")]) =>
  eo(ObjectIds.EventFilter_Encoding_DefaultBinary, { selectClauses: selects.map((s) => s.body), whereClause: { elements } });

function event(severity: number, message: string | null): UaEvent {
  const e = new UaEvent(ObjectTypeIds.SystemEventType, { sourceNode: numericNodeId(ObjectIds.Server), sourceName: "t", message: "", severity });
  if (message === null) e.set("Message", v(BuiltinType.Null, null));
  else e.set("Message", v(BuiltinType.LocalizedText, { text: message }));
  return e;
}

describe("checking", () => {
  it("refuses bodies that did not decode and operands of unknown kinds", () => {
    expect(parseEventFilter(registry, eo(ObjectIds.EventFilter_Encoding_DefaultBinary, Buffer.from([1, 2, 3]))).status).toBe(StatusCodes.BadEventFilterInvalid);
    expect(parseEventFilter(registry, eo(ObjectIds.EventFilter_Encoding_DefaultBinary, { whereClause: {} })).status).toBe(StatusCodes.BadEventFilterInvalid);
    const r = parseEventFilter(registry, filter([{ filterOperator: FilterOperator.Equals, filterOperands: [sao("Severity"), eo(ObjectIds.AttributeOperand_Encoding_DefaultBinary, { nodeId: numericNodeId(1) })] }]));
    expect(r.status).toBe(StatusCodes.BadEventFilterInvalid);
    const body = (r.result!.body as { whereClauseResult: { elementResults: Array<{ statusCode: number; operandStatusCodes: number[] }> } }).whereClauseResult;
    expect(body.elementResults[0].operandStatusCodes).toEqual([StatusCodes.Good, StatusCodes.BadFilterOperandInvalid]);
    const nullOperand = parseEventFilter(registry, filter([{ filterOperator: FilterOperator.Not, filterOperands: [{ typeId: numericNodeId(0), body: null }] }]));
    expect(nullOperand.status).toBe(StatusCodes.BadEventFilterInvalid);
  });

  it("refuses elements that refer to themselves or to an element before them", () => {
    for (const index of [0, -1, 5]) {
      const r = parseEventFilter(registry, filter([{ filterOperator: FilterOperator.Not, filterOperands: [elem(index)] }]));
      expect(r.status, `index ${index}`).toBe(StatusCodes.BadEventFilterInvalid);
    }
  });

  it("refuses a filter of more select clauses or elements than the published limits", () => {
    const many = Array.from({ length: 65 }, () => sao("Severity"));
    expect(parseEventFilter(registry, filter([], many)).status).toBe(StatusCodes.BadEventFilterInvalid);
  });
});

describe("evaluation", () => {
  const passes = (elements: Parameters<typeof filter>[0], e: UaEvent) => {
    const r = parseEventFilter(registry, filter(elements));
    expect(r.status).toBe(StatusCodes.Good);
    return r.filter!.passes(e);
  };

  it("Like treats the characters of regular expressions literally", () => {
    const like = (pattern: string) => [{ filterOperator: FilterOperator.Like, filterOperands: [sao("Message"), lit(v(BuiltinType.String, pattern))] }];
    expect(passes(like("a.b (c)*"), event(1, "a.b (c)*"))).toBe(true);
    expect(passes(like("a.b (c)*"), event(1, "aXb (c)"))).toBe(false);
    expect(passes(like("100%"), event(1, "100 percent"))).toBe(true);
    expect(passes(like("100\\%"), event(1, "100 percent"))).toBe(false);
    expect(passes(like("100\\%"), event(1, "100%"))).toBe(true);
    expect(passes(like("[abc]_x"), event(1, "bzx"))).toBe(true);
    expect(passes(like("[^abc]_x"), event(1, "bzx"))).toBe(false);
    expect(passes(like("line%"), event(1, "line one\nline two"))).toBe(true);
  });

  it("a comparison with a null operand is null, and Not, And, Or follow Part 4 Table 120", () => {
    const eqNull = { filterOperator: FilterOperator.Equals, filterOperands: [sao("Message"), lit(v(BuiltinType.String, "x"))] };
    const sevGt = { filterOperator: FilterOperator.GreaterThan, filterOperands: [sao("Severity"), lit(v(BuiltinType.UInt16, 10))] };
    const noMessage = event(500, null);
    // Equals(null, "x") is null: neither it nor Not of it pass.
    expect(passes([eqNull], noMessage)).toBe(false);
    expect(passes([{ filterOperator: FilterOperator.Not, filterOperands: [elem(1)] }, eqNull], noMessage)).toBe(false);
    // null Or TRUE = TRUE, null And TRUE = null, null And FALSE = FALSE.
    expect(passes([{ filterOperator: FilterOperator.Or, filterOperands: [elem(1), elem(2)] }, eqNull, sevGt], noMessage)).toBe(true);
    expect(passes([{ filterOperator: FilterOperator.And, filterOperands: [elem(1), elem(2)] }, eqNull, sevGt], noMessage)).toBe(false);
    const low = event(5, null);
    expect(passes([{ filterOperator: FilterOperator.Not, filterOperands: [elem(1)] }, { filterOperator: FilterOperator.And, filterOperands: [elem(2), elem(3)] }, eqNull, sevGt], low)).toBe(true);
  });

  it("compares numbers across built-in types, 64-bit ones included, and strings that hold numbers", () => {
    const e = event(700, "x");
    e.set("Big", v(BuiltinType.UInt64, 2n ** 60n));
    const cmp = (op: FilterOperator, a: ExtensionObject, b: ExtensionObject) => passes([{ filterOperator: op, filterOperands: [a, b] }], e);
    expect(cmp(FilterOperator.Equals, sao("Severity"), lit(v(BuiltinType.Double, 700)))).toBe(true);
    expect(cmp(FilterOperator.Equals, sao("Severity"), lit(v(BuiltinType.String, "700")))).toBe(true);
    expect(cmp(FilterOperator.GreaterThan, sao("Big"), lit(v(BuiltinType.Int64, 2n ** 60n - 1n)))).toBe(true);
    expect(cmp(FilterOperator.LessThan, sao("Big"), lit(v(BuiltinType.Int32, 5)))).toBe(false);
    expect(cmp(FilterOperator.Equals, sao("Severity"), lit(v(BuiltinType.String, "seven hundred")))).toBe(false);
  });

  it("selects nothing but null for a field of a type the event is not", () => {
    const r = parseEventFilter(registry, filter([], [sao("Severity"), sao("SystemState", ObjectTypeIds.SystemStatusChangeEventType)]));
    const fields = r.filter!.fieldsOf(event(300, "x"));
    expect(fields.map((f) => f.value)).toEqual([300, null]);
  });
});
