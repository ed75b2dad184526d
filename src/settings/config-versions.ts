// The last applied versions of one settings file (devices.yaml, gateway.yaml, network.yaml),
// kept to look at and to go back to (DESIGN: Config): <dir>/<id>.yaml holds the text as applied,
// <id>.json who applied it, when, and what it changed in words. Ids count up and are never
// reused; the oldest go once more than `keep` are kept. One store per file, written by every way
// of changing it: the page and its API (the gateway, as its own user) and the FIELDGATE drive's
// import at boot (as root, whose files take the gateway's owner: it keeps writing there).
//
// A version exists once its .json does: the text is written first, then the record, each whole
// or not at all (atomic-file.ts replaceFile), so a power cut leaves the last version complete or
// absent, never a record without its text. Reading lists one folder of at most `keep` pairs
// (and what a cut left behind, which the next record clears).
import { chownSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { dirname, join } from "node:path";
import { replaceFileOffLoop } from "./atomic-file.js";

/** Versions kept per file. */
export const KEEP_VERSIONS = 10;

export interface VersionInfo {
  readonly id: number;
  /** ISO 8601, UTC. */
  readonly at: string;
  /** Who applied it (a user of the page, or who it was before the page: "on disk"). */
  readonly user: string;
  /** What it changed, in words ("added pump; 1 unchanged"). */
  readonly summary: string;
  readonly bytes: number;
  /** The version it brought back, for a restore. */
  readonly restoredFrom?: number;
}

/** Who a version of the file as it was before the first change kept here is said to be by. */
export const BEFORE_FIRST_CHANGE = "on disk";

/** Who the FIELDGATE drive's import records its versions as. */
export const FROM_THE_DRIVE = "FIELDGATE drive";

const NAME = /^(\d{1,9})\.(yaml|json)$/;

export class ConfigVersions {
  /** The record under way (records are written one at a time). */
  private recording: Promise<unknown> = Promise.resolve();

  constructor(
    readonly dir: string,
    private readonly keep = KEEP_VERSIONS,
    /** The owner of what is written (root writing for the gateway's user); default the writer. */
    private readonly owner?: { readonly uid: number; readonly gid: number },
  ) {}

  /** The versions kept, newest first. */
  list(): VersionInfo[] {
    const out: VersionInfo[] = [];
    for (const id of this.ids("json")) {
      const info = this.info(id);
      if (info !== undefined) out.push(info);
    }
    return out.sort((a, b) => b.id - a.id);
  }

  info(id: number): VersionInfo | undefined {
    try {
      const v = JSON.parse(readFileSync(this.file(id, "json"), "utf8")) as VersionInfo;
      return v.id === id && existsSync(this.file(id, "yaml")) ? v : undefined;
    } catch {
      return undefined;
    }
  }

  /** The text of version `id`; undefined when it is not kept. */
  text(id: number): string | undefined {
    if (this.info(id) === undefined) return undefined;
    try {
      return readFileSync(this.file(id, "yaml"), "utf8");
    } catch {
      return undefined;
    }
  }

  /**
   * Keeps `text`, which replaces `before` (the file as it is; "" when there is none), as the
   * newest version; when no version is kept yet, `before` first, so that there is always one to
   * go back to ("on disk", dated `beforeAt`: the file's time).
   */
  async recordChange(before: string, beforeAt: Date | undefined, text: string, meta: { readonly user: string; readonly summary: string; readonly restoredFrom?: number }): Promise<VersionInfo> {
    await this.keepFirst(before, beforeAt, meta.user);
    return this.record(text, meta);
  }

  /** When no version is kept yet: `before`, the file a change by `by` is about to replace, as the first ("" : none). */
  async keepFirst(before: string, at: Date | undefined, by: string): Promise<void> {
    if (before === "" || this.list().length > 0) return;
    const from = by === FROM_THE_DRIVE ? "the FIELDGATE drive" : "the page";
    await this.record(before, { user: BEFORE_FIRST_CHANGE, summary: `the file as it was before the first change from ${from}`, ...(at === undefined ? {} : { at }) });
  }

  /** Keeps `text` as the newest version; the oldest beyond `keep` go. */
  record(text: string, meta: { readonly user: string; readonly summary: string; readonly at?: Date; readonly restoredFrom?: number }): Promise<VersionInfo> {
    // One at a time: a version's id is the next free one when its turn comes.
    const done = this.recording.then(() => this.write(text, meta));
    this.recording = done.catch(() => {});
    return done;
  }

  private async write(text: string, meta: { readonly user: string; readonly summary: string; readonly at?: Date; readonly restoredFrom?: number }): Promise<VersionInfo> {
    this.makeDir(this.dir);
    const id = Math.max(0, ...this.ids("json"), ...this.ids("yaml")) + 1;
    const info: VersionInfo = {
      id,
      at: (meta.at ?? new Date()).toISOString(),
      user: meta.user,
      summary: meta.summary,
      bytes: Buffer.byteLength(text),
      ...(meta.restoredFrom === undefined ? {} : { restoredFrom: meta.restoredFrom }),
    };
    const own = this.owner === undefined ? {} : { uid: this.owner.uid, gid: this.owner.gid };
    await replaceFileOffLoop(this.file(id, "yaml"), text, { mode: 0o640, ...own });
    await replaceFileOffLoop(this.file(id, "json"), `${JSON.stringify(info)}\n`, { mode: 0o640, ...own });
    this.prune();
    return info;
  }

  /** `dir` and the folders above it that are missing, each given the owner. */
  private makeDir(dir: string): void {
    if (existsSync(dir)) return;
    this.makeDir(dirname(dir));
    mkdirSync(dir, { mode: 0o750 });
    if (this.owner !== undefined && process.getuid?.() === 0) chownSync(dir, this.owner.uid, this.owner.gid);
  }

  /** Drops the oldest records beyond `keep`, and texts whose record never came (a cut). */
  private prune(): void {
    const recorded = new Set(this.ids("json"));
    const newest = [...recorded].sort((a, b) => b - a);
    for (const id of newest.slice(this.keep)) {
      // The record first: a cut between the two leaves a text nobody lists, removed next time.
      rmSync(this.file(id, "json"), { force: true });
      rmSync(this.file(id, "yaml"), { force: true });
    }
    const last = newest[0] ?? 0;
    for (const id of this.ids("yaml")) if (!recorded.has(id) && id < last) rmSync(this.file(id, "yaml"), { force: true });
  }

  private ids(ext: "yaml" | "json"): number[] {
    let names: string[];
    try {
      names = readdirSync(this.dir);
    } catch {
      return [];
    }
    const out: number[] = [];
    for (const n of names) {
      const m = NAME.exec(n);
      if (m !== null && m[2] === ext) out.push(Number(m[1]));
    }
    return out;
  }

  private file(id: number, ext: "yaml" | "json"): string {
    return join(this.dir, `${String(id).padStart(6, "0")}.${ext}`);
  }
}
