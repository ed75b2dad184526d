// The Read shape of the load client: its minimal check of a response's results (the hot path,
// no decode) and its full check (every Nth response), on responses made by the generated encoder.
import { describe, expect, it } from "vitest";
import { readShape } from "../../bench/client/shapes.js";
import { BinaryReader } from "../../src/ua/binary-reader.js";
import { BinaryWriter } from "../../src/ua/binary-writer.js";
import { BuiltinType, NULL_NODE_ID, VariantArrayType, numericNodeId, type DataValue } from "../../src/ua/builtins.js";
import { AttributeIds, VariableIds } from "../../src/ua/generated/node-ids.js";
import { StatusCodes } from "../../src/ua/generated/status-codes.js";
import { decodeResponseHeader, encodeReadResponse, type ReadValueId } from "../../src/ua/generated/types.js";

const node: ReadValueId = {
  nodeId: numericNodeId(VariableIds.Server_ServerStatus_CurrentTime),
  attributeId: AttributeIds.Value,
  dataEncoding: { namespaceIndex: 0, name: "" },
};
const good: DataValue = { value: { dataType: BuiltinType.Double, arrayType: VariantArrayType.Scalar, value: 1.5 } };
const bad: DataValue = { statusCode: StatusCodes.BadNodeIdUnknown };

/** A ReadResponse body (after its type id), and where its results array starts. */
function response(results: DataValue[], serviceResult: number = StatusCodes.Good): { b: Buffer; p: number; end: number } {
  const w = new BinaryWriter(Buffer.alloc(1024));
  encodeReadResponse(w, {
    responseHeader: { timestamp: 0, requestHandle: 3, serviceResult, serviceDiagnostics: {}, stringTable: undefined, additionalHeader: { typeId: NULL_NODE_ID, body: null } },
    results,
  });
  const b = w.buffer.subarray(0, w.pos);
  const r = new BinaryReader(b);
  decodeResponseHeader(r);
  return { b, p: r.pos, end: b.length };
}

describe("readShape", () => {
  const shape = readShape({ nodesToRead: [node, node] });

  it("passes two Good values, minimal and full check alike", () => {
    const { b, p, end } = response([good, good]);
    expect(shape.checkResults(b, p, end)).toBeNull();
    expect(shape.verify(new BinaryReader(b))).toEqual({ requestHandle: 3, error: null });
  });

  it("counts a wrong number of results as an error", () => {
    const { b, p, end } = response([good]);
    expect(shape.checkResults(b, p, end)).toBe("Read returned 1 results for 2 nodes");
    expect(shape.verify(new BinaryReader(b)).error).toBe("Read returned 1 results for 2 nodes");
  });

  it("sees a Bad first result without a value; the full check sees any Bad result", () => {
    const first = response([bad, good]);
    expect(shape.checkResults(first.b, first.p, first.end)).toBe("Read result BadNodeIdUnknown");
    const second = response([good, bad]);
    expect(shape.checkResults(second.b, second.p, second.end)).toBeNull();
    expect(shape.verify(new BinaryReader(second.b)).error).toBe("Read result BadNodeIdUnknown");
  });

  it("the full check names a Bad serviceResult", () => {
    const { b } = response([], StatusCodes.BadTooManyOperations);
    expect(shape.verify(new BinaryReader(b)).error).toBe("Read serviceResult BadTooManyOperations");
  });
});
