// A gateway with its status page, on 127.0.0.1 and ephemeral ports, from a gateway.yaml written
// to a temp folder (the loader `fieldgate run` uses), and an HTTPS client that trusts exactly the
// gateway's own certificate.
import { request } from "node:https";
import { request as httpRequest, type IncomingHttpHeaders } from "node:http";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadGatewayConfig } from "../../src/config/load.js";
import { Logger } from "../../src/log.js";
import { FieldgateServer, type FieldgateServerOptions } from "../../src/server/server.js";
import { hashPassword } from "../../src/sessions/users.js";
import { startStatusPage, type WebServer, type WebServerOptions } from "../../src/web/web-server.js";

export interface WebGateway {
  dir: string;
  configFile: string;
  server: FieldgateServer;
  web: WebServer;
  log: Logger;
  /** The page's base URL, ending in "/". */
  url: string;
  opcUrl: string;
  /** The gateway's certificate as PEM (for clients that trust it). */
  certPem: string;
  stop(): Promise<void>;
}

export const PASSWORDS = { admin: "correct horse battery", viewer: "view only please" };

let hashes: Promise<{ admin: string; viewer: string }> | undefined;

/** `users`: admin and viewer with PASSWORDS; `extraYaml` is appended (devices:, more web keys, ...); `loadRoutes`: how the page's first request imports its routes. */
export async function startWebGateway(
  o: { users?: boolean; tls?: boolean; extraYaml?: string; web?: string; dir?: string; server?: Omit<FieldgateServerOptions, "configFile">; loadRoutes?: WebServerOptions["loadRoutes"] } = {},
): Promise<WebGateway> {
  const dir = o.dir ?? mkdtempSync(join(tmpdir(), "fieldgate-web-"));
  let users = "";
  if (o.users !== false) {
    hashes ??= Promise.all([hashPassword(PASSWORDS.admin), hashPassword(PASSWORDS.viewer)]).then(([admin, viewer]) => ({ admin, viewer }));
    const h = await hashes;
    users = `users:\n  admin:\n    role: admin\n    password: "${h.admin}"\n  viewer:\n    role: viewer\n    password: "${h.viewer}"\n`;
  }
  const configFile = join(dir, "gateway.yaml");
  writeFileSync(
    configFile,
    `server:\n  host: 127.0.0.1\n  port: 0\ndataDir: ./data\nsecurity:\n  securityPolicies: [None, Basic256Sha256]\n${users}` +
      `web:\n  enabled: true\n  host: 127.0.0.1\n  port: 0\n  tls: ${o.tls !== false}\n${o.web ?? ""}${o.extraYaml ?? ""}`,
  );
  const log = new Logger({ level: "debug", journal: false, write: () => undefined });
  const server = new FieldgateServer(loadGatewayConfig(configFile), log, { ...o.server, configFile });
  await server.start();
  const web = await startStatusPage(server, log, { loadRoutes: o.loadRoutes });
  const der = server.pki!.ownCertificate;
  const certPem = `-----BEGIN CERTIFICATE-----\n${der.toString("base64").replace(/.{64}/g, "$&\n")}\n-----END CERTIFICATE-----\n`;
  return {
    dir,
    configFile,
    server,
    web,
    log,
    url: web.url,
    opcUrl: `opc.tcp://127.0.0.1:${server.port}`,
    certPem,
    async stop() {
      await web.close();
      await server.stop();
      if (o.dir === undefined) rmSync(dir, { recursive: true, force: true });
    },
  };
}

export interface Reply {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
}

/**
 * One request; the gateway's certificate is the only one trusted (host name not checked: the test
 * box's names vary). `fresh`: on a connection of its own, as a new visitor's, not one kept alive.
 */
export function fetchPage(g: WebGateway, path: string, o: { method?: string; headers?: Record<string, string>; body?: string; fresh?: boolean } = {}): Promise<Reply> {
  const url = new URL(path, g.url);
  const tls = url.protocol === "https:";
  return new Promise((resolve, reject) => {
    const req = (tls ? request : httpRequest)(
      url,
      { method: o.method ?? "GET", headers: o.headers, ...(o.fresh ? { agent: false } : {}), ...(tls ? { ca: g.certPem, checkServerIdentity: () => undefined } : {}) },
      (res) => {
        let body = "";
        res.setEncoding("utf8");
        res.on("data", (d: string) => (body += d));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
      },
    );
    req.on("error", reject);
    req.setTimeout(15_000, () => req.destroy(new Error(`no answer to ${path}`)));
    req.end(o.body);
  });
}

/** Logs in through the form; returns the Cookie header value. */
export async function login(g: WebGateway, user: keyof typeof PASSWORDS): Promise<string> {
  const r = await fetchPage(g, "/login", {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({ user, password: PASSWORDS[user] }).toString(),
  });
  if (r.status !== 303 || r.headers.location !== "/") throw new Error(`login as ${user} failed: ${r.status} ${r.headers.location}`);
  const cookie = r.headers["set-cookie"]?.[0];
  if (cookie === undefined) throw new Error("no session cookie");
  return cookie.split(";")[0]!;
}

export function basic(user: keyof typeof PASSWORDS): string {
  return `Basic ${Buffer.from(`${user}:${PASSWORDS[user]}`).toString("base64")}`;
}
