// The house points one way (DESIGN.md's layout, STYLE's first habit): a folder of src/ imports
// only folders below it, never one above, so no two folders import each other; and no files of
// one folder import each other in a circle. The import graph is read from the sources
// (bench/import-graph.ts); a new folder fails here until it is given its place below.
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { cyclesWithinFolders, fileEdges, folderGraph, nodeOf, sourceNodes, upwardImports, type FileEdge } from "../../bench/import-graph.js";

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
  "address-space",
  "subscriptions",
  "events",
  "alarms",
  "transport",
  "security",
  "sessions",
  // Above sessions: the drive's admin-password.txt is hashed as users' passwords are.
  "settings",
  "diagnostics",
  "services",
  "northbound",
  "web",
  "testing",
  "server",
  "build",
  "main",
  "settings-main",
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

/** What drivers may import of src/: the interfaces it defines for them (DESIGN: Devices), never the server's parts. */
const DRIVER_INTERFACES = ["ua", "config", "devices"];
/** Who may import drivers/: the composition root, the entry points, the build and the bench namespace's devices. */
const DRIVER_USERS = ["server", "main", "settings-main", "cli", "build", "testing"];

describe("drivers/", () => {
  const edges = fileEdges(ROOT);

  it("import only the interfaces src/ defines for them", () => {
    const bad = edges.filter((e) => e.from.startsWith("drivers/") && e.to.startsWith("src/") && !DRIVER_INTERFACES.includes(nodeOf(e.to)));
    expect(bad.map((e) => `${e.from} -> ${e.to}`)).toEqual([]);
  });

  it("are imported by the composition root alone", () => {
    const bad = edges.filter((e) => e.to.startsWith("drivers/") && e.from.startsWith("src/") && !DRIVER_USERS.includes(nodeOf(e.from)));
    expect(bad.map((e) => `${e.from} -> ${e.to}`)).toEqual([]);
  });

  it("own their protocols: src/config and src/devices name none", () => {
    // Modbus's words (its areas, unit ids, slaves); a new protocol adds its own here.
    const words = /modbus|\bcoils?\b|holding(:| reg)|discrete input|input register|unit ?id|\bslaves?\b|\bmbus\b|m-bus/i;
    const named: string[] = [];
    for (const dir of ["src/config", "src/devices"]) {
      for (const f of readdirSync(join(ROOT, dir), { recursive: true, encoding: "utf8" })) {
        if (!f.endsWith(".ts")) continue;
        readFileSync(join(ROOT, dir, f), "utf8")
          .split("\n")
          .forEach((line, i) => {
            if (words.test(line)) named.push(`${dir}/${f}:${i + 1}: ${line.trim()}`);
          });
      }
    }
    expect(named).toEqual([]);
  });
});
