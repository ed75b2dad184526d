// The house points one way (DESIGN.md's layout, STYLE's first habit): a folder of src/ imports
// only folders below it, never one above, so no two folders import each other; and no files of
// one folder import each other in a circle. The import graph is read from the sources
// (bench/import-graph.ts); a new folder fails here until it is given its place below.
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { cyclesWithinFolders, fileEdges, folderGraph, sourceNodes, upwardImports, type FileEdge } from "../../bench/import-graph.js";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../..");

/**
 * Bottom first: each may import those before it. Leaf modules of src/ any layer uses (with
 * storage, the damaged-file handling of every part that keeps a file); the codec;
 * config; the data path from the clock to the address space and what is built on it
 * (subscriptions, events, alarms); the OPC UA stack from transport to services; the ends users
 * meet (northbound, web); the composition root, and the entry points.
 */
const LAYERS = [
  "package-info",
  "runtime-flags",
  "thread-priority",
  "worker-file",
  "worker-link",
  "worker-serve",
  "signals",
  "storage",
  "ua",
  "config",
  "log",
  "sampling",
  "values",
  "devices",
  "drivers",
  "history",
  "update",
  "settings",
  "address-space",
  "subscriptions",
  "events",
  "alarms",
  "transport",
  "security",
  "sessions",
  "diagnostics",
  "services",
  "northbound",
  "web",
  "testing",
  "server",
  "build",
  "main",
  "cli",
];

describe("the layers of src/", () => {
  const edges = fileEdges(ROOT);

  it("are all placed in the order", () => {
    const nodes = sourceNodes(ROOT);
    expect(nodes).toContain("server");
    expect(nodes.filter((f) => !LAYERS.includes(f))).toEqual([]);
  });

  it("import only the layers below them", () => {
    expect(upwardImports(edges, LAYERS)).toEqual([]);
  });

  it("have no circle of imports between the files of one folder", () => {
    expect(cyclesWithinFolders(edges)).toEqual([]);
  });

  it("are read from the imports as written (a back edge is found)", () => {
    // The check itself: an import from sampling up to server is reported, one within a folder is not.
    const planted: FileEdge[] = [
      { from: "src/sampling/clock.ts", to: "src/server/server.ts" },
      { from: "src/server/a.ts", to: "src/server/b.ts" },
    ];
    expect(upwardImports(planted, LAYERS)).toEqual(["sampling -> server (src/sampling/clock.ts -> src/server/server.ts)"]);
    expect(cyclesWithinFolders([...planted, { from: "src/server/b.ts", to: "src/server/a.ts" }])).toEqual([["src/server/a.ts", "src/server/b.ts"]]);
    const graph = folderGraph(edges);
    expect(graph.get("server")).toContain("ua");
  });
});
