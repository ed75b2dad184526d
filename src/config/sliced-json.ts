// A plain-data value written to a file as JSON over several turns of the event loop, each of at
// most one slice (the SliceGate's): the validated device map's cache after a first start
// (server.ts). JSON.stringify of a 10,000-tag map is one ~10 ms task that grows with the map;
// here arrays and objects are taken apart down to leaves of at most LEAF_NODES values in all
// (a tag, its address: ~10) and the slice may end between two of them. The text is the one JSON.stringify gives for plain data
// (strings, finite numbers, booleans, null, arrays and objects; members that are undefined are
// left out), written to `file.tmp` and renamed over `file`: whole or not at all.
import { closeSync, openSync, renameSync, rmSync, writeSync } from "node:fs";
import { sliceGate, type SliceGate } from "../sampling/slices.js";

/** A value of at most this many arrays, objects and scalars in all is written by one JSON.stringify. */
const LEAF_NODES = 256;
/** Text kept before it is written out. */
const FLUSH_CHARS = 64 * 1024;

export interface SlicedWrite {
  /** Resolves true once the file is in place, false if `abandoned` said so first (nothing written). */
  readonly done: Promise<boolean>;
}

/** Writes `value` to `file` as JSON in slices; `abandoned()` is asked between slices. */
export function writeJsonInSlices(file: string, value: unknown, abandoned: () => boolean = () => false, gate: SliceGate = sliceGate()): Promise<boolean> {
  return new JsonSlicer(file, value, abandoned, gate).run();
}

class JsonSlicer {
  private text = "";
  private fd = -1;
  private sliceEnd = 0;

  constructor(
    private readonly file: string,
    private readonly value: unknown,
    private readonly abandoned: () => boolean,
    private readonly gate: SliceGate,
  ) {}

  async run(): Promise<boolean> {
    const tmp = `${this.file}.${process.pid}.tmp`;
    this.fd = openSync(tmp, "w");
    try {
      this.sliceEnd = this.gate.end();
      const whole = await this.write(this.value);
      if (!whole) {
        closeSync(this.fd);
        this.fd = -1;
        rmSync(tmp, { force: true });
        return false;
      }
      this.flush();
      closeSync(this.fd);
      this.fd = -1;
      renameSync(tmp, this.file);
      return true;
    } catch (err) {
      if (this.fd >= 0) closeSync(this.fd);
      rmSync(tmp, { force: true });
      throw err;
    }
  }

  /** Appends `v`'s JSON; false when abandoned on the way. */
  private async write(v: unknown): Promise<boolean> {
    if (v === null || typeof v !== "object" || nodesUpTo(v, LEAF_NODES) <= LEAF_NODES) {
      this.text += JSON.stringify(v);
      return this.maybeTurn();
    }
    if (Array.isArray(v)) {
      this.text += "[";
      for (let i = 0; i < v.length; i++) {
        if (i > 0) this.text += ",";
        // JSON.stringify writes null for an undefined entry of an array.
        if (!(await this.write(v[i] === undefined ? null : v[i]))) return false;
      }
      this.text += "]";
      return true;
    }
    this.text += "{";
    let first = true;
    for (const [k, member] of Object.entries(v)) {
      if (member === undefined) continue;
      this.text += `${first ? "" : ","}${JSON.stringify(k)}:`;
      first = false;
      if (!(await this.write(member))) return false;
    }
    this.text += "}";
    return true;
  }

  /** After a leaf: the text out when it is long, and a turn of the loop when the slice is spent. */
  private async maybeTurn(): Promise<boolean> {
    if (this.text.length >= FLUSH_CHARS) this.flush();
    if (this.gate.now() < this.sliceEnd) return true;
    await this.gate.next();
    if (this.abandoned()) return false;
    this.sliceEnd = this.gate.end();
    return true;
  }

  private flush(): void {
    if (this.text.length === 0) return;
    writeSync(this.fd, this.text);
    this.text = "";
  }
}

/** The values in `v` (itself included), counted up to just past `limit`. */
function nodesUpTo(v: unknown, limit: number): number {
  if (v === null || typeof v !== "object") return 1;
  let n = 1;
  for (const c of Array.isArray(v) ? v : Object.values(v)) {
    n += nodesUpTo(c, limit - n);
    if (n > limit) return n;
  }
  return n;
}
