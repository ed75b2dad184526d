// The import graph of src/ (and drivers/), by folder: which folder imports which. Relative
// imports only (packages and node: modules are outside the house), `import type` included (a
// type is a dependency of the source as much as a value is), dynamic `import("...")` too.
// A file directly in src/ is a node of its own ("main", "worker-file", ...); a folder's
// sub-folders belong to it (ua/generated is ua). test/house/layers.test.ts holds the graph to
// DESIGN.md's order; `node dist/bench/import-graph.js` prints it.
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve, sep } from "node:path";
import { fileURLToPath } from "node:url";

/** One import: the importing file and the imported one, both relative to the repository root. */
export interface FileEdge {
  readonly from: string;
  readonly to: string;
}

const SPECIFIER = /(?:\bfrom\s*|\bimport\s*\(\s*|^\s*import\s+)"(\.{1,2}\/[^"]+)"/gm;

/** The relative imports of every .ts file under `dirs` of the repository at `root`. */
export function fileEdges(root: string, dirs: readonly string[] = ["src", "drivers"]): FileEdge[] {
  const edges: FileEdge[] = [];
  for (const dir of dirs) {
    for (const file of tsFiles(join(root, dir))) {
      const text = readFileSync(file, "utf8");
      for (const m of text.matchAll(SPECIFIER)) {
        const target = resolve(dirname(file), m[1]!).replace(/\.js$/, ".ts");
        edges.push({ from: posix(relative(root, file)), to: posix(relative(root, target)) });
      }
    }
  }
  return edges;
}

/** The node a file belongs to: "src/server/x.ts" -> "server", "src/main.ts" -> "main", "drivers/modbus/x.ts" -> "drivers". */
export function nodeOf(path: string): string {
  const parts = path.split("/");
  if (parts[0] !== "src") return parts[0]!;
  return parts.length === 2 ? parts[1]!.replace(/\.ts$/, "") : parts[1]!;
}

/** Every node of src/ (its folders and its files), and "drivers". */
export function sourceNodes(root: string): string[] {
  const nodes = readdirSync(join(root, "src"), { withFileTypes: true })
    .filter((d) => d.isDirectory() || (d.name.endsWith(".ts") && !d.name.endsWith(".d.ts")))
    .map((d) => d.name.replace(/\.ts$/, ""));
  return [...nodes, "drivers"].sort();
}

/** Folder -> the folders it imports (itself left out), each sorted. */
export function folderGraph(edges: readonly FileEdge[]): Map<string, string[]> {
  const graph = new Map<string, Set<string>>();
  for (const e of edges) {
    const from = nodeOf(e.from);
    const to = nodeOf(e.to);
    const set = graph.get(from) ?? new Set<string>();
    graph.set(from, set);
    if (to !== from) set.add(to);
  }
  return new Map([...graph.keys()].sort().map((k) => [k, [...graph.get(k)!].sort()]));
}

/**
 * Imports that point up a list of layers (bottom first): "from -> to (file -> file)" for each
 * file importing one of a later layer. Nodes not in the list are left to the caller.
 */
export function upwardImports(edges: readonly FileEdge[], layers: readonly string[]): string[] {
  const rank = new Map(layers.map((l, i) => [l, i]));
  const out: string[] = [];
  for (const e of edges) {
    const from = rank.get(nodeOf(e.from));
    const to = rank.get(nodeOf(e.to));
    if (from !== undefined && to !== undefined && to > from) out.push(`${nodeOf(e.from)} -> ${nodeOf(e.to)} (${e.from} -> ${e.to})`);
  }
  return out;
}

/** Every cycle of files inside one folder (each as its files in order), found by depth-first search. */
export function cyclesWithinFolders(edges: readonly FileEdge[]): string[][] {
  const next = new Map<string, string[]>();
  for (const e of edges) {
    if (nodeOf(e.from) !== nodeOf(e.to) || e.from === e.to) continue;
    next.set(e.from, [...(next.get(e.from) ?? []), e.to]);
  }
  const cycles: string[][] = [];
  const state = new Map<string, "open" | "done">();
  const stack: string[] = [];
  const visit = (f: string): void => {
    state.set(f, "open");
    stack.push(f);
    for (const t of next.get(f) ?? []) {
      if (state.get(t) === "open") cycles.push(stack.slice(stack.indexOf(t)));
      else if (state.get(t) === undefined) visit(t);
    }
    stack.pop();
    state.set(f, "done");
  };
  for (const f of [...next.keys()].sort()) if (state.get(f) === undefined) visit(f);
  return cycles;
}

/** The graph as text, one folder a line: "server -> address-space, config, ...". */
export function formatGraph(graph: ReadonlyMap<string, readonly string[]>): string {
  return [...graph].map(([from, to]) => `${from} -> ${to.join(", ") || "(nothing)"}`).join("\n");
}

function tsFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((d) => d.isFile() && d.name.endsWith(".ts") && !d.name.endsWith(".d.ts"))
    .map((d) => join(d.parentPath, d.name))
    .sort();
}

function posix(path: string): string {
  return path.split(sep).join("/");
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === resolve(process.argv[1])) {
  const root = process.argv[2] ?? process.cwd();
  const edges = fileEdges(root);
  console.log(formatGraph(folderGraph(edges)));
  for (const c of cyclesWithinFolders(edges)) console.log(`cycle: ${c.join(" -> ")}`);
}
