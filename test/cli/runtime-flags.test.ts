// The gateway runs with the environment and V8 flags of src/runtime-flags.ts wherever it is
// started: the installed command (src/cli.ts's shebang, which fieldgate.service runs) and `npm
// start`. The bench and the soak import them; a bench target of another checkout reads that
// checkout's shebang (bench/targets/fieldgate.ts shippedRuntime).
import { spawnSync } from "node:child_process";
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { shippedRuntime } from "../../bench/targets/fieldgate.js";
import { GATEWAY_ENV, GATEWAY_NODE_FLAGS, gatewayEnvWords } from "../../src/runtime-flags.js";
import { distFile, missingBuild, requirePeers, skipWithout } from "../helpers/built.js";

const repo = join(import.meta.dirname, "../..");
const unbuilt = missingBuild("src/cli.js");

/** v8.cachedDataVersionTag() of a plain node: the hash the node binary's code cache was built with. */
function plainTag(): string {
  const r = spawnSync(process.execPath, ["-p", "require('node:v8').cachedDataVersionTag()"], { encoding: "utf8", timeout: 10_000 });
  expect(r.status).toBe(0);
  return r.stdout.trim();
}

describe("the gateway's environment and V8 flags", () => {
  it("are the shebang of src/cli.ts", () => {
    const first = readFileSync(join(repo, "src/cli.ts"), "utf8").split("\n")[0]!;
    expect(first).toBe(`#!/usr/bin/env -S ${gatewayEnvWords()} node ${GATEWAY_NODE_FLAGS.join(" ")}`);
  });

  it("are what npm start runs the gateway with", () => {
    const pkg = JSON.parse(readFileSync(join(repo, "package.json"), "utf8")) as { scripts: Record<string, string> };
    expect(pkg.scripts.start).toContain(`${gatewayEnvWords()} node ${GATEWAY_NODE_FLAGS.join(" ")} dist/src/cli.js run`);
  });

  it("are flags this Node and its V8 accept, without a warning", () => {
    const r = spawnSync(process.execPath, [...GATEWAY_NODE_FLAGS, "-e", "process.stdout.write('ok')"], { encoding: "utf8", timeout: 10_000 });
    expect([r.status, r.stdout, r.stderr]).toEqual([0, "ok", ""]);
    const bad = spawnSync(process.execPath, ["--no-such-gc-flag", "-e", "0"], { encoding: "utf8", timeout: 10_000 });
    expect(bad.status !== 0 || bad.stderr !== "").toBe(true);
  });

  it("give the transport ArrayBuffer transfer(), with which it frees socket reads", () => {
    const probe = "const a = new ArrayBuffer(8); a.transfer(0); process.stdout.write(String(a.byteLength))";
    const r = spawnSync(process.execPath, [...GATEWAY_NODE_FLAGS, "-e", probe], { encoding: "utf8", timeout: 10_000 });
    expect([r.status, r.stdout, r.stderr]).toEqual([0, "0", ""]);
  });

  it("are what the bench reads back from the built command's shebang", () => {
    expect(GATEWAY_ENV).toEqual({ MALLOC_MMAP_THRESHOLD_: "65536", MALLOC_ARENA_MAX: "1" });
    expect(shippedRuntime(repo)).toEqual({ nodeFlags: [...GATEWAY_NODE_FLAGS], env: { ...GATEWAY_ENV } });
  });

  it("reach the process when the shebang runs it, as the installed command does", () => {
    // The shebang of the built cli.js on a script that prints what it got: env(1) -S must split
    // the line into the assignment, node and the flags.
    const dir = mkdtempSync(join(tmpdir(), "fieldgate-shebang-"));
    try {
      const first = readFileSync(join(repo, "src/cli.ts"), "utf8").split("\n")[0]!;
      const script = join(dir, "probe.mjs");
      writeFileSync(script, `${first}\nprocess.stdout.write(JSON.stringify({ env: process.env.MALLOC_MMAP_THRESHOLD_, flags: process.execArgv }));\n`);
      chmodSync(script, 0o755);
      // env(1) finds node on PATH, as on the appliance.
      const r = spawnSync(script, [], { encoding: "utf8", timeout: 10_000, env: { ...process.env, PATH: `${join(process.execPath, "..")}:${process.env.PATH ?? ""}` } });
      expect(r.stderr).toBe("");
      expect(JSON.parse(r.stdout)).toEqual({ env: GATEWAY_ENV.MALLOC_MMAP_THRESHOLD_, flags: [...GATEWAY_NODE_FLAGS] });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  describe.skipIf(skipWithout(unbuilt))("once applied", () => {
    it("are turned back where V8 reads them only at start, so that Node's modules use the binary's code cache; their effects stay", () => {
      requirePeers(unbuilt);
      const probe = `
        import v8 from "node:v8";
        import { settleStartFlags, restoreRunningFlags } from ${JSON.stringify(distFile("src/runtime-flags.js"))};
        const before = String(v8.cachedDataVersionTag());
        const settled = settleStartFlags();
        const after = String(v8.cachedDataVersionTag());
        // The young generation stays at two 2 MB semi-spaces under a load that grows V8's default to 32 MB.
        for (let i = 0; i < 200; i++) { const keep = []; for (let j = 0; j < 20000; j++) keep.push({ j }); globalThis.k = keep; }
        const young = v8.getHeapSpaceStatistics().find((s) => s.space_name === "new_space").space_size;
        const a = new ArrayBuffer(8);
        a.transfer(0);
        restoreRunningFlags();
        const running = String(v8.cachedDataVersionTag());
        process.stdout.write(JSON.stringify({ before, settled, after, young, gc: typeof globalThis.gc, transferred: a.byteLength, running }));
      `;
      const r = spawnSync(process.execPath, [...GATEWAY_NODE_FLAGS, "--input-type=module", "-e", probe], { encoding: "utf8", timeout: 20_000 });
      expect(r.stderr).toBe("");
      const out = JSON.parse(r.stdout) as Record<string, unknown>;
      const plain = plainTag();
      expect(out.before).not.toBe(plain);
      expect(out.settled).toEqual(["--max-semi-space-size=2", "--harmony-rab-gsab-transfer", "--expose-gc", "--heap-growing-percent=50"]);
      expect(out.after).toBe(plain);
      expect(out.young).toBeLessThanOrEqual(4 * 1024 * 1024);
      expect(out.gc).toBe("function");
      expect(out.transferred).toBe(0);
      // --heap-growing-percent is set again: V8 reads it at every full GC.
      expect(out.running).not.toBe(plain);
    });

    it("are turned back by the installed command before it loads the gateway", () => {
      requirePeers(unbuilt);
      // Printed as the process ends: \`fieldgate help\` runs no gateway, so nothing sets a flag again.
      const dir = mkdtempSync(join(tmpdir(), "fieldgate-flags-"));
      try {
        const atExit = join(dir, "at-exit.cjs");
        writeFileSync(atExit, `process.on("exit", () => process.stderr.write("TAG " + require("node:v8").cachedDataVersionTag() + "\\n"));\n`);
        const r = spawnSync(process.execPath, [...GATEWAY_NODE_FLAGS, "--require", atExit, distFile("src/cli.js"), "help"], { encoding: "utf8", timeout: 20_000 });
        expect(r.status).toBe(0);
        expect(r.stderr).toContain(`TAG ${plainTag()}\n`);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });
  });
});
