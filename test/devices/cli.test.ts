// The device map from the command line, as an operator uses it: `fieldgate validate` checks the
// map a gateway.yaml names (or a map alone), `run` refuses a bad map before anything starts, and
// SIGHUP reloads the map: a new tag appears without a restart, a bad map is refused with
// file:line:column and the last good map keeps polling. Runs the built CLI (dist/, `npm test`
// builds it); skipped when it is absent.
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { AttributeIds } from "node-opcua-client";
import { afterAll, describe, expect, it } from "vitest";
import { runCliGateway } from "../helpers/child-output.js";

const cli = resolve(__dirname, "../../dist/src/cli.js");
const dir = mkdtempSync(join(tmpdir(), "fieldgate-devices-cli-"));
const gateway = join(dir, "gateway.yaml");
const devices = join(dir, "devices.yaml");
writeFileSync(gateway, "server:\n  host: 127.0.0.1\n  port: 0\n  testNamespace: false\nsecurity:\n  securityPolicies: [None]\ndevices: ./devices.yaml\n");

const sim = (tags: string) => `devices:\n  - name: sim\n    driver: simulator\n    rate: 100ms\n    tags:\n${tags}`;
const TAG_A = "      - { name: a, address: input:0 }\n";
const TAG_B = "      - { name: b, address: holding:0 }\n";

afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe.skipIf(!existsSync(cli))("the device map from the CLI", () => {
  it("validate checks the map a gateway.yaml names, and a map alone", () => {
    writeFileSync(devices, sim(TAG_A));
    const ok = spawnSync(process.execPath, [cli, "validate", "--config", gateway], { encoding: "utf8" });
    expect(ok.status).toBe(0);
    expect(ok.stdout).toContain(`${devices}: valid`);
    writeFileSync(devices, sim("      - { name: a, address: input:0, type: float }\n"));
    const bad = spawnSync(process.execPath, [cli, "validate", "--config", gateway], { encoding: "utf8" });
    expect(bad.status).toBe(1);
    expect(bad.stderr).toContain(`${devices}:6:44: devices[0].tags[0].type: expected one of "bool"`);
    const alone = spawnSync(process.execPath, [cli, "validate", "--devices", devices], { encoding: "utf8" });
    expect(alone.status).toBe(1);
    expect(alone.stderr).toContain(`${devices}:6:44`);
  }, 30_000);

  it("run refuses a bad map before it starts", () => {
    writeFileSync(devices, sim("      - { name: a, address: holding:70000 }\n"));
    const res = spawnSync(process.execPath, [cli, "run", "--config", gateway], { encoding: "utf8", timeout: 15_000 });
    expect(res.status).toBe(1);
    expect(res.stderr).toContain(`${devices}:6:29: devices[0].tags[0].address`);
    expect(res.stdout).not.toContain("listening");
  }, 30_000);

  it("SIGHUP reloads the map: a new tag appears; a bad map is refused and the last good one keeps polling", async () => {
    writeFileSync(devices, sim(TAG_A));
    const g = await runCliGateway(cli, gateway);
    let exit: number | null | undefined;
    try {
      const s = g.session;
      const read = (tag: string) => s.read({ nodeId: `ns=1;s=sim.${tag}`, attributeId: AttributeIds.Value });
      const until = async (tag: string, ok: (code: number, value: unknown) => boolean) => {
        for (let i = 0; i < 100; i++) {
          const dv = await read(tag);
          if (ok(dv.statusCode.value, dv.value.value)) return dv;
          await new Promise((r) => setTimeout(r, 50));
        }
        throw new Error(`sim.${tag} never matched: ${(await read(tag)).toString()}`);
      };
      await until("a", (code) => code === 0);
      expect((await read("b")).statusCode.name).toBe("BadNodeIdUnknown");

      writeFileSync(devices, sim(TAG_A + TAG_B));
      g.child.kill("SIGHUP");
      await g.waitFor(/device map: changed sim/, "reload line");
      // Which tags, not only which device.
      await g.waitFor(/device map: sim: 1 tag added \(b\)\n/, "the device's line");
      expect((await until("b", (code) => code === 0)).value.value).toBe(50);

      writeFileSync(devices, sim("      - { name: a, address: holding:70000 }\n"));
      g.child.kill("SIGHUP");
      await g.waitFor(/still polling the last good device map/, "refusal");
      expect(g.output()).toContain(`reload refused: ${devices}:6:29: devices[0].tags[0].address`);
      const a = (await until("a", (code) => code === 0)).value.value;
      await until("a", (code, value) => code === 0 && value !== a);
      expect((await read("b")).statusCode.value).toBe(0);
    } finally {
      exit = await g.stop();
    }
    expect(exit).toBe(0);
  }, 40_000);
});
