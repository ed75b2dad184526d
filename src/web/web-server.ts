// The status page's HTTP(S) server (DESIGN: src/web): its own port (`web:` in gateway.yaml),
// HTTPS with the gateway's own certificate and key from pki/own unless `tls: false`, logins
// with the users of gateway.yaml (auth.ts), and these routes:
//
//   GET  /, /app.js, /app.css     the page (page-assets.ts)
//   GET  /login, POST /login      the login form; POST /logout
//   GET  /api/me                  who is logged in, their role and CSRF token
//   GET  /api/events?device=NAME  server-sent events (updates.ts)
//   GET  /api/state               one snapshot as JSON (for scripts)
//   POST /api/reload              admin: reload the device map (as SIGHUP does)
//   POST /api/certificates/trust|reject  {thumbprint}  admin: move a certificate in pki/
//   GET  /metrics                 Prometheus text format (metrics.ts); cookie or HTTP Basic
//
// Bounded: request bodies (16 KiB), headers and requests time out (a connection's first request
// from its accept, TLS handshake included), open pages (maxClients), connections (maxClients +
// 32, and maxConnectionsPerAddress from one client address: connection-guard.ts).
import { createServer as createHttpServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { createServer as createHttpsServer } from "node:https";
import type { AddressInfo } from "node:net";
import type { GatewayConfig, WebConfig } from "../config/gateway-config.js";
import { isLoopbackHost } from "../config/gateway-config.js";
import { formatIssue, type ConfigIssue } from "../config/load.js";
import type { ApplyReport } from "../devices/device-runtime.js";
import type { Logger } from "../log.js";
import { describeApply } from "../devices/map-changes.js";
import { packageVersion } from "../package-info.js";
import { clockSynchronized } from "../sampling/clock.js";
import { pkiOptions } from "../security/cert-cli.js";
import { derToPem } from "../security/certificates.js";
import { Pki } from "../security/pki.js";
import type { UserDirectory } from "../sessions/users.js";
import { roleAtLeast, SESSION_COOKIE, WebAuth, type Principal } from "./auth.js";
import { METRICS_CONTENT_TYPE, renderMetrics, type MetricsSource } from "./metrics.js";
import { ConnectionGuard } from "./connection-guard.js";
import { APP_CSS, APP_JS, loginHtml, PAGE_HTML } from "./page-assets.js";
import { certificatesView, StatusViews, type ViewSource } from "./status-view.js";
import { LiveUpdates, type UpdateSource } from "./updates.js";

const MAX_BODY = 16 * 1024;
/** How often Node checks headersTimeout and requestTimeout (its default, 30 s, would let a request run that much over). */
const TIMEOUT_CHECK_MS = 1000;

/**
 * What the page reads of the running gateway and asks of it: the views', the updates' and
 * /metrics' parts, the users it logs in, and a reload of the device map. The composition root
 * (src/server) hands it over; the page knows no server object.
 */
export type WebSource = ViewSource &
  UpdateSource &
  MetricsSource & {
    readonly config: GatewayConfig;
    readonly users: UserDirectory;
    reloadDevices(): Promise<{ readonly ok: boolean; readonly issues: readonly ConfigIssue[]; readonly report?: ApplyReport }>;
  };

export interface WebServerOptions {
  readonly server: WebSource;
  readonly config: WebConfig;
  readonly log: Logger;
  readonly version: string;
  /** The PKI whose own certificate serves HTTPS (the server's, or one opened for the page). */
  readonly pki: Pki | undefined;
}

interface Asset {
  readonly body: Buffer;
  readonly type: string;
}

const ASSETS: Readonly<Record<string, Asset>> = {
  "/": { body: Buffer.from(PAGE_HTML), type: "text/html; charset=utf-8" },
  "/app.js": { body: Buffer.from(APP_JS), type: "text/javascript; charset=utf-8" },
  "/app.css": { body: Buffer.from(APP_CSS), type: "text/css; charset=utf-8" },
};

const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  "content-security-policy": "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "x-frame-options": "DENY",
};

/** Thrown by handlers: becomes a JSON error with this HTTP status. */
class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

export class WebServer {
  readonly updates: LiveUpdates;
  readonly auth: WebAuth;
  private readonly o: WebServerOptions;
  private readonly http: Server;
  private readonly tls: boolean;
  private readonly host: string;
  private readonly views: StatusViews;
  private readonly guard: ConnectionGuard;

  constructor(o: WebServerOptions) {
    this.o = o;
    const c = o.config;
    this.auth = new WebAuth({ users: o.server.users, sessionTimeout: c.sessionTimeout });
    // No users, no login: this box only, whatever the default host would be.
    this.host = c.host ?? (this.auth.loginRequired ? "0.0.0.0" : "127.0.0.1");
    if (!this.auth.loginRequired && !isLoopbackHost(this.host)) this.host = "127.0.0.1";
    this.views = new StatusViews(o.server, { version: o.version, clockState });
    this.updates = new LiveUpdates({ server: o.server, log: o.log, views: this.views, interval: c.updateInterval, maxClients: c.maxClients });
    this.tls = c.tls;
    const handler = (req: IncomingMessage, res: ServerResponse): void => void this.handle(req, res);
    if (c.tls) {
      if (o.pki === undefined) throw new Error("web.tls needs the gateway's certificate (pki/own)");
      const key = o.pki.ownPrivateKey.export({ type: "pkcs8", format: "pem" });
      this.http = createHttpsServer({ cert: derToPem(o.pki.ownCertificate), key, minVersion: "TLSv1.2", connectionsCheckingInterval: TIMEOUT_CHECK_MS }, handler);
    } else {
      this.http = createHttpServer({ connectionsCheckingInterval: TIMEOUT_CHECK_MS }, handler);
    }
    this.http.headersTimeout = c.headersTimeout;
    this.http.requestTimeout = c.requestTimeout;
    // The event streams are long: no timeout on them (they end when the page closes).
    this.http.timeout = 0;
    this.http.keepAliveTimeout = 5_000;
    this.http.maxConnections = c.maxClients + 32;
    this.guard = new ConnectionGuard(c, (m) => o.log.warn(m));
    this.guard.attach(this.http);
  }

  /** Where the page is, e.g. https://127.0.0.1:8443/. */
  get url(): string {
    const a = this.http.address() as AddressInfo | null;
    const host = this.host === "0.0.0.0" || this.host === "::" ? "127.0.0.1" : this.host.includes(":") ? `[${this.host}]` : this.host;
    return `${this.tls ? "https" : "http"}://${host}:${a?.port ?? this.o.config.port}/`;
  }

  get port(): number {
    return (this.http.address() as AddressInfo | null)?.port ?? this.o.config.port;
  }

  get listenHost(): string {
    return this.host;
  }

  listen(): Promise<void> {
    return new Promise((resolve, reject) => {
      const onError = (err: Error): void => reject(err);
      this.http.once("error", onError);
      this.http.listen(this.o.config.port, this.host, () => {
        this.http.off("error", onError);
        this.http.on("error", (err) => this.o.log.warn(`status page: ${err.message}`));
        resolve();
      });
    });
  }

  async close(): Promise<void> {
    this.updates.close();
    this.guard.close();
    await new Promise<void>((resolve) => {
      this.http.close(() => resolve());
      this.http.closeAllConnections();
    });
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    for (const [k, v] of Object.entries(SECURITY_HEADERS)) res.setHeader(k, v);
    if (this.tls) res.setHeader("strict-transport-security", "max-age=31536000");
    try {
      const url = new URL(req.url ?? "/", "http://x");
      const path = url.pathname;
      const method = req.method ?? "GET";
      const address = req.socket.remoteAddress ?? "";
      if (method === "GET" && (path === "/app.css" || path === "/login")) {
        if (path === "/app.css") return this.asset(res, ASSETS[path]!);
        return this.send(res, 200, "text/html; charset=utf-8", loginHtml(url.searchParams.has("failed")));
      }
      if (method === "POST" && path === "/login") return await this.login(req, res, address);
      if (method === "POST" && path === "/logout") {
        this.auth.logout(req.headers.cookie);
        res.setHeader("set-cookie", `${SESSION_COOKIE}=; Path=/; Max-Age=0; HttpOnly; SameSite=Strict${this.tls ? "; Secure" : ""}`);
        return this.redirect(res, "/login");
      }
      const who = await this.auth.identify(req.headers.cookie, req.headers.authorization, address);
      if (who === undefined) {
        // A browser goes to the form; a scraper is told to authenticate.
        if (path === "/metrics" || path.startsWith("/api/")) {
          res.setHeader("www-authenticate", 'Basic realm="fieldgate", charset="UTF-8"');
          throw new HttpError(401, "log in first");
        }
        return this.redirect(res, "/login");
      }
      if (method === "GET") {
        const asset = ASSETS[path];
        if (asset !== undefined) return this.asset(res, asset);
        switch (path) {
          case "/metrics":
            return this.send(res, 200, METRICS_CONTENT_TYPE, renderMetrics(this.o.server, this.o.version, { clients: this.updates.clientCount, stats: this.updates.stats }));
          case "/api/me":
            return this.json(res, 200, { user: who.user, role: who.role, csrf: who.csrf, loginRequired: this.auth.loginRequired });
          case "/api/events":
            if (!this.updates.open(res, url.searchParams.get("device") ?? "")) throw new HttpError(503, "too many pages open (web.maxClients)");
            return;
          case "/api/state":
            return this.json(res, 200, this.snapshot());
          default:
            throw new HttpError(404, "not found");
        }
      }
      if (method === "POST") {
        this.mayAct(req, who);
        switch (path) {
          case "/api/reload":
            return await this.reload(res, who);
          case "/api/certificates/trust":
          case "/api/certificates/reject":
            return await this.certificate(req, res, who, path.endsWith("trust") ? "trust" : "reject");
          default:
            throw new HttpError(404, "not found");
        }
      }
      throw new HttpError(405, "method not allowed");
    } catch (err) {
      if (res.headersSent) {
        res.destroy();
        return;
      }
      const status = err instanceof HttpError ? err.status : 500;
      if (status === 500) this.o.log.warn(`status page: ${req.method} ${req.url}: ${err instanceof Error ? err.message : String(err)}`);
      this.json(res, status, { error: err instanceof HttpError ? err.message : "internal error" });
    }
  }

  /** Admins only, with the session's CSRF token, from a page of this origin. */
  private mayAct(req: IncomingMessage, who: Principal): void {
    if (!roleAtLeast(who.role, "admin")) throw new HttpError(403, "only an admin may do this");
    if (!WebAuth.csrfMatches(who, headerValue(req.headers["x-fieldgate-csrf"]))) throw new HttpError(403, "missing or wrong CSRF token: reload the page");
  }

  private async login(req: IncomingMessage, res: ServerResponse, address: string): Promise<void> {
    const form = new URLSearchParams(await readBody(req));
    const user = form.get("user") ?? "";
    const token = await this.auth.login(user, form.get("password") ?? "", address);
    if (token === undefined) {
      this.o.log.notice(`status page: failed login as "${user.slice(0, 64)}" from ${address}`);
      return this.redirect(res, "/login?failed");
    }
    res.setHeader("set-cookie", `${SESSION_COOKIE}=${token}; Path=/; HttpOnly; SameSite=Strict${this.tls ? "; Secure" : ""}`);
    this.redirect(res, "/");
  }

  private async reload(res: ServerResponse, who: Principal): Promise<void> {
    this.o.log.info(`status page: ${who.user} reloads the device map`);
    const r = await this.o.server.reloadDevices();
    if (!r.ok) {
      const issues = r.issues.map(formatIssue);
      return this.json(res, 422, { error: issues.length > 0 ? `refused, the last good map stays in use:\n${issues.join("\n")}` : "refused: no device map configured", issues });
    }
    const rep = r.report!;
    const { summary, devices } = describeApply(rep);
    this.json(res, 200, { message: `device map reloaded: ${summary}`, devices, report: rep });
  }

  private async certificate(req: IncomingMessage, res: ServerResponse, who: Principal, action: "trust" | "reject"): Promise<void> {
    const pki = this.o.server.pki;
    if (pki === undefined) throw new HttpError(409, "no signing security policy is configured: there are no client certificates to manage");
    const text = await readBody(req);
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      throw new HttpError(400, "expected JSON {\"thumbprint\": \"...\"}");
    }
    const tp = typeof body === "object" && body !== null ? (body as { thumbprint?: unknown }).thumbprint : undefined;
    // Thumbprints only: a file name would let the page copy any readable file into pki/.
    if (typeof tp !== "string" || !/^[0-9A-Fa-f:]{40,59}$/.test(tp)) throw new HttpError(400, "expected a certificate thumbprint (40 hex digits)");
    let info;
    try {
      info = action === "trust" ? pki.trust(tp) : pki.reject(tp);
    } catch (err) {
      throw new HttpError(404, err instanceof Error ? err.message : String(err));
    }
    this.updates.certificatesChanged();
    this.o.log.notice(`status page: ${who.user} ${action === "trust" ? "trusted" : "rejected"} certificate ${info.subject}, thumbprint ${info.thumbprint}`);
    this.json(res, 200, { message: `${action === "trust" ? "trusted" : "moved to rejected"}: ${info.subject} (${info.thumbprint})`, thumbprint: info.thumbprint });
  }

  private snapshot(): unknown {
    const now = Date.now();
    const s = this.views.sessions();
    return {
      t: now,
      gateway: this.views.gateway(now),
      history: this.views.history(now),
      devices: this.views.devices(),
      sessions: s.sessions,
      subscriptions: s.subscriptions,
      certificates: certificatesView(this.o.server.pki),
      log: this.o.log.recent(0),
    };
  }

  private asset(res: ServerResponse, a: Asset): void {
    res.writeHead(200, { "content-type": a.type, "content-length": a.body.length, "cache-control": "no-cache" });
    res.end(a.body);
  }

  private send(res: ServerResponse, status: number, type: string, body: string): void {
    res.writeHead(status, { "content-type": type, "cache-control": "no-store" });
    res.end(body);
  }

  private json(res: ServerResponse, status: number, value: unknown): void {
    this.send(res, status, "application/json; charset=utf-8", JSON.stringify(value));
  }

  private redirect(res: ServerResponse, to: string): void {
    res.writeHead(303, { location: to, "cache-control": "no-store" });
    res.end();
  }
}

function headerValue(h: string | string[] | undefined): string | undefined {
  return Array.isArray(h) ? h[0] : h;
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (c: Buffer): void => {
      size += c.length;
      if (size > MAX_BODY) {
        // Answered at once; the rest is read and dropped, so that the answer reaches the client.
        req.off("data", onData);
        req.resume();
        reject(new HttpError(413, "request too large"));
        return;
      }
      chunks.push(c);
    };
    req.on("data", onData);
    req.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
    req.on("error", reject);
  });
}

/** The clock as the page shows it: timesyncd's word under systemd, else not checked. */
function clockState(): string {
  if (!process.env.NOTIFY_SOCKET) return "not checked (not run by systemd)";
  return clockSynchronized() ? "synchronized (NTP)" : "not synchronized yet";
}

/**
 * Starts the status page of a running gateway (`web.enabled`). Under TLS it serves the gateway's
 * own certificate: the server's PKI, or, when no signing policy opened one, the same folder
 * opened for the page (the certificate is made on first start either way).
 */
export async function startStatusPage(server: WebSource, log: Logger): Promise<WebServer> {
  const config = server.config;
  let pki = server.pki;
  if (config.web.tls && pki === undefined) pki = await Pki.open({ ...pkiOptions(config), log: (m) => (m.startsWith("created ") ? log.info(m) : log.warn(m)) });
  const web = new WebServer({ server, config: config.web, log, version: packageVersion(), pki });
  await web.listen();
  return web;
}
