// The Read service's own decoder and encoder (src/services/read-items.ts, attribute.ts) against
// the generated ones they stand in for: every NodeId encoding, IndexRange and DataEncoding, small
// Reads (kept as objects) and large ones (flat, in batches), and every TimestampsToReturn.
import { describe, expect, it } from "vitest";
import { read, stamp } from "../../src/services/attribute.js";
import { BATCH, decodeCompactReadRequest, type CompactReadRequest } from "../../src/services/read-items.js";
import { BinaryReader } from "../../src/ua/binary-reader.js";
import { BinaryWriter } from "../../src/ua/binary-writer.js";
import { BuiltinType, IdType, numericNodeId, VariantArrayType, type DataValue, type NodeId } from "../../src/ua/builtins.js";
import { TimestampsToReturn } from "../../src/ua/generated/enums.js";
import { decodeReadRequest, encodeReadRequest, encodeReadResponse, type ReadValueId } from "../../src/ua/generated/types.js";

let seed = 7;
function rnd(n: number): number {
  seed = (seed * 1103515245 + 12345) & 0x7fffffff;
  return seed % n;
}

function nodeId(): NodeId {
  switch (rnd(6)) {
    case 0:
      return numericNodeId(rnd(256));
    case 1:
      return numericNodeId(rnd(65536), 1 + rnd(255));
    case 2:
      return numericNodeId(0x10000 + rnd(1 << 30), rnd(65536));
    case 3:
      return { namespace: rnd(4), idType: IdType.String, value: `plc${rnd(10)}.tag${rnd(1000)}` };
    case 4:
      return { namespace: 2, idType: IdType.Guid, value: "72962B91-FA75-4AE6-8D28-B404DC7DAF63" };
    default:
      return { namespace: 3, idType: IdType.Opaque, value: Buffer.from([rnd(256), rnd(256), 1]) };
  }
}

function readValueId(): ReadValueId {
  const ranges = [undefined, "", "1:2", "0"];
  const encodings = [{ namespaceIndex: 0, name: "" }, { namespaceIndex: 0, name: "Default Binary" }, { namespaceIndex: 2, name: "Other" }];
  return { nodeId: nodeId(), attributeId: [13, 13, 13, 1, 3, 4, 99][rnd(7)], indexRange: ranges[rnd(4)], dataEncoding: encodings[rnd(3)] };
}

function encoded(nodes: ReadValueId[] | undefined, timestamps = TimestampsToReturn.Both): Buffer {
  const w = new BinaryWriter(Buffer.alloc(1024), 1 << 30);
  encodeReadRequest(w, { requestHeader: { authenticationToken: numericNodeId(5), timestamp: 0, requestHandle: 9, returnDiagnostics: 0, timeoutHint: 0 }, maxAge: 0, timestampsToReturn: timestamps, nodesToRead: nodes });
  return Buffer.from(w.view());
}

/** The items of a compact request as the generated decoder gives them (null DataEncodings and empty IndexRanges as absent). */
function itemsOf(req: CompactReadRequest): { nodeId: NodeId; attributeId: number; indexRange: string | undefined; dataEncoding: unknown }[] {
  const out = [];
  const items = req.items!;
  for (let start = 0; start < items.count; start += BATCH) {
    const batch = items.batch(start, Math.min(BATCH, items.count - start));
    for (const it of batch) out.push({ nodeId: { ...it.nodeId }, attributeId: it.attributeId, indexRange: it.indexRange || undefined, dataEncoding: norm(it.dataEncoding) });
  }
  return out;
}

function norm(q: { namespaceIndex: number; name?: string } | undefined): unknown {
  return q === undefined || (q.namespaceIndex === 0 && !q.name) ? undefined : { namespaceIndex: q.namespaceIndex, name: q.name };
}

describe("the Read service's decoder", () => {
  for (const n of [0, 1, 16, 17, BATCH, BATCH + 1, 1000]) {
    it(`${n} ReadValueIds: the same items as the generated decoder, in batches`, () => {
      const nodes = Array.from({ length: n }, readValueId);
      const body = encoded(nodes);
      const r = new BinaryReader(body);
      const req = decodeCompactReadRequest(r);
      expect(r.pos).toBe(body.length);
      const ref = decodeReadRequest(new BinaryReader(body));
      expect(req.requestHeader).toEqual(ref.requestHeader);
      expect(req.items!.count).toBe(n);
      expect(itemsOf(req)).toEqual(ref.nodesToRead!.map((v) => ({ nodeId: { ...v.nodeId }, attributeId: v.attributeId, indexRange: v.indexRange || undefined, dataEncoding: norm(v.dataEncoding) })));
      for (let i = 0; i < n; i++) expect(req.items!.attributeId(i)).toBe(ref.nodesToRead![i].attributeId);
    });
  }

  it("a null array, and malformed input fails as the generated decoder fails", () => {
    expect(decodeCompactReadRequest(new BinaryReader(encoded(undefined))).items).toBeUndefined();
    const body = encoded(Array.from({ length: 40 }, readValueId));
    for (const cut of [body.length - 1, body.length - 7, 60]) {
      expect(() => decodeCompactReadRequest(new BinaryReader(body.subarray(0, cut)))).toThrow();
      expect(() => decodeReadRequest(new BinaryReader(body.subarray(0, cut)))).toThrow();
    }
    // A NodeId encoding byte with ExpandedNodeId flags: refused by both.
    const bad = Buffer.from(encoded([{ nodeId: numericNodeId(7), attributeId: 13, dataEncoding: { namespaceIndex: 0, name: "" } }]));
    const at = bad.length - 4 - 4 - 2 - 4 - 2;
    expect(bad[at]).toBe(0);
    bad[at] = 0x40;
    expect(() => decodeCompactReadRequest(new BinaryReader(bad))).toThrow();
    expect(() => decodeReadRequest(new BinaryReader(bad))).toThrow();
  });
});

describe("the Read response's encoder", () => {
  const now = 1_700_000_000_123;
  function dataValue(): DataValue {
    const dv: DataValue = {};
    if (rnd(4) !== 0) dv.value = { dataType: BuiltinType.Double, arrayType: VariantArrayType.Scalar, value: rnd(1000) / 7 };
    if (rnd(3) === 0) dv.statusCode = 0x40000000;
    if (rnd(2) === 0) dv.sourceTimestamp = now - rnd(10_000);
    if (rnd(4) === 0) dv.sourcePicoseconds = rnd(10_000);
    if (rnd(3) === 0) dv.serverTimestamp = now - rnd(10_000);
    if (rnd(4) === 0) dv.serverPicoseconds = rnd(10_000);
    return dv;
  }

  for (const timestamps of [TimestampsToReturn.Source, TimestampsToReturn.Server, TimestampsToReturn.Both, TimestampsToReturn.Neither]) {
    it(`TimestampsToReturn ${TimestampsToReturn[timestamps]}: the bytes of encodeReadResponse with stamped copies`, () => {
      for (const n of [1, 40]) {
        const nodes = Array.from({ length: n }, readValueId);
        const req = decodeCompactReadRequest(new BinaryReader(encoded(nodes, timestamps)));
        const results = Array.from({ length: n }, dataValue);
        const responseHeader = { timestamp: now, requestHandle: 9, serviceResult: 0, serviceDiagnostics: {}, stringTable: [] };
        const ours = new BinaryWriter(Buffer.alloc(64), 1 << 30);
        (read.encode as (w: BinaryWriter, v: unknown) => void)(ours, { responseHeader, results, diagnosticInfos: [], items: req.items, timestamps, now });
        const ref = new BinaryWriter(Buffer.alloc(64), 1 << 30);
        encodeReadResponse(ref, {
          responseHeader,
          results: results.map((dv, i) => stamp(dv, timestamps, now, nodes[i].attributeId === 13 && dv.value !== undefined)),
          diagnosticInfos: [],
        });
        expect(Buffer.from(ours.view()).equals(Buffer.from(ref.view()))).toBe(true);
      }
    });
  }
});
