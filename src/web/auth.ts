// Who is asking: logins of the status page with the users of gateway.yaml (the OPC UA server's
// UserDirectory, so its scrypt work, lockout per user name and per address, and reloads on SIGHUP
// apply here too), a session cookie, and HTTP Basic credentials for scrapers of /metrics.
//
// Decisions where the issue is silent:
// - No users configured: there is no login and the page serves 127.0.0.1 only (the config
//   check refuses another host), everyone there is a viewer: nobody acts from the page until an
//   admin user exists. No default password, ever.
// - The cookie is HttpOnly, SameSite=Strict, Secure under TLS; a state-changing request must
//   also carry the session's CSRF token in a header, which a form of another site cannot send.
// - A session ends after `sessionTimeout` unused, when its user is removed or their password
//   changes (a reload); a changed role applies to the next request.
// - Basic credentials that verified are remembered (by a hash of the header) for a minute, so
//   that a scraper every 15 s does not cost a scrypt each time; a reload forgets them.
import { createHash, randomBytes, timingSafeEqual } from "node:crypto";
import { ROLES, type Role } from "../sessions/roles.js";
import { LoginResult, type PasswordHash, type UserDirectory } from "../sessions/users.js";

export interface Principal {
  /** "" without users (the local viewer). */
  readonly user: string;
  readonly role: Role;
  /** The session's CSRF token; "" for Basic credentials and the local viewer (they cannot act). */
  readonly csrf: string;
}

interface WebSession {
  readonly user: string;
  /** The hash the login checked: another one (a changed password) ends the session. */
  readonly hash: PasswordHash | undefined;
  readonly csrf: string;
  lastUsed: number;
}

const BASIC_CACHE_MS = 60_000;
const MAX_SESSIONS = 256;
const LOCAL_VIEWER: Principal = Object.freeze({ user: "", role: "viewer", csrf: "" });

export const SESSION_COOKIE = "fieldgate_session";

export interface WebAuthOptions {
  readonly users: UserDirectory;
  readonly sessionTimeout: number;
  readonly now?: () => number;
}

export class WebAuth {
  private readonly users: UserDirectory;
  private readonly timeout: number;
  private readonly now: () => number;
  private readonly sessions = new Map<string, WebSession>();
  private readonly basic = new Map<string, { user: string; hash: PasswordHash | undefined; until: number }>();

  constructor(o: WebAuthOptions) {
    this.users = o.users;
    this.timeout = o.sessionTimeout;
    this.now = o.now ?? Date.now;
  }

  /** Whether logging in is possible at all (some user has a password). */
  get loginRequired(): boolean {
    return this.users.acceptsPasswords;
  }

  /** The principal of a request: its session cookie or Basic credentials; undefined = not logged in. */
  async identify(cookieHeader: string | undefined, authorization: string | undefined, address: string): Promise<Principal | undefined> {
    if (!this.loginRequired) return LOCAL_VIEWER;
    const token = cookieValue(cookieHeader, SESSION_COOKIE);
    if (token !== undefined) {
      const p = this.fromSession(token);
      if (p !== undefined) return p;
    }
    if (authorization !== undefined && authorization.startsWith("Basic ")) return this.fromBasic(authorization, address);
    return undefined;
  }

  /** Checks a password; returns a new session token, or undefined (wrong, unknown or locked: the same). */
  async login(user: string, password: string, address: string): Promise<string | undefined> {
    const r = await this.users.checkPassword(user, Buffer.from(password, "utf8"), address);
    if (r.result !== LoginResult.Ok) return undefined;
    this.expire();
    if (this.sessions.size >= MAX_SESSIONS) this.sessions.delete(this.sessions.keys().next().value!);
    const token = randomBytes(32).toString("base64url");
    this.sessions.set(token, { user, hash: this.users.get(user)?.password, csrf: randomBytes(18).toString("base64url"), lastUsed: this.now() });
    return token;
  }

  logout(cookieHeader: string | undefined): void {
    const token = cookieValue(cookieHeader, SESSION_COOKIE);
    if (token !== undefined) this.sessions.delete(token);
  }

  /** After a reload of the users: cached Basic credentials are checked again. */
  usersChanged(): void {
    this.basic.clear();
  }

  /** Whether `given` is the principal's CSRF token (constant time). */
  static csrfMatches(p: Principal, given: string | undefined): boolean {
    if (p.csrf === "" || given === undefined) return false;
    const a = Buffer.from(p.csrf);
    const b = Buffer.from(given);
    return a.length === b.length && timingSafeEqual(a, b);
  }

  private fromSession(token: string): Principal | undefined {
    const s = this.sessions.get(token);
    if (s === undefined) return undefined;
    const now = this.now();
    const entry = this.users.get(s.user);
    if (now - s.lastUsed > this.timeout || entry === undefined || entry.password !== s.hash) {
      this.sessions.delete(token);
      return undefined;
    }
    s.lastUsed = now;
    return { user: s.user, role: entry.role, csrf: s.csrf };
  }

  private async fromBasic(header: string, address: string): Promise<Principal | undefined> {
    const key = createHash("sha256").update(header).digest("base64");
    const now = this.now();
    const cached = this.basic.get(key);
    if (cached !== undefined && now < cached.until) {
      const entry = this.users.get(cached.user);
      if (entry !== undefined && entry.password === cached.hash) return { user: cached.user, role: entry.role, csrf: "" };
    }
    const text = Buffer.from(header.slice(6).trim(), "base64").toString("utf8");
    const colon = text.indexOf(":");
    if (colon < 0) return undefined;
    const user = text.slice(0, colon);
    const r = await this.users.checkPassword(user, Buffer.from(text.slice(colon + 1), "utf8"), address);
    if (r.result !== LoginResult.Ok) return undefined;
    if (this.basic.size >= MAX_SESSIONS) this.basic.clear();
    this.basic.set(key, { user, hash: this.users.get(user)?.password, until: now + BASIC_CACHE_MS });
    return { user, role: r.role!, csrf: "" };
  }

  private expire(): void {
    const now = this.now();
    for (const [t, s] of this.sessions) if (now - s.lastUsed > this.timeout) this.sessions.delete(t);
  }
}

/** The value of cookie `name` in a Cookie header. */
export function cookieValue(header: string | undefined, name: string): string | undefined {
  if (header === undefined) return undefined;
  for (const part of header.split(";")) {
    const eq = part.indexOf("=");
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}

/** viewer < operator < admin. */
export function roleAtLeast(role: Role, needed: Role): boolean {
  return ROLES.indexOf(role) >= ROLES.indexOf(needed);
}
