// Little-endian integers read and written byte by byte, for the paths every request takes (the
// codec's primitives, the chunk headers of the transport and the secure channel). Buffer's own
// readUInt32LE/writeUInt32LE check their arguments again on each call, in JavaScript, and are
// not inlined into the caller: three to five times the work of the loads and stores themselves.
// The caller has checked that the bytes are inside the buffer (BinaryReader.need,
// BinaryWriter.ensure, a chunk's MessageSize): no check is made here.

export function getUInt16(b: Uint8Array, p: number): number {
  return b[p] | (b[p + 1] << 8);
}

export function getInt32(b: Uint8Array, p: number): number {
  return b[p] | (b[p + 1] << 8) | (b[p + 2] << 16) | (b[p + 3] << 24);
}

export function getUInt32(b: Uint8Array, p: number): number {
  return (b[p] | (b[p + 1] << 8) | (b[p + 2] << 16) | (b[p + 3] << 24)) >>> 0;
}

export function putUInt16(b: Uint8Array, p: number, v: number): void {
  b[p] = v;
  b[p + 1] = v >>> 8;
}

/** Int32 or UInt32 alike: the same four bytes. */
export function putInt32(b: Uint8Array, p: number, v: number): void {
  b[p] = v;
  b[p + 1] = v >>> 8;
  b[p + 2] = v >>> 16;
  b[p + 3] = v >>> 24;
}
