// The gateway runs with the V8 flags of src/runtime-flags.ts wherever it is started: the
// installed command (src/cli.ts's shebang, which fieldgate.service runs) and `npm start`. The
// bench and the soak import the list itself.
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { GATEWAY_NODE_FLAGS } from "../../src/runtime-flags.js";

const repo = join(import.meta.dirname, "../..");

describe("the gateway's V8 flags", () => {
  it("are the shebang of src/cli.ts", () => {
    const first = readFileSync(join(repo, "src/cli.ts"), "utf8").split("\n")[0]!;
    expect(first).toBe(`#!/usr/bin/env -S node ${GATEWAY_NODE_FLAGS.join(" ")}`);
  });

  it("are what npm start runs the gateway with", () => {
    const pkg = JSON.parse(readFileSync(join(repo, "package.json"), "utf8")) as { scripts: Record<string, string> };
    expect(pkg.scripts.start).toContain(`node ${GATEWAY_NODE_FLAGS.join(" ")} dist/src/cli.js run`);
  });

  it("are flags this Node and its V8 accept, without a warning", () => {
    const r = spawnSync(process.execPath, [...GATEWAY_NODE_FLAGS, "-e", "process.stdout.write('ok')"], { encoding: "utf8", timeout: 10_000 });
    expect([r.status, r.stdout, r.stderr]).toEqual([0, "ok", ""]);
    const bad = spawnSync(process.execPath, ["--no-such-gc-flag", "-e", "0"], { encoding: "utf8", timeout: 10_000 });
    expect(bad.status !== 0 || bad.stderr !== "").toBe(true);
  });
});
