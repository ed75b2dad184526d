// The parsed form of a config file that validate.ts walks: mappings, sequences, scalars and
// aliases with the offset of each in the text. Two parsers produce it: fast-yaml.ts for the
// plain YAML people write in configs and device maps (no garbage beyond these records, ~50x
// faster than composing a yaml Document), and `fromDocument` below for everything else, from
// the `yaml` library's Document, which stays the authority on what a YAML file means.
import { createRequire } from "node:module";
import type { Document, Node } from "yaml";

type YamlLibrary = typeof import("yaml");
let library: YamlLibrary | undefined;

/**
 * The yaml library, loaded on first use: a gateway whose files are all in the fast parser's
 * subset never loads it (its ~30 modules take ~25 ms of a start on a small board).
 */
export function yamlLibrary(): YamlLibrary {
  return (library ??= createRequire(import.meta.url)("yaml") as YamlLibrary);
}

export const enum NodeKind {
  Scalar,
  Map,
  Seq,
  Alias,
}

export interface ScalarNode {
  readonly kind: NodeKind.Scalar;
  /** Where the node starts in the text (its first character). */
  readonly offset: number;
  /** The resolved value (YAML 1.2 core schema): string, number, boolean or null. */
  readonly value: unknown;
  /** The scalar as written, without quotes and escapes ("0x10", "1e3"). */
  readonly source: string | undefined;
}

export interface PairNode {
  /** null for a pair without a key (`: value`), which only the yaml library lets through. */
  readonly key: ConfigNode | null;
  /** null when the pair has no value at all; `key:` has an empty (null) scalar. */
  readonly value: ConfigNode | null;
}

export interface MapNode {
  readonly kind: NodeKind.Map;
  readonly offset: number;
  readonly items: readonly PairNode[];
}

export interface SeqNode {
  readonly kind: NodeKind.Seq;
  readonly offset: number;
  readonly items: readonly (ConfigNode | null)[];
}

export interface AliasNode {
  readonly kind: NodeKind.Alias;
  readonly offset: number;
  /** The anchor's name as written after `*`. */
  readonly source: string;
  /** The anchored node; undefined for an alias to no anchor. */
  readonly target: ConfigNode | undefined;
}

export type ConfigNode = ScalarNode | MapNode | SeqNode | AliasNode;

/** Line and column (1-based) of an offset; the yaml library's LineCounter is one. */
export interface LinePositions {
  linePos(offset: number): { line: number; col: number };
}

/** The tree of a composed yaml Document (without errors), aliases resolved to shared nodes. */
export function fromDocument(doc: Document): ConfigNode | null {
  const { isAlias, isMap, isPair, isScalar, isSeq } = yamlLibrary();
  const seen = new Map<Node, ConfigNode>();
  const convert = (node: unknown): ConfigNode | null => {
    if (node === null || node === undefined) return null;
    const known = seen.get(node as Node);
    if (known) return known;
    const offset = (node as Node).range?.[0] ?? 0;
    if (isScalar(node)) {
      const out: ScalarNode = { kind: NodeKind.Scalar, offset, value: node.value, source: node.source as string | undefined };
      seen.set(node, out);
      return out;
    }
    if (isMap(node)) {
      const items: PairNode[] = [];
      const out: MapNode = { kind: NodeKind.Map, offset, items };
      seen.set(node, out);
      for (const pair of node.items) if (isPair(pair)) items.push({ key: convert(pair.key), value: convert(pair.value) });
      return out;
    }
    if (isSeq(node)) {
      const items: (ConfigNode | null)[] = [];
      const out: SeqNode = { kind: NodeKind.Seq, offset, items };
      seen.set(node, out);
      for (const item of node.items) items.push(convert(item));
      return out;
    }
    if (isAlias(node)) {
      const target = node.resolve(doc);
      // Recorded before its target is converted: an alias inside its own anchor stays finite.
      const out: { -readonly [K in keyof AliasNode]: AliasNode[K] } = { kind: NodeKind.Alias, offset, source: node.source, target: undefined };
      seen.set(node, out);
      out.target = target === undefined ? undefined : (convert(target) ?? undefined);
      return out;
    }
    // Not a YAML node (a custom tag's class): show it as the scalar value it stands for.
    const out: ScalarNode = { kind: NodeKind.Scalar, offset, value: node, source: undefined };
    seen.set(node as Node, out);
    return out;
  };
  return convert(doc.contents);
}
