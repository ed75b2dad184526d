// The parsed form of a config file that validate.ts walks: mappings, sequences, scalars and
// aliases. Two parsers produce it: fast-yaml.ts for the plain YAML people write in configs and
// device maps, and `fromDocument` below for everything else, from the `yaml` library's
// Document, which stays the authority on what a YAML file means and on where a problem is.
//
// The fast parser's tree is meant to be small (a 10,000-tag map is held whole while it is
// validated): its scalars are bare strings, numbers and booleans, and a mapping keeps its keys
// and values in one flat array. Positions and the source text of scalars matter only in
// messages, and messages always come from the library's tree, whose scalars are ScalarNodes.
import { createRequire } from "node:module";
import type { Document, Node } from "yaml";

/**
 * Mappings and lists inside one another that a config file may have, the root counting as one.
 * A device map nests six (the root, devices, a device, its tags, a tag, its range); every
 * reader of config files refuses more (nesting.ts, fast-yaml.ts, validate.ts), so that none of
 * their recursions can run out of stack, whatever the file.
 */
export const MAX_NESTING = 64;

/** What a file nested deeper is told. */
export const TOO_DEEP = `nesting deeper than ${MAX_NESTING} levels of mappings and lists inside one another (a config file needs a handful)`;

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

export interface MapNode {
  readonly kind: NodeKind.Map;
  readonly offset: number;
  /**
   * Keys and values in turn: [key0, value0, key1, value1, ...]. A key is null in a pair
   * without one (`: value`, which only the library lets through); a value is null when the
   * pair has none at all (`key:` has an empty, null scalar).
   */
  readonly items: readonly (ConfigNode | null)[];
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

/** A scalar without position: its value. */
export type BareScalar = string | number | boolean;

export type ConfigNode = ScalarNode | MapNode | SeqNode | AliasNode | BareScalar;

/** The YAML null of the fast parser (`key:`, `~`, `null`), one shared node. */
export const NULL_SCALAR: ScalarNode = Object.freeze({ kind: NodeKind.Scalar, offset: 0, value: null, source: "" });

export function kindOf(node: ConfigNode): NodeKind {
  return typeof node === "object" ? node.kind : NodeKind.Scalar;
}

/** A scalar's value (the node must be a scalar). */
export function scalarValue(node: ConfigNode): unknown {
  return typeof node === "object" ? (node as ScalarNode).value : node;
}

/** Offset of a node in the text; 0 where none is kept. */
export function offsetOf(node: ConfigNode | null | undefined): number {
  return typeof node === "object" && node !== null ? node.offset : 0;
}

/** Line and column (1-based) of an offset; the yaml library's LineCounter is one. */
export interface LinePositions {
  linePos(offset: number): { line: number; col: number };
}

type YamlLibrary = typeof import("yaml");
let library: YamlLibrary | undefined;

/**
 * The yaml library, loaded on first use: a gateway whose files are all in the fast parser's
 * subset never loads it (its ~30 modules take ~25 ms of a start on a small board).
 */
export function yamlLibrary(): YamlLibrary {
  return (library ??= createRequire(import.meta.url)("yaml") as YamlLibrary);
}

/**
 * The tree of a composed yaml Document (without errors), aliases resolved to shared nodes. By
 * recursion, at most MAX_NESTING + 1 calls deep: load.ts composes only files within MAX_NESTING
 * (nesting.ts), and an alias's target, anchored before it, is converted before it.
 */
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
      const items: (ConfigNode | null)[] = [];
      const out: MapNode = { kind: NodeKind.Map, offset, items };
      seen.set(node, out);
      for (const pair of node.items) if (isPair(pair)) items.push(convert(pair.key), convert(pair.value));
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
