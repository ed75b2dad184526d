// Who may see and act on the status page (issue 15): logins with the users of gateway.yaml
// (viewer sees, admin acts), HTTPS with the gateway's own certificate, no default password (no
// users: this box only, nobody acts), CSRF tokens on every action, and the config check that
// refuses a page open to the network without users.
import { describe, expect, it, afterAll, beforeAll } from "vitest";
import { validateYaml } from "../../src/config/load.js";
import { gatewaySchema } from "../../src/config/gateway-config.js";
import { formatIssue } from "../../src/config/errors.js";
import { basic, fetchPage, login, startWebGateway, type WebGateway } from "./helpers.js";

describe("with users", () => {
  let g: WebGateway;
  beforeAll(async () => {
    g = await startWebGateway();
  }, 30_000);
  afterAll(() => g?.stop());

  it("serves HTTPS with the gateway's certificate, and sends a stranger to the login form", async () => {
    expect(g.url).toMatch(/^https:\/\/127\.0\.0\.1:\d+\/$/);
    const page = await fetchPage(g, "/");
    expect(page.status).toBe(303);
    expect(page.headers.location).toBe("/login");
    expect(page.headers["content-security-policy"]).toContain("script-src 'self'");
    expect(page.headers["strict-transport-security"]).toBeDefined();
    const form = await fetchPage(g, "/login");
    expect(form.status).toBe(200);
    expect(form.body).toContain('<form method="post" action="/login"');
    const api = await fetchPage(g, "/api/state");
    expect(api.status).toBe(401);
    expect(api.headers["www-authenticate"]).toMatch(/^Basic realm="fieldgate"/);
  });

  it("refuses a wrong password the same way as an unknown user", async () => {
    for (const [user, password] of [["admin", "wrong"], ["nobody", "x"]]) {
      const r = await fetchPage(g, "/login", { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" }, body: new URLSearchParams({ user, password }).toString() });
      expect(r.status).toBe(303);
      expect(r.headers.location).toBe("/login?failed");
      expect(r.headers["set-cookie"]).toBeUndefined();
    }
    expect(g.log.recent().some((l) => l.message === 'status page: failed login as "nobody" from 127.0.0.1')).toBe(true);
  });

  it("lets a viewer see and not act; an admin acts with the session's CSRF token, or with Basic credentials from no other site", async () => {
    const viewer = await login(g, "viewer");
    const me = JSON.parse((await fetchPage(g, "/api/me", { headers: { cookie: viewer } })).body);
    expect(me).toMatchObject({ user: "viewer", role: "viewer", loginRequired: true });
    const state = await fetchPage(g, "/api/state", { headers: { cookie: viewer } });
    expect(state.status).toBe(200);
    expect(JSON.parse(state.body).gateway.endpoint).toBe(g.server.endpointUrl);
    const denied = await fetchPage(g, "/api/reload", { method: "POST", headers: { cookie: viewer, "x-fieldgate-csrf": me.csrf } });
    expect(denied.status).toBe(403);
    expect(JSON.parse(denied.body).error).toBe("only an admin may do this");

    const admin = await login(g, "admin");
    const adminMe = JSON.parse((await fetchPage(g, "/api/me", { headers: { cookie: admin } })).body);
    expect(adminMe.role).toBe("admin");
    const noToken = await fetchPage(g, "/api/reload", { method: "POST", headers: { cookie: admin } });
    expect(noToken.status).toBe(403);
    expect(JSON.parse(noToken.body).error).toMatch(/CSRF/);
    // Another session's token is not this one's.
    const wrongToken = await fetchPage(g, "/api/reload", { method: "POST", headers: { cookie: admin, "x-fieldgate-csrf": me.csrf } });
    expect(wrongToken.status).toBe(403);
    const reload = await fetchPage(g, "/api/reload", { method: "POST", headers: { cookie: admin, "x-fieldgate-csrf": adminMe.csrf } });
    // No device map in this config: refused, and said so.
    expect(reload.status).toBe(422);
    expect(JSON.parse(reload.body).error).toBe("refused: no device map configured");
    // Basic credentials (a scraper, a script): a viewer sees; an admin acts from a script, never
    // from a page of another site (a browser sends Sec-Fetch-Site and may replay cached Basic
    // credentials with a cross-site form).
    expect((await fetchPage(g, "/metrics", { headers: { authorization: basic("viewer") } })).status).toBe(200);
    expect((await fetchPage(g, "/api/reload", { method: "POST", headers: { authorization: basic("viewer") } })).status).toBe(403);
    expect((await fetchPage(g, "/api/reload", { method: "POST", headers: { authorization: basic("admin") } })).status).toBe(422);
    const crossSite = await fetchPage(g, "/api/reload", { method: "POST", headers: { authorization: basic("admin"), "sec-fetch-site": "cross-site" } });
    expect(crossSite.status).toBe(403);
    expect(JSON.parse(crossSite.body).error).toMatch(/another site/);
    expect((await fetchPage(g, "/api/reload", { method: "POST", headers: { authorization: basic("admin"), "sec-fetch-site": "same-origin" } })).status).toBe(422);
  });

  it("ends a session at logout", async () => {
    const admin = await login(g, "admin");
    expect((await fetchPage(g, "/api/me", { headers: { cookie: admin } })).status).toBe(200);
    const out = await fetchPage(g, "/logout", { method: "POST", headers: { cookie: admin } });
    expect(out.status).toBe(303);
    expect(out.headers["set-cookie"]?.[0]).toMatch(/Max-Age=0/);
    expect((await fetchPage(g, "/api/me", { headers: { cookie: admin } })).status).toBe(401);
  });

  it("sets the cookie HttpOnly, SameSite=Strict and Secure", async () => {
    const r = await fetchPage(g, "/login", { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" }, body: "user=viewer&password=view+only+please" });
    expect(r.headers["set-cookie"]?.[0]).toMatch(/^fieldgate_session=[\w-]{43}; Path=\/; HttpOnly; SameSite=Strict; Secure$/);
  });

  it("refuses a body over 16 KiB and bad thumbprints", async () => {
    const admin = await login(g, "admin");
    const csrf = JSON.parse((await fetchPage(g, "/api/me", { headers: { cookie: admin } })).body).csrf as string;
    const big = await fetchPage(g, "/api/certificates/trust", { method: "POST", headers: { cookie: admin, "x-fieldgate-csrf": csrf }, body: "x".repeat(20_000) });
    expect(big.status).toBe(413);
    const file = await fetchPage(g, "/api/certificates/trust", { method: "POST", headers: { cookie: admin, "x-fieldgate-csrf": csrf }, body: JSON.stringify({ thumbprint: "/etc/passwd" }) });
    expect(file.status).toBe(400);
    const unknown = await fetchPage(g, "/api/certificates/trust", { method: "POST", headers: { cookie: admin, "x-fieldgate-csrf": csrf }, body: JSON.stringify({ thumbprint: "ab".repeat(20) }) });
    expect(unknown.status).toBe(404);
  });
});

describe("without users", () => {
  it("serves this box only, without a login, and nobody acts", async () => {
    const g = await startWebGateway({ users: false, tls: false });
    try {
      expect(g.web.listenHost).toBe("127.0.0.1");
      expect(g.url).toMatch(/^http:\/\/127\.0\.0\.1:/);
      const page = await fetchPage(g, "/");
      expect(page.status).toBe(200);
      expect(page.body).toContain('<script src="/app.js" defer></script>');
      const me = JSON.parse((await fetchPage(g, "/api/me")).body);
      expect(me).toEqual({ user: "", role: "viewer", csrf: "", loginRequired: false });
      expect((await fetchPage(g, "/api/reload", { method: "POST", headers: { "x-fieldgate-csrf": "" } })).status).toBe(403);
    } finally {
      await g.stop();
    }
  }, 30_000);

  it("a config that would open it to the network is refused, naming the key", () => {
    const r = validateYaml(gatewaySchema, "web:\n  enabled: true\n  host: 0.0.0.0\n", "gateway.yaml");
    expect(r.ok).toBe(false);
    expect(r.ok ? [] : r.issues.map(formatIssue)).toEqual([
      "gateway.yaml:3:9: web.host: expected 127.0.0.1 when no users are configured, got 0.0.0.0: the page would be open to the network without a login (add users: with a password to serve it there)",
    ]);
    expect(validateYaml(gatewaySchema, "web:\n  enabled: true\n  host: 127.0.0.1\n", "gateway.yaml").ok).toBe(true);
  });
});
