// A validated device map cut into pieces of at most N tags and put together again: what the
// validation worker (validate-worker.ts) sends and validate-off-loop.ts receives. Taking in a
// message is one task that grows with it (structured clone: two objects a tag); a piece keeps
// each task short.
import type { ConfigIssue } from "./errors.js";
import type { DeviceMap } from "./device-map.js";
import type { EntriesAdded } from "./entry-yaml.js";

type DeviceConfig = DeviceMap["devices"][number];
type TagConfig = DeviceConfig["tags"][number];

/**
 * What the main thread asks of the validation worker: a map validated (its pieces then come one
 * per "next"), or a map validated only to be kept in the cache. With `text`, that text is
 * validated as if it were `file` (a map edited in the status page, not written yet; no cache);
 * `issuesOnly` wants the issues and no map (a check as the person types).
 */
export type ValidateRequest =
  | {
      readonly op: "validate";
      readonly file: string;
      readonly cacheDir: string | undefined;
      readonly tagsPerPiece: number;
      readonly text?: string;
      readonly issuesOnly?: boolean;
    }
  | { readonly op: "keep"; readonly file: string; readonly cacheDir: string }
  | { readonly op: "next" }
  /** Device entries added to a map being edited (entry-yaml.ts addDeviceEntries): parsing the map grows with it. */
  | {
      readonly op: "entries";
      readonly text: string;
      readonly devices: readonly Readonly<Record<string, unknown>>[];
      readonly sections: Readonly<Record<string, unknown>>;
      readonly sameSections: boolean;
    };

/** Tags `tags` of device `device`; `config` (its settings, tags left out) with its first piece. */
export interface MapPiece {
  readonly device: number;
  readonly config?: DeviceConfig;
  readonly tags: readonly TagConfig[];
}

export type WorkerAnswer =
  | { readonly kind: "refused"; readonly issues: readonly ConfigIssue[] }
  /** The map without its devices' tags; `pieces` follow, one per request. */
  | { readonly kind: "valid"; readonly head: DeviceMap; readonly pieces: number }
  | { readonly kind: "piece"; readonly piece: MapPiece }
  /** For "keep": validated, and kept in the cache when valid. */
  | { readonly kind: "kept"; readonly valid: boolean }
  | { readonly kind: "entries"; readonly result: EntriesAdded | { readonly error: string } };

/** The map with each device's tags left out (`head`), and its tags in pieces of at most `tagsPerPiece`. */
export function piecesOf(map: DeviceMap, tagsPerPiece: number): { head: DeviceMap; pieces: MapPiece[] } {
  const pieces: MapPiece[] = [];
  map.devices.forEach((d, device) => {
    pieces.push({ device, config: { ...d, tags: [] }, tags: d.tags.slice(0, tagsPerPiece) });
    for (let at = tagsPerPiece; at < d.tags.length; at += tagsPerPiece) pieces.push({ device, tags: d.tags.slice(at, at + tagsPerPiece) });
  });
  return { head: { ...map, devices: [] }, pieces };
}

/** Puts the map back together from its head and pieces, as they come (in order). */
export class MapAssembly {
  private readonly devices: DeviceConfig[] = [];

  constructor(private readonly head: DeviceMap) {}

  add(piece: MapPiece): void {
    if (piece.config !== undefined) {
      if (piece.device !== this.devices.length) throw new Error(`device map piece for device ${piece.device} came out of order`);
      this.devices.push({ ...piece.config, tags: [...piece.tags] });
      return;
    }
    const d = this.devices[piece.device];
    if (d === undefined || piece.device !== this.devices.length - 1) throw new Error(`device map piece for device ${piece.device} came out of order`);
    (d.tags as TagConfig[]).push(...piece.tags);
  }

  get map(): DeviceMap {
    return { ...this.head, devices: this.devices };
  }
}
