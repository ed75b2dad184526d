// What the gateway loads before anyone uses it: the modules main.js imports statically, chunk by
// chunk, as the built bundle (src/build/bundle.ts) has them. A module that is loaded stays in V8's
// heap for the life of the process, so what only a command or a rare request needs is imported
// where it is used (DESIGN "Memory has one bound"). Reads dist/ as `npm test` builds it.
import { readFileSync } from "node:fs";
import { describe, expect, it, beforeAll } from "vitest";
import { distFile, missingBuild, requirePeers, skipWithout } from "../helpers/built.js";

const unbuilt = missingBuild("bundle/main.js");

/** The specifiers a chunk imports: static ones, and those of import() apart. */
function importsOf(file: string): { statics: string[]; dynamics: string[] } {
  const text = readFileSync(file, "utf8");
  const statics = [...text.matchAll(/(?:^|[;}\s])import\s*(?:[\w$*{}\s,]+?\s*from\s*)?"([^"]+)"/g)].map((m) => m[1]!);
  const dynamics = [...text.matchAll(/\bimport\(\s*"([^"]+)"\s*\)/g)].map((m) => m[1]!);
  return { statics, dynamics };
}

/** The packages reached from main.js through static imports only, and through any import. */
function reach(): { atRest: Set<string>; any: Set<string> } {
  const atRest = new Set<string>();
  const any = new Set<string>();
  const walk = (chunk: string, staticOnly: boolean, seen: Set<string>, into: Set<string>): void => {
    if (seen.has(chunk)) return;
    seen.add(chunk);
    const { statics, dynamics } = importsOf(distFile(`bundle/${chunk}`));
    for (const s of staticOnly ? statics : [...statics, ...dynamics]) {
      if (s.startsWith("./")) walk(s.slice(2), staticOnly, seen, into);
      else if (!s.startsWith("node:")) into.add(s);
    }
  };
  walk("main.js", true, new Set(), atRest);
  walk("main.js", false, new Set(), any);
  return { atRest, any };
}

describe.skipIf(skipWithout(unbuilt))("what an idle gateway loads", () => {
  beforeAll(() => requirePeers(unbuilt));

  it("does not load the yaml library: the map comes from its validated cache or the fast parser, and map editing runs on the validation worker", () => {
    const { atRest, any } = reach();
    // The walk sees the packages (so an empty set proves nothing) and the yaml library behind import().
    expect(atRest.size).toBeGreaterThan(0);
    expect(any.has("yaml")).toBe(true);
    expect(atRest.has("yaml")).toBe(false);
  });
});
