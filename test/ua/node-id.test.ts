import { describe, expect, it } from "vitest";
import { IdType, numericNodeId, stringNodeId, type NodeId } from "../../src/ua/builtins.js";
import { StatusCodes } from "../../src/ua/generated/status-codes.js";
import { expandedNodeIdToString, isNullNodeId, nodeIdEquals, nodeIdKey, nodeIdToString, parseNodeId } from "../../src/ua/node-id.js";
import { thrownStatus } from "./helpers.js";

const GUID = "72962b91-fa75-4ae6-8d28-b404dc7daf63";

describe("NodeId text form", () => {
  const cases: [string, NodeId][] = [
    ["i=85", numericNodeId(85)],
    ["i=0", numericNodeId(0)],
    ["ns=1;i=4294967295", numericNodeId(4294967295, 1)],
    ["ns=1;s=boiler.temp", stringNodeId("boiler.temp", 1)],
    ["ns=1;s=a;b=c", stringNodeId("a;b=c", 1)],
    ["s=Hot水", stringNodeId("Hot水", 0)],
    [`ns=2;g=${GUID}`, { namespace: 2, idType: IdType.Guid, value: GUID }],
    ["ns=65535;b=AQID/w==", { namespace: 65535, idType: IdType.Opaque, value: Buffer.from([1, 2, 3, 255]) }],
  ];
  it.each(cases)("%s", (text, id) => {
    expect(parseNodeId(text)).toEqual(id);
    expect(nodeIdToString(id)).toBe(text);
  });

  it("normalizes Guid case", () => {
    expect(parseNodeId(`g=${GUID.toUpperCase()}`).value).toBe(GUID);
    expect(nodeIdToString({ namespace: 0, idType: IdType.Guid, value: GUID.toUpperCase() })).toBe(`g=${GUID}`);
  });

  it.each([
    "",
    "85",
    "i=",
    "i=-1",
    "i=1.5",
    "i=0x10",
    "i=4294967296",
    "i= 1",
    "ns=1",
    "ns=;i=1",
    "ns=65536;i=1",
    "ns=01x;i=1",
    "ns=1;x=1",
    "ns=1;s=",
    "g=72962b91-fa75-4ae6-8d28",
    "b=not base64!",
    "b=AQI",
    "nsu=urn:x;i=1",
  ])("refuses %j with BadNodeIdInvalid", (text) => {
    expect(thrownStatus(() => parseNodeId(text))).toBe(StatusCodes.BadNodeIdInvalid);
  });
});

describe("equality, keys, null", () => {
  const distinct: NodeId[] = [
    numericNodeId(5),
    numericNodeId(5, 1),
    numericNodeId(4294967295),
    numericNodeId(0, 1),
    stringNodeId("5", 0),
    stringNodeId("5", 1),
    stringNodeId("i=5", 0),
    { namespace: 0, idType: IdType.Guid, value: GUID },
    { namespace: 1, idType: IdType.Guid, value: GUID },
    { namespace: 0, idType: IdType.Opaque, value: Buffer.from([5]) },
    { namespace: 0, idType: IdType.Opaque, value: Buffer.from([5, 0]) },
  ];

  it("nodeIdEquals compares by value", () => {
    for (let i = 0; i < distinct.length; i++) {
      for (let j = 0; j < distinct.length; j++) expect(nodeIdEquals(distinct[i], distinct[j]), `${i} ${j}`).toBe(i === j);
    }
    expect(nodeIdEquals(stringNodeId("x", 1), stringNodeId("x", 1))).toBe(true);
    expect(nodeIdEquals({ namespace: 0, idType: IdType.Opaque, value: Buffer.from([1]) }, { namespace: 0, idType: IdType.Opaque, value: Buffer.from([1]) })).toBe(true);
    expect(nodeIdEquals({ namespace: 0, idType: IdType.Guid, value: GUID.toUpperCase() }, { namespace: 0, idType: IdType.Guid, value: GUID })).toBe(true);
  });

  it("nodeIdKey is distinct for distinct ids, equal for equal ids, a number for numeric ids", () => {
    const keys = distinct.map(nodeIdKey);
    expect(new Set(keys).size).toBe(distinct.length);
    expect(nodeIdKey(numericNodeId(85))).toBe(85);
    expect(typeof nodeIdKey(numericNodeId(85, 3))).toBe("number");
    expect(nodeIdKey(numericNodeId(4294967295, 65535))).not.toBe(nodeIdKey(numericNodeId(0, 65535)));
    expect(nodeIdKey(stringNodeId("a", 1))).toBe(nodeIdKey(parseNodeId("ns=1;s=a")));
    expect(nodeIdKey({ namespace: 2, idType: IdType.Guid, value: GUID.toUpperCase() })).toBe(nodeIdKey(parseNodeId(`ns=2;g=${GUID}`)));
  });

  it("isNullNodeId", () => {
    expect(isNullNodeId(numericNodeId(0))).toBe(true);
    expect(isNullNodeId(stringNodeId("", 0))).toBe(true);
    expect(isNullNodeId({ namespace: 0, idType: IdType.Guid, value: "00000000-0000-0000-0000-000000000000" })).toBe(true);
    expect(isNullNodeId({ namespace: 0, idType: IdType.Opaque, value: Buffer.alloc(0) })).toBe(true);
    expect(isNullNodeId(undefined)).toBe(true);
    expect(isNullNodeId(numericNodeId(0, 1))).toBe(false);
    expect(isNullNodeId(numericNodeId(1))).toBe(false);
    expect(isNullNodeId(stringNodeId("x", 0))).toBe(false);
  });

  it("expandedNodeIdToString", () => {
    expect(expandedNodeIdToString({ nodeId: numericNodeId(85), serverIndex: 0 })).toBe("i=85");
    expect(expandedNodeIdToString({ nodeId: stringNodeId("a", 2), serverIndex: 3 })).toBe("svr=3;ns=2;s=a");
    expect(expandedNodeIdToString({ nodeId: numericNodeId(7, 2), namespaceUri: "urn:a;b", serverIndex: 0 })).toBe("nsu=urn:a%3Bb;i=7");
  });
});
