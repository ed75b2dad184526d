// The command the gateway prints for its operators (refused certificates: "trust it with ...")
// is the one that works where it runs: `fieldgate` when a fieldgate on the PATH is this
// installation's CLI (the appliance's /usr/bin/fieldgate link), else node and the CLI's path.
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { cliCommand, packageRoot } from "../../src/package-info.js";

const bin = mkdtempSync(join(tmpdir(), "fieldgate-bin-"));
afterAll(() => rmSync(bin, { recursive: true, force: true }));

describe("cliCommand", () => {
  const cli = join(packageRoot(), "dist", "src", "cli.js");

  it("is `fieldgate` where a fieldgate on the PATH is this installation's CLI", () => {
    const here = join(bin, "appliance");
    rmSync(here, { recursive: true, force: true });
    mkdirSync(here);
    symlinkSync(cli, join(here, "fieldgate"));
    expect(cliCommand(["/nonexistent", here].join(":"), "/")).toBe("fieldgate");
  });

  it("is node and the CLI's path in a checkout: relative below the working folder, else absolute", () => {
    const other = join(bin, "other");
    mkdirSync(other, { recursive: true });
    // Another installation's fieldgate is not this one.
    writeFileSync(join(other, "fieldgate"), "#!/bin/sh\n");
    expect(cliCommand(other, packageRoot())).toBe("node dist/src/cli.js");
    expect(cliCommand("", bin)).toBe(`node ${cli}`);
  });
});
