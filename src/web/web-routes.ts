// The status page's routes (DESIGN: src/web), loaded by web-server.ts on the page's first request:
// an idle gateway whose page nobody opens holds none of this code, its scripts or their bytes.
// Who asks (auth.ts), what the page shows (status-view.ts, page-render.ts), its live updates
// (updates.ts), the settings files (config-api.ts) and /metrics (metrics.ts):
//
//   GET  /?device=NAME            the page, rendered with the gateway's state (page-render.ts)
//   GET  /app.js, /app.css, /editor.js, /trend.js   its script and style sheet, the settings
//                                 editor's and the trend chart's scripts (loaded when first used)
//   GET  /login, POST /login      the login form; POST /logout
//   GET  /api/me                  who is logged in, their role and CSRF token
//   GET  /api/events?device=NAME  server-sent events (updates.ts)
//   GET  /api/state               one snapshot as JSON (for scripts)
//   GET  /api/trend?device=D&tag=T&from=MS&to=MS   a tag's history as points (the trend chart)
//   POST /api/reload              admin: reload the device map (as SIGHUP does)
//   POST /api/certificates/trust|reject  {thumbprint}  admin: move a certificate in pki/
//   .../api/config/...            the settings files (config-api.ts)
//   GET  /metrics                 Prometheus text format (metrics.ts); cookie or HTTP Basic
//
// Who may act (every POST but the login's): an admin, with the session's CSRF token when logged
// in through the page; with HTTP Basic credentials (scripts), from no page of another site
// (the browser's Sec-Fetch-Site, Fetch Metadata: a cross-site form cannot carry a token, but a
// browser may replay cached Basic credentials with it).
import type { IncomingMessage, ServerResponse } from "node:http";
import type { GatewayConfig, WebConfig } from "../config/gateway-config.js";
import { formatIssue, type ConfigIssue } from "../config/load.js";
import type { TrendPoints } from "../history/trend.js";
import type { ApplyReport } from "../devices/device-runtime.js";
import type { Logger } from "../log.js";
import { describeApply } from "../devices/map-changes.js";
import { clockSynchronized } from "../sampling/clock.js";
import type { UserDirectory } from "../sessions/users.js";
import { roleAtLeast, SESSION_COOKIE, WebAuth, type Principal } from "./auth.js";
import { METRICS_CONTENT_TYPE, renderMetrics, type MetricsSource } from "./metrics.js";
import { APP_CSS } from "./page-style.js";
import { APP_JS } from "./page-script.js";
import { EDITOR_JS } from "./page-editor.js";
import { TREND_JS } from "./page-trend.js";
import { gatewayTzOffset, type IndexedTagRow } from "./page-format.js";
import { loginHtml, pageHtml, type PageState } from "./page-render.js";
import { certificatesView, StatusViews, TagBaseline, type ViewSource } from "./status-view.js";
import { LiveUpdates, type UpdateSource } from "./updates.js";
import { settingsRoute, type SettingsSource } from "./config-api.js";
import { headerValue, HttpError, json, readBody, send } from "./http.js";

const MAX_BODY = 16 * 1024;
/** Tag rows in the first paint: the updates bring the rest of a big device at once. */
const FIRST_PAINT_TAGS = 200;

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
    /** The settings files (the editor and the settings API). */
    readonly settings: SettingsSource;
    /** Tag `tag` of device `device` from the history (a tag that keeps none has no points). */
    trend(device: string, tag: string, from: number, to: number): Promise<TrendPoints>;
  };

export interface PageRoutesOptions {
  readonly server: WebSource;
  readonly config: WebConfig;
  readonly log: Logger;
  readonly version: string;
  /** Served over HTTPS (the cookie's Secure attribute). */
  readonly tls: boolean;
}

interface Asset {
  readonly body: Buffer;
  readonly type: string;
}

const ASSETS: Readonly<Record<string, Asset>> = {
  "/app.js": { body: Buffer.from(APP_JS), type: "text/javascript; charset=utf-8" },
  "/app.css": { body: Buffer.from(APP_CSS), type: "text/css; charset=utf-8" },
  "/editor.js": { body: Buffer.from(EDITOR_JS), type: "text/javascript; charset=utf-8" },
  "/trend.js": { body: Buffer.from(TREND_JS), type: "text/javascript; charset=utf-8" },
};

/** Every request of the page once its listener (web-server.ts) has it; one per status page. */
export class PageRoutes {
  readonly updates: LiveUpdates;
  readonly auth: WebAuth;
  private readonly o: PageRoutesOptions;
  private readonly tls: boolean;
  private readonly views: StatusViews;

  constructor(o: PageRoutesOptions) {
    this.o = o;
    this.tls = o.tls;
    this.auth = new WebAuth({ users: o.server.users, sessionTimeout: o.config.sessionTimeout });
    this.views = new StatusViews(o.server, { version: o.version, clockState });
    this.updates = new LiveUpdates({ server: o.server, log: o.log, views: this.views, interval: o.config.updateInterval, maxClients: o.config.maxClients });
  }

  close(): void {
    this.updates.close();
  }

  /** Answers `req` (the listener has set the security headers); never throws. */
  async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    try {
      const url = new URL(req.url ?? "/", "http://x");
      const path = url.pathname;
      const method = req.method ?? "GET";
      const address = req.socket.remoteAddress ?? "";
      // No icon: answered before the login, so a browser's request for one is not sent to the form.
      if (method === "GET" && path === "/favicon.ico") {
        res.writeHead(204, { "cache-control": "max-age=86400" });
        res.end();
        return;
      }
      if (method === "GET" && (path === "/app.css" || path === "/login")) {
        if (path === "/app.css") return this.asset(res, ASSETS[path]!);
        return send(res, 200, "text/html; charset=utf-8", loginHtml(url.searchParams.has("failed")));
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
      if (method === "POST") this.mayAct(req, who);
      if (await settingsRoute(req, res, { path, method, query: url.searchParams, who, source: this.o.server.settings, log: this.o.log, onUsersChanged: () => this.auth.usersChanged() })) return;
      if (method === "GET") {
        const asset = ASSETS[path];
        if (asset !== undefined) return this.asset(res, asset);
        switch (path) {
          case "/":
            return send(res, 200, "text/html; charset=utf-8", pageHtml(this.pageState(url.searchParams.get("device") ?? ""), { ...who, loginRequired: this.auth.loginRequired }));
          case "/metrics":
            return send(res, 200, METRICS_CONTENT_TYPE, renderMetrics(this.o.server, this.o.version, { clients: this.updates.clientCount, stats: this.updates.stats }));
          case "/api/me":
            return json(res, 200, { user: who.user, role: who.role, csrf: who.csrf, loginRequired: this.auth.loginRequired });
          case "/api/events":
            if (!this.updates.open(res, url.searchParams.get("device") ?? "")) throw new HttpError(503, "too many pages open (web.maxClients)");
            return;
          case "/api/state":
            return json(res, 200, this.snapshot());
          case "/api/trend":
            return await this.trend(res, url.searchParams);
          default:
            throw new HttpError(404, "not found");
        }
      }
      if (method === "POST") {
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
      json(res, status, { error: err instanceof HttpError ? err.message : "internal error", ...(err instanceof HttpError ? err.extra : undefined) });
    }
  }

  /**
   * Admins only: logged in through the page, with the session's CSRF token; with Basic
   * credentials (a script), from no page of another site (Fetch Metadata's Sec-Fetch-Site,
   * which browsers send and scripts do not).
   */
  private mayAct(req: IncomingMessage, who: Principal): void {
    if (!roleAtLeast(who.role, "admin")) throw new HttpError(403, "only an admin may do this");
    if (who.basic) {
      const site = headerValue(req.headers["sec-fetch-site"]);
      if (site !== undefined && site !== "same-origin" && site !== "none") throw new HttpError(403, "a page of another site may not act with these credentials");
      return;
    }
    if (!WebAuth.csrfMatches(who, headerValue(req.headers["x-fieldgate-csrf"]))) throw new HttpError(403, "missing or wrong CSRF token: reload the page");
  }

  private async login(req: IncomingMessage, res: ServerResponse, address: string): Promise<void> {
    const form = new URLSearchParams(await readBody(req, MAX_BODY));
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
      return json(res, 422, { error: issues.length > 0 ? `refused, the last good map stays in use:\n${issues.join("\n")}` : "refused: no device map configured", issues });
    }
    const rep = r.report!;
    const { summary, devices } = describeApply(rep);
    json(res, 200, { message: `device map reloaded: ${summary}`, devices, report: rep });
  }

  private async certificate(req: IncomingMessage, res: ServerResponse, who: Principal, action: "trust" | "reject"): Promise<void> {
    const pki = this.o.server.pki;
    if (pki === undefined) throw new HttpError(409, "no signing security policy is configured: there are no client certificates to manage");
    const text = await readBody(req, MAX_BODY);
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
    json(res, 200, { message: `${action === "trust" ? "trusted" : "moved to rejected"}: ${info.subject} (${info.thumbprint})`, thumbprint: info.thumbprint });
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

  /**
   * What the first paint shows: the snapshot, and the tags of the device asked for (or the
   * first), at most FIRST_PAINT_TAGS of them.
   */
  private pageState(device: string): PageState {
    const now = Date.now();
    const s = this.views.sessions();
    const devices = this.views.devices();
    const watched = devices.some((d) => d.name === device) ? device : (devices[0]?.name ?? "");
    const poller = watched === "" ? undefined : this.o.server.deviceRuntime.poller(watched);
    const tags: IndexedTagRow[] = poller === undefined ? [] : new TagBaseline(watched).changed(poller, this.o.server.values, true, 0, FIRST_PAINT_TAGS);
    return {
      t: now,
      tzOffset: gatewayTzOffset(),
      gateway: this.views.gateway(now),
      history: this.views.history(now),
      devices,
      watched,
      tags,
      sessions: s.sessions,
      subscriptions: s.subscriptions,
      certificates: certificatesView(this.o.server.pki),
      log: this.o.log.recent(0),
      settingsImport: this.o.server.settings.settingsImport(),
      networkTrial: this.o.server.settings.unavailable("network") === undefined ? this.o.server.settings.networkStatus().pending : undefined,
    };
  }

  /** GET /api/trend: a tag's history between `from` and `to` (ms; default the last hour). */
  private async trend(res: ServerResponse, q: URLSearchParams): Promise<void> {
    const device = q.get("device") ?? "";
    const tag = q.get("tag") ?? "";
    const now = Date.now();
    const to = q.has("to") ? Number(q.get("to")) : now;
    const from = q.has("from") ? Number(q.get("from")) : to - 3_600_000;
    if (!Number.isFinite(from) || !Number.isFinite(to) || from >= to) throw new HttpError(400, "expected from < to, in ms since 1970");
    const config = this.o.server.deviceMap?.devices.find((d) => d.name === device)?.tags.find((t) => t.name === tag);
    if (config === undefined) throw new HttpError(404, `no tag "${tag}" of device "${device}" in the map in use`);
    if (!config.history) throw new HttpError(409, `${device}.${tag} keeps no history (history: true in the device map keeps it)`);
    try {
      json(res, 200, { device, tag, from, to, ...(await this.o.server.trend(device, tag, from, to)) });
    } catch (err) {
      throw new HttpError(503, err instanceof Error ? err.message : String(err));
    }
  }

  private asset(res: ServerResponse, a: Asset): void {
    res.writeHead(200, { "content-type": a.type, "content-length": a.body.length, "cache-control": "no-cache" });
    res.end(a.body);
  }

  private redirect(res: ServerResponse, to: string): void {
    res.writeHead(303, { location: to, "cache-control": "no-store" });
    res.end();
  }
}

/** The clock as the page shows it: timesyncd's word under systemd, else not checked. */
function clockState(): string {
  if (!process.env.NOTIFY_SOCKET) return "not checked (not run by systemd)";
  return clockSynchronized() ? "synchronized (NTP)" : "not synchronized yet";
}
