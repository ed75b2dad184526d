// `fieldgate --help` and `fieldgate help` print the usage and exit 0 (issue 15: `--help` said
// `unknown command "--help"` and exited 2); no command at all is still a mistake.
import { spawnSync } from "node:child_process";
import { beforeAll, describe, expect, it } from "vitest";
import { CLI as cli, missingBuild, requirePeers, skipWithout } from "../helpers/built.js";

const unbuilt = missingBuild("src/cli.js");

function run(...args: string[]) {
  return spawnSync(process.execPath, [cli, ...args], { encoding: "utf8", timeout: 15_000 });
}

describe.skipIf(skipWithout(unbuilt))("fieldgate help", () => {
  beforeAll(() => requirePeers(unbuilt));
  it.each([["--help"], ["help"], ["-h"], ["run", "--help"]])("%s prints the usage on stdout and exits 0", (...args) => {
    const r = run(...args);
    expect(r.status).toBe(0);
    expect(r.stderr).toBe("");
    expect(r.stdout).toMatch(/^usage:\n {2}fieldgate run --config FILE/);
    for (const command of ["validate", "password", "cert trust", "import kepware", "export csv", "settings import", "network try", "network confirm", "help"]) expect(r.stdout).toContain(`fieldgate ${command}`);
  });

  it("without a command prints the usage on stderr and exits 2", () => {
    const r = run();
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/^usage:/);
  });

  it("an unknown command is named", () => {
    const r = run("frobnicate");
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/^unknown command "frobnicate"/);
  });
});
