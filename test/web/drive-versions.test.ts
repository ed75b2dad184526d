// One version history for the FIELDGATE drive and the page: a device map imported from the drive
// before the gateway starts (src/settings/import.ts, as at boot) is a version by "FIELDGATE
// drive" in the list the page shows, after the file it replaced; the page restores that one,
// and the gateway polls the map as it was. The import's result is on the page at once.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { importSettings } from "../../src/settings/import.js";
import { DRIVERS } from "../helpers/map.js";
import { basic, fetchPage, startWebGateway, type WebGateway } from "./helpers.js";

const MAP = "devices:\n  - name: sim\n    driver: simulator\n    rate: 200ms\n    tags:\n      - { name: ramp, address: input:0 }\n";
const FROM_DRIVE = MAP.replace("      - { name: ramp, address: input:0 }\n", "      - { name: ramp, address: input:0 }\n      - { name: level, address: input:1 }\n").replace("  - name: sim\n", "  - name: press\n");

describe("versions from the FIELDGATE drive and the page in one list", () => {
  const dir = mkdtempSync(join(tmpdir(), "fieldgate-drive-versions-"));
  const drive = join(dir, "drive", "fieldgate");
  let g: WebGateway;
  const get = (path: string, user: "admin" | "viewer" = "viewer") => fetchPage(g, path, { headers: { authorization: basic(user) } });

  beforeAll(async () => {
    writeFileSync(join(dir, "devices.yaml"), MAP);
    // The gateway as it ran before: its gateway.yaml and data folder.
    g = await startWebGateway({ dir, extraYaml: "devices: ./devices.yaml\n" });
    await g.stop();
    // The boot: the drive's devices.yaml imported before the gateway starts.
    mkdirSync(drive, { recursive: true });
    writeFileSync(join(drive, "devices.yaml"), FROM_DRIVE);
    const data = join(dir, "data");
    const r = await importSettings(
      { from: drive, configDir: dir, sshDir: join(dir, "ssh"), statusFile: join(data, "settings-import.json"), versionsDir: join(data, "versions") },
      DRIVERS,
      { now: () => new Date("2026-12-05T14:02:11Z") },
    );
    expect(r.result).toBe("applied");
    g = await startWebGateway({ dir, extraYaml: "devices: ./devices.yaml\n" });
  }, 60_000);

  afterAll(async () => {
    await g?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it("lists the drive's import as a version, after the file it replaced, with what it changed", async () => {
    const versions = JSON.parse((await get("/api/config/devices/versions")).body);
    expect(versions.map((v: { id: number; user: string; summary: string; at: string }) => [v.id, v.user, v.summary])).toEqual([
      [2, "FIELDGATE drive", "added press; removed sim; 0 unchanged"],
      [1, "on disk", "the file as it was before the first change from the FIELDGATE drive"],
    ]);
    expect(versions[0].at).toBe("2026-12-05T14:02:11.000Z");
    expect((await get("/api/config/devices/versions/1")).body).toBe(MAP);
    expect(g.server.deviceMap?.devices.map((d) => d.name)).toEqual(["press"]);
  });

  it("shows the import's result on the page, at the top", async () => {
    const page = (await get("/")).body;
    expect(page).toMatch(/<section id="import-card" class="wide"><h2>Settings from the FIELDGATE drive<\/h2><p class="ok" id="import-result">applied 2026-12-05 14:02:11 UTC: devices.yaml/);
    // Before the gateway's own cards: an admin sees it without scrolling.
    expect(page.indexOf('id="import-card"')).toBeLessThan(page.indexOf('id="gateway"'));
  });

  it("restores the version before the drive's, as any version: the map polled is the old one again", async () => {
    const r = await fetchPage(g, "/api/config/devices/versions/1/restore", { method: "POST", headers: { authorization: basic("admin") } });
    expect(r.status, r.body).toBe(200);
    expect(JSON.parse(r.body).message).toBe("device map applied (version 1 restored): added sim; removed press; 0 unchanged");
    expect(readFileSync(join(dir, "devices.yaml"), "utf8")).toBe(MAP);
    expect(g.server.deviceMap?.devices.map((d) => d.name)).toEqual(["sim"]);
    const versions = JSON.parse((await get("/api/config/devices/versions")).body);
    expect(versions.map((v: { user: string; restoredFrom?: number }) => [v.user, v.restoredFrom ?? null])).toEqual([
      ["admin", 1],
      ["FIELDGATE drive", null],
      ["on disk", null],
    ]);
  });
});
