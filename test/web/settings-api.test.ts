// The settings API (src/web/config-api.ts over src/server/settings-files.ts): the running files
// read, checked, applied as a SIGHUP applies them, refused with nothing changed, their versions
// kept and restored, gateway.yaml's users applied at once; a test read of a map not applied; a
// Kepware CSV made into a device; a tag's trend; the FIELDGATE drive's last import.
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { createServer, type Server, type Socket } from "node:net";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { hashPassword } from "../../src/sessions/users.js";
import { MAX_SETTINGS_BODY } from "../../src/web/config-api.js";
import { basic, fetchPage, login, startWebGateway, type WebGateway } from "./helpers.js";

const MAP = `# the plant's map: this comment stays through every change
devices:
  - name: sim
    driver: simulator
    rate: 200ms
    tags:
      - { name: ramp, address: input:0, history: true }
      - { name: level, address: input:1 }
`;

interface Session {
  cookie: string;
  csrf: string;
}

async function session(g: WebGateway, user: "admin" | "viewer"): Promise<Session> {
  const cookie = await login(g, user);
  return { cookie, csrf: JSON.parse((await fetchPage(g, "/api/me", { headers: { cookie } })).body).csrf as string };
}

function post(g: WebGateway, s: Session, path: string, body: string, headers: Record<string, string> = {}) {
  return fetchPage(g, path, { method: "POST", headers: { cookie: s.cookie, "x-fieldgate-csrf": s.csrf, "content-type": "text/yaml", ...headers }, body });
}

/** Waits (bounded) until `f` gives something; the test's own time-out is the bound's bound. */
async function until<T>(f: () => Promise<T | undefined> | T | undefined, what: string, ms = 15_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await f();
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error(`waited ${ms} ms for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe("the settings API", () => {
  let g: WebGateway;
  let admin: Session;
  let viewer: Session;
  let mapFile: string;

  beforeAll(async () => {
    const { mkdtempSync } = await import("node:fs");
    const { tmpdir } = await import("node:os");
    const dir = mkdtempSync(join(tmpdir(), "fieldgate-settings-api-"));
    mapFile = join(dir, "devices.yaml");
    writeFileSync(mapFile, MAP);
    g = await startWebGateway({ dir, extraYaml: "devices: ./devices.yaml\nhistory:\n  flushInterval: 200ms\n" });
    admin = await session(g, "admin");
    viewer = await session(g, "viewer");
  }, 60_000);

  afterAll(async () => {
    await g?.stop();
    const { rmSync } = await import("node:fs");
    if (mapFile) rmSync(join(mapFile, ".."), { recursive: true, force: true });
  });

  it("reads the running files with an ETag, for viewers too (gateway.yaml's passwords hidden); ?download makes it a file", async () => {
    const r = await fetchPage(g, "/api/config/devices", { headers: { cookie: viewer.cookie } });
    expect(r.status).toBe(200);
    expect(r.headers["content-type"]).toBe("text/yaml; charset=utf-8");
    expect(r.body).toBe(MAP);
    expect(r.headers.etag).toMatch(/^"[0-9a-f]{32}"$/);
    const d = await fetchPage(g, "/api/config/devices?download", { headers: { cookie: viewer.cookie } });
    expect(d.headers["content-disposition"]).toBe('attachment; filename="devices.yaml"');
    const list = JSON.parse((await fetchPage(g, "/api/config", { headers: { cookie: viewer.cookie } })).body);
    expect(list).toEqual([
      { kind: "devices", unavailable: null },
      { kind: "gateway", unavailable: null },
      { kind: "network", unavailable: expect.stringMatching(/appliance/) },
    ]);
    expect((await fetchPage(g, "/api/config/network", { headers: { cookie: viewer.cookie } })).status).toBe(409);
    // gateway.yaml's password hashes are an admin's to see.
    const forViewer = (await fetchPage(g, "/api/config/gateway", { headers: { cookie: viewer.cookie } })).body;
    const forAdmin = (await fetchPage(g, "/api/config/gateway", { headers: { cookie: admin.cookie } })).body;
    expect(forAdmin).toBe(readFileSync(g.configFile, "utf8"));
    expect(forAdmin).toMatch(/password: "\$scrypt\$/);
    expect(forViewer).not.toContain("$scrypt$");
    expect(forViewer).toBe(forAdmin.replace(/password: "[^"]+"/g, 'password: "(hidden: admins only)"'));
  });

  it("checks a map: each issue with its line, column, key path and message", async () => {
    const typo = MAP.replace("{ name: level, address: input:1 }", "{ name: level, adress: input:1 }");
    const r = await post(g, admin, "/api/config/devices/check", typo);
    expect(r.status).toBe(200);
    const issues = JSON.parse(r.body);
    expect(issues).toEqual([
      { file: mapFile, line: 8, column: 9, path: "devices[0].tags[1].address", message: expect.stringMatching(/^missing required key; expected a Modbus address/) },
      { file: mapFile, line: 8, column: 24, path: "devices[0].tags[1].adress", message: 'unknown key; did you mean "address"?' },
    ]);
    expect(JSON.parse((await post(g, admin, "/api/config/devices/check", MAP)).body)).toEqual([]);
  });

  it("refuses a viewer, a session without its CSRF token, a body past the bound and a map with mistakes, changing nothing", async () => {
    const map = g.server.deviceMap;
    const poller = g.server.deviceRuntime.poller("sim");
    const changed = MAP.replace("rate: 200ms", "rate: 300ms");

    const asViewer = await post(g, viewer, "/api/config/devices", changed);
    expect(asViewer.status).toBe(403);
    expect(JSON.parse(asViewer.body).error).toMatch(/only an admin/);
    expect((await post(g, viewer, "/api/config/devices/check", changed)).status).toBe(403);

    const noToken = await fetchPage(g, "/api/config/devices", { method: "POST", headers: { cookie: admin.cookie }, body: changed });
    expect(noToken.status).toBe(403);
    expect(JSON.parse(noToken.body).error).toMatch(/CSRF/);

    const big = await post(g, admin, "/api/config/devices", `${MAP}#${"x".repeat(MAX_SETTINGS_BODY)}\n`);
    expect(big.status).toBe(413);

    const bad = await post(g, admin, "/api/config/devices", MAP.replace("address: input:1 }", "address: input:1, type: float33 }"));
    expect(bad.status).toBe(422);
    const body = JSON.parse(bad.body);
    expect(body.error).toMatch(/nothing was changed, the last good map stays in use/);
    expect(body.issues[0]).toMatchObject({ line: 8, path: "devices[0].tags[1].type", message: expect.stringMatching(/did you mean "float32"/) });

    expect(readFileSync(mapFile, "utf8")).toBe(MAP);
    expect(existsSync(`${mapFile}.previous`)).toBe(false);
    expect(g.server.deviceMap).toBe(map);
    expect(g.server.deviceRuntime.poller("sim")).toBe(poller);
    expect(JSON.parse((await fetchPage(g, "/api/config/devices/versions", { headers: { cookie: viewer.cookie } })).body)).toEqual([]);
  });

  it("applies a map as a reload does, keeps the old file and the versions, and restores one", async () => {
    const before = await fetchPage(g, "/api/config/devices", { headers: { cookie: admin.cookie } });
    const added = MAP.replace("      - { name: level, address: input:1 }\n", "      - { name: level, address: input:1 }\n      - { name: counter, address: input:3 }\n");
    const r = await post(g, admin, "/api/config/devices", added, { "if-match": before.headers.etag! });
    expect(r.status).toBe(200);
    const applied = JSON.parse(r.body);
    expect(applied.message).toBe("device map applied: changed sim; 0 unchanged");
    expect(applied.details).toEqual(["sim: 1 tag added (counter)"]);
    expect(applied.version).toMatchObject({ id: 2, user: "admin", summary: "changed sim; 0 unchanged" });
    expect(readFileSync(mapFile, "utf8")).toBe(added);
    expect(readFileSync(`${mapFile}.previous`, "utf8")).toBe(MAP);
    expect(g.server.deviceRuntime.poller("sim")!.tag("counter")).toBeDefined();
    expect(g.log.recent(0).some((l) => l.message === "status page: admin applied devices.yaml as version 2: changed sim; 0 unchanged")).toBe(true);

    const versions = JSON.parse((await fetchPage(g, "/api/config/devices/versions", { headers: { cookie: viewer.cookie } })).body);
    expect(versions.map((v: { id: number; user: string }) => [v.id, v.user])).toEqual([
      [2, "admin"],
      [1, "on disk"],
    ]);
    expect((await fetchPage(g, "/api/config/devices/versions/1", { headers: { cookie: viewer.cookie } })).body).toBe(MAP);
    expect((await fetchPage(g, "/api/config/devices/versions/7", { headers: { cookie: viewer.cookie } })).status).toBe(404);
    expect((await post(g, viewer, "/api/config/devices/versions/1/restore", "")).status).toBe(403);

    const restored = await post(g, admin, "/api/config/devices/versions/1/restore", "");
    expect(restored.status).toBe(200);
    expect(JSON.parse(restored.body)).toMatchObject({ message: "device map applied (version 1 restored): changed sim; 0 unchanged", version: { id: 3, restoredFrom: 1 } });
    expect(readFileSync(mapFile, "utf8")).toBe(MAP);
    expect(g.server.deviceRuntime.poller("sim")!.tag("counter")).toBeUndefined();
  });

  it("refuses an apply over a file changed on the gateway since it was read (If-Match)", async () => {
    const r = await post(g, admin, "/api/config/devices", MAP.replace("200ms", "250ms"), { "if-match": '"0123456789abcdef0123456789abcdef"' });
    expect(r.status).toBe(409);
    expect(JSON.parse(r.body).error).toMatch(/changed on the gateway since it was read/);
    expect(readFileSync(mapFile, "utf8")).toBe(MAP);
  });

  it("lets a script apply with HTTP Basic credentials, never from a page of another site", async () => {
    const text = MAP.replace("rate: 200ms", "rate: 250ms");
    const cross = await fetchPage(g, "/api/config/devices", { method: "POST", headers: { authorization: basic("admin"), "sec-fetch-site": "cross-site" }, body: text });
    expect(cross.status).toBe(403);
    expect(readFileSync(mapFile, "utf8")).toBe(MAP);
    const r = await fetchPage(g, "/api/config/devices", { method: "POST", headers: { authorization: basic("admin"), "content-type": "text/yaml" }, body: text });
    expect(r.status).toBe(200);
    expect(JSON.parse(r.body).version.user).toBe("admin");
    expect(readFileSync(mapFile, "utf8")).toBe(text);
    // Back as it was, for the tests after this one.
    expect((await fetchPage(g, "/api/config/devices", { method: "POST", headers: { authorization: basic("admin") }, body: MAP })).status).toBe(200);
  });

  it("gateway.yaml: users take effect at once, other sections at the next restart, and the last admin stays", async () => {
    const file = g.configFile;
    const text = readFileSync(file, "utf8");
    const hash = await hashPassword("a new operator");
    const withUser = text.replace("users:\n", `users:\n  olga:\n    role: operator\n    password: "${hash}"\n`);
    const r = await post(g, admin, "/api/config/gateway", withUser);
    expect(r.status).toBe(200);
    const body = JSON.parse(r.body);
    expect(body.message).toBe("gateway settings applied");
    expect(body.details).toEqual(["users: added olga; 0 sessions closed"]);
    expect(body.restartNeeded).toEqual([]);
    expect(g.server.users.get("olga")?.role).toBe("operator");

    const limits = `${withUser}limits:\n  maxSessions: 50\n`;
    const l = JSON.parse((await post(g, admin, "/api/config/gateway", limits)).body);
    expect(l.restartNeeded).toEqual(["limits"]);
    expect(l.message).toBe("gateway settings saved; a restart is needed for limits");

    const noAdmin = text.replace(/ {2}admin:\n {4}role: admin\n {4}password: "[^"]+"\n/, "");
    expect(noAdmin).not.toMatch(/role: admin/);
    const refused = await post(g, admin, "/api/config/gateway", noAdmin);
    expect(refused.status).toBe(422);
    expect(JSON.parse(refused.body).issues[0]).toMatchObject({ path: "users", message: expect.stringMatching(/no user with role admin/) });
    expect(g.server.users.get("admin")?.role).toBe("admin");
    expect(readFileSync(file, "utf8")).toBe(limits);
    expect((await post(g, admin, "/api/config/gateway", text)).status).toBe(200);
  });

  it("takes a device map of 10,000 tags within its bound", async () => {
    const lines = ["# 10,000 tags in the shipped map's style", "devices:"];
    for (let d = 0; d < 10; d++) {
      lines.push(`  - name: line${d}-plc`, "    driver: modbus-tcp", `    host: 192.0.2.${10 + d}`, "    unitId: 1", "    rate: 1s", "    tags:");
      for (let t = 0; t < 1000; t++) {
        lines.push(`      - name: motor${t}.speed`, `        address: holding:${2 * t}`, "        type: float32", "        unit: r/min", "        scale: 0.1", "        history: true");
        lines.push(`        description: Speed of motor ${t} of line ${d}, from its drive`);
      }
    }
    const text = `${lines.join("\n")}\n`;
    const bytes = Buffer.byteLength(text);
    console.log(`a 10,000-tag map in the shipped map's style: ${bytes} bytes (bound ${MAX_SETTINGS_BODY})`);
    expect(bytes).toBeLessThan(MAX_SETTINGS_BODY / 2);
    const r = await post(g, admin, "/api/config/devices/check", text);
    expect(r.status).toBe(200);
    expect(JSON.parse(r.body)).toEqual([]);
  }, 60_000);

  describe("test read", () => {
    let silent: Server;
    const held: Socket[] = [];
    let silentPort: number;
    let closedPort: number;

    beforeAll(async () => {
      // A device that takes the connection and never answers.
      silent = createServer((s) => held.push(s));
      await new Promise<void>((r) => silent.listen(0, "127.0.0.1", r));
      silentPort = (silent.address() as { port: number }).port;
      const gone = createServer();
      await new Promise<void>((r) => gone.listen(0, "127.0.0.1", r));
      closedPort = (gone.address() as { port: number }).port;
      await new Promise((r) => gone.close(r));
    });
    afterAll(async () => {
      for (const s of held) s.destroy();
      await new Promise((r) => silent?.close(r));
    });

    const edited = () =>
      MAP +
      "  - name: fresh\n    driver: simulator\n    tags:\n      - { name: r1, address: input:1 }\n      - { name: missing, address: holding:20000 }\n" +
      `  - name: refuses\n    driver: modbus-tcp\n    host: 127.0.0.1\n    port: ${closedPort}\n    timeout: 300ms\n    tags:\n      - { name: a, address: holding:0 }\n` +
      `  - name: silent\n    driver: modbus-tcp\n    host: 127.0.0.1\n    port: ${silentPort}\n    timeout: 300ms\n    tags:\n      - { name: a, address: holding:0 }\n`;

    const read = async (device: string, text = edited()) => {
      const r = await fetchPage(g, "/api/config/devices/test-read", {
        method: "POST",
        headers: { cookie: admin.cookie, "x-fieldgate-csrf": admin.csrf, "content-type": "application/json" },
        body: JSON.stringify({ text, device }),
      });
      return { status: r.status, body: JSON.parse(r.body) };
    };

    it("reads a device of the edited map once: values, and a Modbus exception at the tag it hit", async () => {
      const { status, body } = await read("fresh");
      expect(status).toBe(200);
      expect(body.error).toBeUndefined();
      const [r1, missing] = body.tags;
      expect(r1).toMatchObject({ name: "r1", status: "Good", quality: 0 });
      expect(Number(r1.value)).toBeGreaterThanOrEqual(0);
      expect(missing).toMatchObject({ name: "missing", status: "BadConfigurationError", quality: 2 });
      expect(missing.error).toMatch(/exception|illegal data address/i);
      // Nothing was applied: the gateway polls no device "fresh".
      expect(g.server.deviceRuntime.poller("fresh")).toBeUndefined();
      expect(readFileSync(mapFile, "utf8")).toBe(MAP);
    });

    it("says a refused connection and a time-out as the driver says them", async () => {
      const refused = await read("refuses");
      expect(refused.status).toBe(200);
      expect(refused.body.error).toMatch(/refused|ECONNREFUSED/i);
      expect(refused.body.tags[0]).toMatchObject({ name: "a", quality: 2, error: refused.body.error });
      const silentRead = await read("silent");
      expect(silentRead.body.error).toMatch(/time|no answer/i);
      expect(silentRead.body.tags[0].status).toBe("BadNoCommunication");
    }, 20_000);

    it("names the mistakes of a map that is not valid, and an unknown device", async () => {
      const bad = await read("fresh", edited().replace("{ name: r1, address: input:1 }", "{ name: r1, address: inptu:1 }"));
      expect(bad.status).toBe(422);
      expect(bad.body.issues[0].path).toMatch(/devices\[1\]\.tags\[0\]\.address/);
      const unknown = await read("nobody");
      expect(unknown.status).toBe(404);
      expect(unknown.body.error).toMatch(/no device "nobody" in the map \(it has sim, fresh, refuses, silent\)/);
    });
  });

  it("makes a Kepware CSV a device of the map being edited, its comments kept", async () => {
    expect(JSON.parse((await fetchPage(g, "/api/config/devices/kepware", { headers: { cookie: viewer.cookie } })).body).drivers.length).toBeGreaterThan(0);
    const csv = readFileSync(join(import.meta.dirname, "../cli/fixtures/kepware-comma.csv"), "utf8");
    const r = await fetchPage(g, "/api/config/devices/kepware", {
      method: "POST",
      headers: { cookie: admin.cookie, "x-fieldgate-csrf": admin.csrf, "content-type": "application/json" },
      body: JSON.stringify({ text: MAP, csv, device: "press", host: "192.0.2.7", station: "2" }),
    });
    expect(r.status).toBe(200);
    const body = JSON.parse(r.body);
    expect(body.converted).toBeGreaterThan(0);
    expect(body.text).toMatch(/^# the plant's map: this comment stays through every change\n/);
    expect(body.text).toMatch(/ {2}- name: press\n {4}driver: modbus-tcp\n {4}host: 192\.0\.2\.7\n {4}unitId: 2\n/);
    expect(JSON.parse((await post(g, admin, "/api/config/devices/check", body.text)).body)).toEqual([]);
    // Not applied.
    expect(readFileSync(mapFile, "utf8")).toBe(MAP);
  });

  it("draws a historized tag's trend from the history, and refuses a tag that keeps none", async () => {
    const from = Date.now() - 60_000;
    const points = await until(async () => {
      const r = await fetchPage(g, `/api/trend?device=sim&tag=ramp&from=${from}&to=${Date.now() + 1000}`, { headers: { cookie: viewer.cookie } });
      const b = JSON.parse(r.body);
      return r.status === 200 && b.t.length >= 3 ? b : undefined;
    }, "three stored samples of sim.ramp");
    expect(points.t.length).toBe(points.v.length);
    for (let i = 1; i < points.t.length; i++) expect(points.t[i]).toBeGreaterThan(points.t[i - 1]);
    expect(points.interval).toBeUndefined();
    const none = await fetchPage(g, "/api/trend?device=sim&tag=level", { headers: { cookie: viewer.cookie } });
    expect(none.status).toBe(409);
    expect(JSON.parse(none.body).error).toBe("sim.level keeps no history (history: true in the device map keeps it)");
    expect((await fetchPage(g, "/api/trend?device=sim&tag=nope", { headers: { cookie: viewer.cookie } })).status).toBe(404);
  }, 30_000);

  it("shows the FIELDGATE drive's last import on the page and through the API", async () => {
    const status = {
      format: 1,
      result: "refused",
      at: "2026-12-05T14:02:09.000Z",
      files: ["devices.yaml"],
      issues: [{ file: "devices.yaml", line: 7, column: 9, path: "devices[0].tags[0].type", message: 'expected one of bool, int16, ...; did you mean "float32"?' }],
      fingerprint: "x",
      text: "",
    };
    writeFileSync(join(g.dir, "data", "settings-import.json"), JSON.stringify(status));
    const r = JSON.parse((await fetchPage(g, "/api/settings-import", { headers: { cookie: viewer.cookie } })).body);
    expect(r).toEqual({ result: "refused", at: "2026-12-05 14:02:09 UTC", files: ["devices.yaml"], issues: ['devices.yaml:7:9: devices[0].tags[0].type: expected one of bool, int16, ...; did you mean "float32"?'] });
    const page = (await fetchPage(g, "/", { headers: { cookie: viewer.cookie } })).body;
    expect(page).toMatch(/<p class="bad" id="import-result">refused 2026-12-05 14:02:09 UTC: nothing was changed/);
    expect(page).toContain("devices.yaml:7:9: devices[0].tags[0].type: expected one of bool, int16, ...; did you mean &quot;float32&quot;?");
  });
});
