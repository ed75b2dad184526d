// What a SIGHUP does with gateway.yaml (the device map is reloaded by the device runtime): the
// user table is swapped in place, and the sessions of users who lost their access end at once,
// because an operator removes a user or changes a password precisely to shut someone out.
// Every other section is read by the server's constructor only; a change there is reported so
// that the operator knows a restart is needed, and is not half-applied.
import type { GatewayConfig } from "../config/gateway-config.js";
import type { SessionManager } from "../sessions/session.js";
import { userEntries, type PasswordHash, type UserDirectory, type UserEntry } from "../sessions/users.js";

export interface UserReloadReport {
  readonly added: readonly string[];
  readonly removed: readonly string[];
  /** Users whose role, password or certificates changed. */
  readonly changed: readonly string[];
  /** Sessions closed: their user was removed, its password changed, or its certificate was taken away. */
  readonly sessionsClosed: number;
  /** Sessions kept whose role was changed in place. */
  readonly sessionsRerolled: number;
}

function sameHash(a: PasswordHash | undefined, b: PasswordHash | undefined): boolean {
  if (a === undefined || b === undefined) return a === b;
  return a.salt.equals(b.salt) && a.key.equals(b.key) && a.params.logN === b.params.logN && a.params.r === b.params.r && a.params.p === b.params.p;
}

function sameEntry(a: UserEntry, b: UserEntry): boolean {
  const ta = a.thumbprints ?? [];
  const tb = b.thumbprints ?? [];
  return a.role === b.role && sameHash(a.password, b.password) && ta.length === tb.length && ta.every((t) => tb.includes(t));
}

/**
 * Swaps the user table of `directory` for `users` and brings the open sessions in line: a
 * session of a user name ends when the user is gone or its password changed, a session of a
 * certificate ends when no user has that certificate any more; the others take their user's
 * new role for the next request (a lowered role must not wait for the client to reconnect).
 */
export function reloadUsers(directory: UserDirectory, sessions: SessionManager, users: GatewayConfig["users"]): UserReloadReport {
  const next = userEntries(users);
  const old = new Map<string, UserEntry>();
  for (const name of directory.names()) old.set(name, directory.get(name)!);
  const added = Object.keys(next).filter((n) => !old.has(n));
  const removed = [...old.keys()].filter((n) => next[n] === undefined);
  const changed = [...old.keys()].filter((n) => next[n] !== undefined && !sameEntry(old.get(n)!, next[n]));
  directory.replace(next);

  let sessionsClosed = 0;
  let sessionsRerolled = 0;
  const toClose = [];
  for (const session of sessions.sessions()) {
    let role: UserEntry["role"] | undefined;
    if (session.userId.startsWith("user:")) {
      const name = session.userId.slice(5);
      const was = old.get(name);
      const now = next[name];
      role = now !== undefined && now.password !== undefined && sameHash(was?.password, now.password) ? now.role : undefined;
    } else if (session.userId.startsWith("cert:")) {
      role = directory.certificateRole(session.userId.slice(5));
    } else {
      continue; // anonymous: the anonymous role is part of `security`, not of the user table
    }
    if (role === undefined) toClose.push(session);
    else if (role !== session.role) {
      session.role = role;
      sessionsRerolled++;
    }
  }
  for (const session of toClose) {
    sessions.close(session, "revoked");
    sessionsClosed++;
  }
  return { added, removed, changed, sessionsClosed, sessionsRerolled };
}

/** The sections whose change needs a restart: everything but `users`, `northbound` (and the device map's content). */
export function changesNeedingRestart(running: GatewayConfig, next: GatewayConfig): string[] {
  const out: string[] = [];
  const keys = new Set([...Object.keys(running), ...Object.keys(next)] as (keyof GatewayConfig)[]);
  for (const key of keys) {
    if (key === "users" || key === "northbound") continue;
    if (JSON.stringify(running[key]) !== JSON.stringify(next[key])) out.push(key);
  }
  return out;
}
