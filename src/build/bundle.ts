// `node dist/src/build/bundle.js [DIST]` (the last step of `npm run build`, and of the image's
// build): bundles the compiled gateway (DIST/src/main.js and every module of ours it imports,
// drivers included) into DIST/bundle/, which src/cli.ts loads. Packages stay imports of their
// own (native addons, node-opcua-crypto, yaml, mqtt); what src/main.ts imports only when used
// (the operators' tools, the status page, the Sparkplug edge node) becomes chunks of its own, so
// it is still loaded only when used. The worker threads (the history's, the device map's
// validation on a reload, a database's check) get bundles of their own, DIST/bundle/<folder>/<worker>.js, each one
// self-contained file (no chunks shared with the gateway's: a worker would load code it never
// runs), started by path (src/worker-file.ts). A worker is an isolate of its own that loads its
// modules again: one by one they leave more resident than one file (bench/RESULTS.md).
//
// esbuild is a build-time dependency: it is found from the working directory's package (the
// repository), so that the image's build can bundle a tree whose node_modules has no dev
// dependencies.
import { createRequire } from "node:module";
import { rmSync } from "node:fs";
import { join, resolve } from "node:path";
import type * as Esbuild from "esbuild";

/** The worker files, under src/, as src/worker-file.ts names them. */
const WORKERS = ["history/write-worker", "history/read-worker", "server/validate-worker", "storage/check-worker", "security/certificate-worker"] as const;

async function main(argv: string[]): Promise<number> {
  const dist = resolve(argv[0] ?? "dist");
  const esbuild = createRequire(resolve("package.json"))("esbuild") as typeof Esbuild;
  const outdir = join(dist, "bundle");
  rmSync(outdir, { recursive: true, force: true });
  const result = await esbuild.build({
    // server.js as an entry of its own, sharing its chunks with main.js: a preload that wraps
    // FieldgateServer's prototype (the bench's history case) reaches the class the CLI runs.
    // settings-main: the boot's `fieldgate settings|network` (src/cli.ts), without the gateway.
    entryPoints: {
      main: join(dist, "src", "main.js"),
      server: join(dist, "src", "server", "server.js"),
      "settings-main": join(dist, "src", "settings-main.js"),
    },
    outdir,
    bundle: true,
    splitting: true,
    format: "esm",
    platform: "node",
    target: "node20",
    packages: "external",
    chunkNames: "chunk-[hash]",
    // Stack traces and logs keep their names (no renaming, no syntax rewriting); whitespace
    // goes, because each chunk's source text stays in V8's heap for as long as the process runs.
    minify: false,
    minifyWhitespace: true,
    legalComments: "none",
    logLevel: "warning",
  });
  const workers = await esbuild.build({
    entryPoints: Object.fromEntries(WORKERS.map((w) => [w, join(dist, "src", `${w}.js`)])),
    outdir,
    bundle: true,
    splitting: false,
    format: "esm",
    platform: "node",
    target: "node20",
    packages: "external",
    minify: false,
    minifyWhitespace: true,
    legalComments: "none",
    logLevel: "warning",
  });
  return result.errors.length === 0 && workers.errors.length === 0 ? 0 : 1;
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    console.error("bundle:", err instanceof Error ? err.message : err);
    process.exitCode = 1;
  },
);
