// A ReadRequest decoded for the Read service (Part 4 §5.10.2) with its nodesToRead in flat form:
// one Uint32Array of three words per ReadValueId (namespace and IdType, numeric identifier,
// AttributeId), with the few parts that are not numbers (string, Guid and ByteString
// identifiers, IndexRanges, DataEncodings) kept aside only for the items that have them.
//
// Why: decoded as objects, a Read of 10,000 nodes is 20,000 objects (a ReadValueId and its NodeId
// each) that live while the Read runs. A Read that outlives a scavenge of the small young
// generation has them promoted, and the old generation fills with dead Reads (bench hostile's
// slow readers, bench/RESULTS.md). In flat form the same Read is 12 bytes a node outside the JS
// heap.
//
// The node managers still read `AttributeRead` objects (node-manager.ts): `batch()` lends a
// batch of them, reused from one Read to the next and valid only until the next call, so a
// Read of any size makes at most BATCH of them once per process.
import type { AttributeRead } from "../address-space/node-manager.js";
import type { BinaryReader } from "../ua/binary-reader.js";
import { decodeNodeId } from "../ua/builtin-codec.js";
import { IdType, type QualifiedName } from "../ua/builtins.js";
import type { TimestampsToReturn } from "../ua/generated/enums.js";
import { decodeReadValueId, decodeRequestHeader, type ReadValueId, type RequestHeader } from "../ua/generated/types.js";
import { decodeQualifiedName } from "../ua/status-text-codec.js";

/** Items handed to the node managers at a time. */
export const BATCH = 256;
/** Reads of at most this many items keep their ReadValueIds as objects (ReadItems.objects). */
const SMALL = 16;
const NO_WORDS = new Uint32Array(0);

/** NodeId encodings of Part 6 §5.2.2.9 that carry a numeric identifier. */
const TWO_BYTE = 0;
const FOUR_BYTE = 1;
const NUMERIC = 2;

/** A ReadRequest with its nodesToRead flat (`items`, undefined for a null array). */
export interface CompactReadRequest {
  requestHeader: RequestHeader;
  maxAge: number;
  timestampsToReturn: TimestampsToReturn;
  items: ReadItems | undefined;
}

interface MutableNodeId {
  namespace: number;
  idType: IdType;
  value: number | string | Buffer;
}

interface MutableRead {
  nodeId: MutableNodeId;
  attributeId: number;
  indexRange: string | undefined;
  dataEncoding: QualifiedName | undefined;
}

/** The AttributeRead objects lent by `batch()`, made as needed, up to BATCH. */
const lent: MutableRead[] = [];
/** The array handed out: `lent`'s first n objects. */
const view: AttributeRead[] = [];

export class ReadItems {
  readonly count: number;
  /**
   * A small Read (at most SMALL items) as the generated decoder has it: in flat form it would cost
   * more than it saves (a typed array and the copy into lent objects, for a handful of items:
   * bench read's Reads of one value lose rate).
   */
  private readonly objects: ReadValueId[] | undefined;
  /** Per item: [namespace | IdType << 16, numeric identifier, AttributeId]. */
  private readonly words: Uint32Array;
  /** Non-numeric identifiers by item (absent: all numeric). */
  private others: (string | Buffer)[] | undefined;
  /** IndexRanges that are not null or empty, and DataEncodings that are not null, by item. */
  private ranges: Map<number, string> | undefined;
  private encodings: Map<number, QualifiedName> | undefined;

  constructor(count: number, objects?: ReadValueId[]) {
    this.count = count;
    this.objects = objects;
    this.words = objects === undefined ? new Uint32Array(count * 3) : NO_WORDS;
  }

  attributeId(i: number): number {
    const o = this.objects;
    return o === undefined ? this.words[i * 3 + 2] : o[i].attributeId;
  }

  /** Decodes item `i` (a ReadValueId, Part 4 §7.29) at r's position. */
  decode(r: BinaryReader, i: number): void {
    const w = this.words;
    const at = i * 3;
    const encoding = r.readByte();
    if (encoding === TWO_BYTE) {
      w[at + 1] = r.readByte();
    } else if (encoding === FOUR_BYTE) {
      w[at] = r.readByte();
      w[at + 1] = r.readUInt16();
    } else if (encoding === NUMERIC) {
      w[at] = r.readUInt16();
      w[at + 1] = r.readUInt32();
    } else {
      // Any other encoding (and any error) as the object decoder has it.
      r.pos--;
      const id = decodeNodeId(r);
      w[at] = id.namespace | (id.idType << 16);
      (this.others ??= [])[i] = id.value as string | Buffer;
    }
    w[at + 2] = r.readUInt32();
    const range = r.readString();
    if (range !== undefined && range !== "") (this.ranges ??= new Map()).set(i, range);
    const encodingName = decodeQualifiedName(r);
    if (encodingName.namespaceIndex !== 0 || encodingName.name !== "") (this.encodings ??= new Map()).set(i, encodingName);
  }

  /**
   * Items [start, start + n) as AttributeRead objects (n <= BATCH), valid until the next call:
   * a manager's read() must not keep them (none does; they only look nodes up).
   */
  batch(start: number, n: number): readonly AttributeRead[] {
    if (this.objects !== undefined) return this.objects;
    while (lent.length < n) lent.push({ nodeId: { namespace: 0, idType: IdType.Numeric, value: 0 }, attributeId: 0, indexRange: undefined, dataEncoding: undefined });
    if (view.length !== n) {
      view.length = n;
      for (let k = 0; k < n; k++) view[k] = lent[k];
    }
    const w = this.words;
    const { others, ranges, encodings } = this;
    for (let k = 0; k < n; k++) {
      const i = start + k;
      const at = i * 3;
      const item = lent[k];
      const id = item.nodeId;
      const head = w[at];
      id.namespace = head & 0xffff;
      id.idType = head >>> 16;
      id.value = id.idType === IdType.Numeric ? w[at + 1] : others![i];
      item.attributeId = w[at + 2];
      item.indexRange = ranges?.get(i);
      item.dataEncoding = encodings?.get(i);
    }
    return view;
  }
}

/** The Read service's decoder: a ReadRequest (Part 4 §5.10.2) with flat nodesToRead. */
export function decodeCompactReadRequest(r: BinaryReader): CompactReadRequest {
  const requestHeader = decodeRequestHeader(r);
  const maxAge = r.readDouble();
  const timestampsToReturn: TimestampsToReturn = r.readInt32();
  // A ReadValueId is at least 16 bytes on the wire (as the generated decoder checks).
  const n = r.readArrayLength(16);
  let items: ReadItems | undefined;
  if (n > SMALL) {
    items = new ReadItems(n);
    for (let i = 0; i < n; i++) items.decode(r, i);
  } else if (n >= 0) {
    const a = new Array<ReadValueId>(n);
    for (let i = 0; i < n; i++) a[i] = decodeReadValueId(r);
    items = new ReadItems(n, a);
  }
  return { requestHeader, maxAge, timestampsToReturn, items };
}
