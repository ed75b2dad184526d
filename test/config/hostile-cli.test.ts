// Hostile config files as an operator meets them, through the built CLI (dist/, `npm test` builds
// it; skipped when absent): `fieldgate validate` as a child process refuses nesting 100,000 deep,
// a byte that is not UTF-8 and a control character in a text key with file:line:column, the key
// path and a message in words (not "Maximum call stack size exceeded"); and SIGHUP to a running
// gateway refuses each of them the same way while its last good map keeps polling.
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { AttributeIds } from "node-opcua-client";
import { afterAll, describe, expect, it } from "vitest";
import { runCliGateway } from "../helpers/child-output.js";

const cli = resolve(__dirname, "../../dist/src/cli.js");
const dir = mkdtempSync(join(tmpdir(), "fieldgate-hostile-cli-"));
const gateway = join(dir, "gateway.yaml");
const devices = join(dir, "devices.yaml");
const GATEWAY = "server:\n  host: 127.0.0.1\n  port: 0\n  testNamespace: false\nsecurity:\n  securityPolicies: [None]\ndevices: ./devices.yaml\n";
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A simulator device whose tag `a` changes with time; `extra` is appended to that tag's line. */
const map = (extra = "", more = "") => `devices:\n  - name: sim\n    driver: simulator\n    rate: 100ms\n    tags:\n      - { name: a, address: input:0${extra} }\n${more}`;
const nested = (n: number, open: string, close: string, inner = "") => open.repeat(n) + inner + close.repeat(n);
const DEEP = "nesting deeper than 64 levels of mappings and lists inside one another (a config file needs a handful)";
const NOT_UTF8 = "byte 0xE9 is not UTF-8: the file was saved in another encoding (Latin-1, Windows-1252, ...); save it as UTF-8";

/** Device maps that must be refused, and what the refusal says after "devices.yaml:". */
const HOSTILE: readonly (readonly [string, string | Buffer, string])[] = [
  // `      - { name: a, address: input:0, description: ` is 50 characters; the tag is the 5th level.
  ["100,000 nested brackets", map(`, description: ${nested(100_000, "[", "]")}`), `6:${51 + 59}: devices[0].tags[0].description[0][0][0]... (56 levels more): ${DEEP}`],
  ["50,000 nested mappings", map(`, description: ${nested(50_000, "{a: ", "}", "1")}`), `6:${51 + 4 * 59}: devices[0].tags[0].description.a.a.a... (56 levels more): ${DEEP}`],
  ["a Latin-1 byte in a description", Buffer.from(map(", description: Caf\xe9"), "latin1"), `6:54: devices[0].tags[0].description: ${NOT_UTF8}`],
  ["a Latin-1 byte in a name", Buffer.from(map().replace("name: sim", "name: sim\xe9"), "latin1"), `2:14: devices[0].name: ${NOT_UTF8}`],
  [
    "a control character in a description",
    map(', description: "bell \\a"'),
    '6:51: devices[0].tags[0].description: expected a text of at most 1024 characters without control characters (line breaks and tabs allowed), got "bell \\u0007"; a control character (U+0007) at character 6',
  ],
];

describe.skipIf(!existsSync(cli))("hostile config files from the CLI", () => {
  it.each(HOSTILE)("validate refuses %s with its position, key and reason", (_what, content, said) => {
    writeFileSync(gateway, GATEWAY);
    writeFileSync(devices, content);
    const r = spawnSync(process.execPath, [cli, "validate", "--config", gateway], { encoding: "utf8", timeout: 15_000 });
    expect(r.status).toBe(1);
    expect(r.stderr).toContain(`${devices}:${said}\n`);
    expect(r.stderr).not.toMatch(/call stack/);
  });

  it("validate refuses a gateway.yaml nested 100,000 deep with its position and key", () => {
    writeFileSync(gateway, GATEWAY.replace("securityPolicies: [None]", `securityPolicies: ${nested(100_000, "[", "]")}`));
    const r = spawnSync(process.execPath, [cli, "validate", "--config", gateway], { encoding: "utf8", timeout: 15_000 });
    expect(r.status).toBe(1);
    // The root and security are two levels, securityPolicies' list the first bracket: the 63rd is too many.
    expect(r.stderr).toContain(`${gateway}:6:${21 + 62}: security.securityPolicies[0][0][0][0][0][0]... (56 levels more): ${DEEP}`);
  });

  it("SIGHUP refuses each of them the same way; the last good map keeps polling, and a good one says which tags it changed", async () => {
    writeFileSync(gateway, GATEWAY);
    writeFileSync(devices, map());
    const g = await runCliGateway(cli, gateway);
    let exit: number | null | undefined;
    try {
      const s = g.session;
      const read = (tag: string) => s.read({ nodeId: `ns=1;s=sim.${tag}`, attributeId: AttributeIds.Value });
      /** sim.a is Good and moves on: the map polls. */
      const polling = async () => {
        let first: unknown;
        for (let i = 0; i < 200; i++) {
          const dv = await read("a");
          if (dv.statusCode.value === 0) {
            if (first === undefined) first = dv.value.value;
            else if (dv.value.value !== first) return;
          }
          await new Promise((r) => setTimeout(r, 25));
        }
        throw new Error(`sim.a does not move: ${(await read("a")).toString()}`);
      };
      await polling();
      let refusals = 0;
      for (const [what, content, said] of HOSTILE) {
        writeFileSync(devices, content);
        g.child.kill("SIGHUP");
        refusals++;
        const refused = new RegExp(`(still polling the last good device map[^]*){${refusals}}`);
        await g.waitFor(refused, `the refusal of ${what}`);
        expect(g.output(), what).toContain(`reload refused: ${devices}:${said}\n`);
        await polling();
      }
      // gateway.yaml too: refused, and everything loaded last stays.
      writeFileSync(gateway, GATEWAY.replace("securityPolicies: [None]", `securityPolicies: ${nested(100_000, "[", "]")}`));
      writeFileSync(devices, map());
      g.child.kill("SIGHUP");
      await g.waitFor(/the users loaded last stay in use/, "the refusal of gateway.yaml");
      expect(g.output()).toContain(`reload refused: ${gateway}:6:83: security.securityPolicies[0][0][0][0][0][0]... (56 levels more): ${DEEP}`);
      await polling();
      expect(g.output()).not.toMatch(/call stack/);

      writeFileSync(gateway, GATEWAY);
      writeFileSync(devices, map(", description: boiler", "      - { name: b, address: holding:0 }\n      - { name: c, address: holding:1 }\n"));
      g.child.kill("SIGHUP");
      await g.waitFor(/device map: sim: 2 tags added \(b, c\), 1 changed \(a\)\n/, "which tags the reload changed");
      for (let i = 0; i < 100 && (await read("b")).statusCode.value !== 0; i++) await new Promise((r) => setTimeout(r, 25));
      expect((await read("b")).statusCode.value).toBe(0);
    } finally {
      exit = await g.stop();
    }
    expect(exit).toBe(0);
  }, 60_000);
});
