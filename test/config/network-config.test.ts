// network.yaml's schema (src/config/network-config.ts): the shipped default, its JSON Schema, and
// the CLI's `validate --network`. The checks of single keys are in test/settings/network.test.ts.
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { renderNetworkJsonSchema } from "../../src/config/json-schema.js";
import { validateNetworkFile } from "../../src/config/network-config.js";

const repo = resolve(__dirname, "../..");
const cli = join(repo, "dist/src/cli.js");
const dir = mkdtempSync(join(tmpdir(), "fieldgate-network-config-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("the default network.yaml", () => {
  it("is valid, lists no port (every port: DHCP and link-local, as before), and points editors at its JSON Schema", () => {
    const text = readFileSync(join(repo, "config/network.yaml"), "utf8");
    expect(text.split("\n")[0]).toBe("# yaml-language-server: $schema=./network.schema.json");
    expect(validateNetworkFile(join(repo, "config/network.yaml"))).toEqual([]);
    expect(text).toMatch(/^ports: \[\]/m);
  });

  it("its commented examples are valid once uncommented", () => {
    const text = readFileSync(join(repo, "config/network.yaml"), "utf8");
    // The keys at the top, then the ports of every example as one list.
    const lines = text.split("\n").filter((l) => /^# (hostname|timeZone|ntp|ports):|^# {3}(- | {2}[A-Za-z0-9]+:)/.test(l)).map((l) => l.slice(2));
    expect(lines.length).toBeGreaterThan(10);
    const file = join(dir, "examples.yaml");
    writeFileSync(file, `${lines.join("\n")}\n`);
    expect(validateNetworkFile(file)).toEqual([]);
  });
});

describe("config/network.schema.json", () => {
  it("is what the code produces (regenerate: node dist/src/config/write-schema.js)", () => {
    expect(readFileSync(join(repo, "config/network.schema.json"), "utf8")).toBe(renderNetworkJsonSchema());
  });
});

describe("fieldgate validate --network", () => {
  it("exits 0 for a good file and 1 with file:line:column for a bad one", () => {
    const good = spawnSync(process.execPath, [cli, "validate", "--network", join(repo, "config/network.yaml")], { encoding: "utf8" });
    expect(good.status, good.stderr).toBe(0);
    expect(good.stdout).toContain("network.yaml: valid");
    const bad = join(dir, "bad.yaml");
    writeFileSync(bad, "ports:\n  - name: eth0\n    addresses: [192.168.1.5/24]\n    gateway: 192.168.2.1\n");
    const r = spawnSync(process.execPath, [cli, "validate", "--network", bad], { encoding: "utf8" });
    expect(r.status).toBe(1);
    expect(r.stderr).toContain(`${bad}:4:14: ports[0].gateway: expected an address in the network of 192.168.1.5/24, got 192.168.2.1`);
  });
});
