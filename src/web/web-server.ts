// The status page's HTTP(S) server (DESIGN: src/web): its own port (`web:` in gateway.yaml),
// HTTPS with the gateway's own certificate and key from pki/own unless `tls: false`, logins
// with the users of gateway.yaml. The routes are web-routes.ts's.
//
// What a gateway holds before anyone opens its page is this file: the listener on its port (so
// a port in use is reported at the start), the connection guard and the timeouts. Everything
// that answers a request (the routes, the page and its scripts, the views, the live updates, the
// settings API, /metrics, the logins) is imported on the first request, once: requests that
// come while it loads wait for the same import; an import that fails is logged, answered with
// 500 and tried again by the next request. Loaded, it stays (a module is never unloaded), and
// the requests after it go straight to it.
//
// Bounded: request bodies (16 KiB; a settings file 8 MiB), headers and requests time out (a
// connection's first request from its accept, TLS handshake included), open pages
// (maxClients), connections (maxClients + 32, and maxConnectionsPerAddress from one client
// address: connection-guard.ts).
import { createServer as createHttpServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { createServer as createHttpsServer } from "node:https";
import type { AddressInfo } from "node:net";
import type { WebConfig } from "../config/gateway-config.js";
import { isLoopbackHost } from "../config/gateway-config.js";
import type { Logger } from "../log.js";
import { packageVersion } from "../package-info.js";
import { derToPem } from "../security/certificates.js";
import { Pki } from "../security/pki.js";
import { ConnectionGuard } from "./connection-guard.js";
import type { PageRoutes, WebSource } from "./web-routes.js";

export type { WebSource } from "./web-routes.js";

/** How often Node checks headersTimeout and requestTimeout (its default, 30 s, would let a request run that much over). */
const TIMEOUT_CHECK_MS = 1000;

/** What the first request imports: the routes' module (web-routes.ts), or a stand-in in tests. */
export type RoutesModule = Pick<typeof import("./web-routes.js"), "PageRoutes">;

export interface WebServerOptions {
  readonly server: WebSource;
  readonly config: WebConfig;
  readonly log: Logger;
  readonly version: string;
  /** The PKI whose own certificate serves HTTPS (the server's, or one opened for the page). */
  readonly pki: Pki | undefined;
  /** Imports the routes; by default web-routes.ts (a test makes it slow or failing). */
  readonly loadRoutes?: () => Promise<RoutesModule>;
}

const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  "content-security-policy": "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "x-frame-options": "DENY",
};

const importRoutes = (): Promise<RoutesModule> => import("./web-routes.js");

export class WebServer {
  private readonly o: WebServerOptions;
  private readonly http: Server;
  private readonly tls: boolean;
  private readonly host: string;
  private readonly guard: ConnectionGuard;
  /** The routes once loaded; `loading` while the first request imports them. */
  private routes: PageRoutes | undefined;
  private loading: Promise<PageRoutes> | undefined;
  private closed = false;

  constructor(o: WebServerOptions) {
    this.o = o;
    const c = o.config;
    // No users, no login: this box only, whatever the default host would be.
    this.host = c.host ?? (this.loginRequired ? "0.0.0.0" : "127.0.0.1");
    if (!this.loginRequired && !isLoopbackHost(this.host)) this.host = "127.0.0.1";
    this.tls = c.tls;
    const handler = (req: IncomingMessage, res: ServerResponse): void => this.handle(req, res);
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

  /** Whether logging in is possible at all (some user has a password): without, the page is this box's only. */
  get loginRequired(): boolean {
    return this.o.server.users.acceptsPasswords;
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

  /** Whether the routes have been loaded (by a first request). */
  get loaded(): boolean {
    return this.routes !== undefined;
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

  /** After a reload of the users: cached Basic credentials are checked again (nothing to do before the page was loaded). */
  usersChanged(): void {
    this.routes?.auth.usersChanged();
  }

  async close(): Promise<void> {
    this.closed = true;
    this.routes?.close();
    this.guard.close();
    await new Promise<void>((resolve) => {
      this.http.close(() => resolve());
      this.http.closeAllConnections();
    });
  }

  private handle(req: IncomingMessage, res: ServerResponse): void {
    for (const [k, v] of Object.entries(SECURITY_HEADERS)) res.setHeader(k, v);
    if (this.tls) res.setHeader("strict-transport-security", "max-age=31536000");
    if (this.routes !== undefined) {
      void this.routes.handle(req, res);
      return;
    }
    this.load().then(
      (routes) => void routes.handle(req, res),
      () => {
        if (res.headersSent || res.destroyed) return;
        res.writeHead(500, { "content-type": "application/json; charset=utf-8", "cache-control": "no-store" });
        res.end(JSON.stringify({ error: "the status page could not be loaded (the gateway's log says why); try again" }));
      },
    );
  }

  /** The routes, imported by the first request; every request until then waits for the same import. */
  private load(): Promise<PageRoutes> {
    this.loading ??= this.importRoutes().catch((err: unknown) => {
      // The next request tries again.
      this.loading = undefined;
      this.o.log.warn(`status page: its code could not be loaded, the next request tries again: ${err instanceof Error ? err.message : String(err)}`);
      throw err;
    });
    return this.loading;
  }

  private async importRoutes(): Promise<PageRoutes> {
    const { PageRoutes } = await (this.o.loadRoutes ?? importRoutes)();
    const routes = new PageRoutes({ server: this.o.server, config: this.o.config, log: this.o.log, version: this.o.version, tls: this.tls });
    // Closed while it loaded: close() found no live updates to end, these must not start.
    if (this.closed) routes.close();
    this.routes = routes;
    return routes;
  }
}

/**
 * Starts the status page of a running gateway (`web.enabled`): its listener only, the routes come
 * with the first request. Under TLS it serves the gateway's own certificate: the server's PKI,
 * or, when no signing policy opened one, the same folder opened for the page (the certificate is
 * made on first start either way).
 */
export async function startStatusPage(server: WebSource, log: Logger, o: Pick<WebServerOptions, "loadRoutes"> = {}): Promise<WebServer> {
  const config = server.config;
  let pki = server.pki;
  if (config.web.tls && pki === undefined) {
    // Only here: the server's own PKI is opened by its signing policies otherwise.
    const { pkiOptions } = await import("../security/cert-cli.js");
    pki = await Pki.open({ ...pkiOptions(config), log: (m) => (m.startsWith("created ") ? log.info(m) : log.warn(m)) });
  }
  const web = new WebServer({ server, config: config.web, log, version: packageVersion(), pki, ...o });
  await web.listen();
  return web;
}
