// Shared by the test/ua codec tests: a seeded PRNG and encode/decode helpers.
import { expect } from "vitest";
import { BinaryReader, type DecodingLimits, DEFAULT_DECODING_LIMITS } from "../../src/ua/binary-reader.js";
import { BinaryWriter } from "../../src/ua/binary-writer.js";
import { UaStatusError } from "../../src/ua/errors.js";

/** mulberry32: small, seeded, reproducible. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export function randomBytes(rand: () => number, n: number): Buffer {
  const b = Buffer.allocUnsafe(n);
  for (let i = 0; i < n; i++) b[i] = (rand() * 256) | 0;
  return b;
}

export function encode<T>(fn: (w: BinaryWriter, v: T) => void, v: T): Buffer {
  // Start tiny so growth (buffer replacement mid-encode) is exercised too.
  const w = new BinaryWriter(Buffer.alloc(8));
  fn(w, v);
  return Buffer.from(w.view());
}

export function reader(bytes: Buffer, limits: Partial<DecodingLimits> = {}): BinaryReader {
  return new BinaryReader(bytes, 0, bytes.length, { ...DEFAULT_DECODING_LIMITS, ...limits });
}

/** Decodes all of `bytes`; fails the test if bytes are left over. */
export function decodeAll<T>(fn: (r: BinaryReader) => T, bytes: Buffer, limits: Partial<DecodingLimits> = {}): T {
  const r = reader(bytes, limits);
  const v = fn(r);
  expect(r.pos).toBe(bytes.length);
  expect(r.depth).toBe(0);
  return v;
}

export function roundTrip<T>(enc: (w: BinaryWriter, v: T) => void, dec: (r: BinaryReader) => T, v: T): T {
  return decodeAll(dec, encode(enc, v));
}

/** The StatusCode the call throws as UaStatusError; fails on success or on any other error. */
export function thrownStatus(f: () => unknown): number {
  try {
    f();
  } catch (err) {
    if (err instanceof UaStatusError) return err.statusCode;
    throw new Error(`expected UaStatusError, got ${String(err)}`);
  }
  throw new Error("expected a UaStatusError, nothing was thrown");
}
