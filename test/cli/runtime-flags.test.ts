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

const repo = join(import.meta.dirname, "../..");

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
    expect(GATEWAY_ENV).toEqual({ MALLOC_MMAP_THRESHOLD_: "65536" });
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
});
