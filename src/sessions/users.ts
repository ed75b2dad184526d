// Users (issue 6): the user table from gateway.yaml, password hashes, and the lockout of repeated
// failed logins. Passwords are hashed with Node's own crypto.scrypt: memory-hard, no native
// addon to build for the ARM image, and the parameters travel in the hash so they can be raised
// later without invalidating the hashes already pasted into configs.
import { createHash, randomBytes, scrypt, timingSafeEqual, type ScryptOptions } from "node:crypto";
import { systemClock, type Clock } from "../sampling/clock.js";
import type { Role } from "./roles.js";
import { parsePasswordHash, scryptMemory, type PasswordHash, type ScryptParams } from "../config/credentials.js";

export { normaliseThumbprint, parsePasswordHash, type PasswordHash, type ScryptParams } from "../config/credentials.js";

// ---------------------------------------------------------------------------------------------
// Password hashes: `$scrypt$ln=14,r=8,p=1$<salt>$<key>` (PHC string format, base64 without '=').

/**
 * N = 2^14, r = 8, p = 1: the scrypt paper's interactive-login parameters and Node's default;
 * 16 MiB and some tens of ms per check on x86, a few hundred ms on a Cortex-A53 — tolerable at
 * login, and it bounds an offline guesser who got hold of gateway.yaml.
 */
export const DEFAULT_SCRYPT_PARAMS: ScryptParams = Object.freeze({ logN: 14, r: 8, p: 1 });
const SALT_BYTES = 16;
const KEY_BYTES = 32;
function derive(password: Buffer | string, salt: Buffer, params: ScryptParams, keyLength: number): Promise<Buffer> {
  const options: ScryptOptions = { N: 2 ** params.logN, r: params.r, p: params.p, maxmem: scryptMemory(params) + 1024 * 1024 };
  return new Promise((resolve, reject) => {
    scrypt(password, salt, keyLength, options, (err, key) => (err ? reject(err) : resolve(key)));
  });
}

const b64 = (b: Buffer): string => b.toString("base64").replace(/=+$/, "");

/** A new hash of `password` (UTF-8) with a random salt, as `fieldgate password` prints it. */
export async function hashPassword(password: string | Buffer, params: ScryptParams = DEFAULT_SCRYPT_PARAMS): Promise<string> {
  const salt = randomBytes(SALT_BYTES);
  const key = await derive(password, salt, params, KEY_BYTES);
  return `$scrypt$ln=${params.logN},r=${params.r},p=${params.p}$${b64(salt)}$${b64(key)}`;
}

export async function verifyPassword(password: Buffer | string, hash: PasswordHash): Promise<boolean> {
  const key = await derive(password, hash.salt, hash.params, hash.key.length);
  return timingSafeEqual(key, hash.key);
}

/** SHA-1 of a DER certificate as lower-case hex (the thumbprint of Part 6 §6.7.2.3), how users name X509 users. */
export function certificateThumbprint(der: Buffer): string {
  return createHash("sha1").update(der).digest("hex");
}

// ---------------------------------------------------------------------------------------------
// The user table and lockout.

export interface UserEntry {
  readonly role: Role;
  /** Hash for UserName tokens; absent: this user cannot log in with a password. */
  readonly password?: PasswordHash;
  /** SHA-1 thumbprints of certificates that log in as this user (X509 tokens). */
  readonly thumbprints?: readonly string[];
}

export interface LockoutOptions {
  /** Failed logins of one user name after which it is locked. */
  readonly maxFailuresPerUser: number;
  /** Failed logins from one remote address (any user names) after which it is locked. */
  readonly maxFailuresPerAddress: number;
  /** How long failures are remembered, and how long a lock lasts after the failure that set it, ms. */
  readonly duration: number;
}

/** A user as gateway.yaml gives it (the hash as text, thumbprints normalised by the schema). */
export interface UserConfig {
  readonly role: Role;
  readonly password?: string | undefined;
  readonly certificates?: readonly string[] | undefined;
}

/** The user table from the `users:` section; hashes were checked when the config was loaded. */
export function userEntries(users: Readonly<Record<string, UserConfig>>): Record<string, UserEntry> {
  const out: Record<string, UserEntry> = {};
  for (const [name, u] of Object.entries(users)) {
    const hash = u.password === undefined ? undefined : parsePasswordHash(u.password);
    if (typeof hash === "string") throw new TypeError(`users.${name}.password: expected ${hash}`);
    out[name] = { role: u.role, ...(hash ? { password: hash } : {}), ...(u.certificates ? { thumbprints: u.certificates } : {}) };
  }
  return out;
}

export const DEFAULT_LOCKOUT: LockoutOptions = Object.freeze({ maxFailuresPerUser: 5, maxFailuresPerAddress: 20, duration: 300_000 });

export interface UserDirectoryOptions {
  readonly lockout?: LockoutOptions;
  /** Monotonic time for the lockout windows; tests pass a FakeClock. */
  readonly clock?: Pick<Clock, "now">;
  /** Password checks running at once (each takes 128·N·r bytes and a libuv thread). */
  readonly maxConcurrentChecks?: number;
  /** Password checks waiting for a slot; more are refused at once. */
  readonly maxQueuedChecks?: number;
  /** Lockout records kept; beyond, expired ones are dropped, then the oldest. */
  readonly maxTrackedKeys?: number;
}

interface Failures {
  count: number;
  /** Clock time when the count is forgotten (and a lock ends). */
  resetAt: number;
}

export const enum LoginResult {
  Ok = 0,
  /** Wrong password, unknown user, or locked out: the caller answers all three the same way. */
  Denied = 1,
}

export class UserDirectory {
  private users: ReadonlyMap<string, UserEntry> = new Map();
  private readonly byThumbprint = new Map<string, string>();
  private readonly lockout: LockoutOptions;
  private clock: Pick<Clock, "now">;
  private readonly failures = new Map<string, Failures>();
  private readonly maxConcurrent: number;
  private readonly maxQueued: number;
  private readonly maxTracked: number;
  private running = 0;
  private readonly waiting: (() => void)[] = [];
  /** Checked for unknown user names, so that they cost as much as known ones (the table's own parameters). */
  private dummy: PasswordHash = { params: DEFAULT_SCRYPT_PARAMS, salt: Buffer.alloc(0), key: Buffer.alloc(0) };

  constructor(users: Readonly<Record<string, UserEntry>>, options: UserDirectoryOptions = {}) {
    this.replace(users);
    this.lockout = options.lockout ?? DEFAULT_LOCKOUT;
    this.clock = options.clock ?? systemClock;
    this.maxConcurrent = options.maxConcurrentChecks ?? 2;
    this.maxQueued = options.maxQueuedChecks ?? 32;
    this.maxTracked = options.maxTrackedKeys ?? 10_000;
  }

  /**
   * Takes a new user table (a reload of gateway.yaml). Lockout records stay: editing the file
   * must not clear the count of someone guessing passwords.
   */
  replace(users: Readonly<Record<string, UserEntry>>): void {
    this.users = new Map(Object.entries(users));
    this.byThumbprint.clear();
    for (const [name, user] of this.users) {
      for (const t of user.thumbprints ?? []) this.byThumbprint.set(t, name);
    }
    let params = DEFAULT_SCRYPT_PARAMS;
    for (const u of this.users.values()) if (u.password) params = u.password.params;
    this.dummy = { params, salt: randomBytes(SALT_BYTES), key: randomBytes(KEY_BYTES) };
  }

  /** One user of the table, by name. */
  get(userName: string): UserEntry | undefined {
    return this.users.get(userName);
  }

  /** The user names of the table. */
  names(): IterableIterator<string> {
    return this.users.keys();
  }

  /** Swaps the clock of the lockout windows (a plug point: tests of a running server pass a FakeClock). */
  setClock(clock: Pick<Clock, "now">): void {
    this.clock = clock;
  }

  /** Some user has a password: endpoints offer the UserName token policy. */
  get acceptsPasswords(): boolean {
    for (const u of this.users.values()) if (u.password) return true;
    return false;
  }

  /** Some user has a certificate: endpoints offer the X509 token policy. */
  get acceptsCertificates(): boolean {
    return this.byThumbprint.size > 0;
  }

  /**
   * Checks a user name and password from `address` (the client's IP address). Every call costs
   * one scrypt of the same parameters whether the user exists, the password is right, or the
   * user or address is locked out, so neither the user table nor a lock shows in the timing.
   * `password` undefined (a token that did not decrypt) is a failure that costs the same.
   */
  async checkPassword(userName: string, password: Buffer | undefined, address: string): Promise<{ result: LoginResult; role?: Role }> {
    const user = this.users.get(userName);
    const hash = user?.password ?? this.dummy;
    const userKey = user?.password ? `u:${userName}` : undefined;
    const addressKey = `a:${address}`;
    const now = this.clock.now();
    // Decided before the check: a lock set by a parallel attempt does not change this one.
    const locked = this.isLocked(addressKey, this.lockout.maxFailuresPerAddress, now) || (userKey !== undefined && this.isLocked(userKey, this.lockout.maxFailuresPerUser, now));
    if (!(await this.acquire())) return { result: LoginResult.Denied };
    let ok: boolean;
    try {
      ok = await verifyPassword(password ?? this.dummy.salt, hash);
    } finally {
      this.release();
    }
    ok = ok && password !== undefined && user?.password !== undefined;
    if (locked) return { result: LoginResult.Denied };
    const after = this.clock.now();
    if (!ok) {
      this.fail(addressKey, this.lockout.maxFailuresPerAddress, after);
      if (userKey !== undefined) this.fail(userKey, this.lockout.maxFailuresPerUser, after);
      return { result: LoginResult.Denied };
    }
    // The address keeps its count: one good account must not clear guesses at others from there.
    if (userKey !== undefined) this.failures.delete(userKey);
    return { result: LoginResult.Ok, role: user!.role };
  }

  /** The role of the user a (validated) certificate belongs to, or undefined. */
  certificateRole(thumbprint: string): Role | undefined {
    const name = this.byThumbprint.get(thumbprint);
    return name === undefined ? undefined : this.users.get(name)!.role;
  }

  /** The user name a certificate belongs to, for logs. */
  certificateUser(thumbprint: string): string | undefined {
    return this.byThumbprint.get(thumbprint);
  }

  /** Whether logins of `userName` (when given) or from `address` are locked now; for tests and diagnostics. */
  isLockedOut(userName: string | undefined, address: string | undefined): boolean {
    const now = this.clock.now();
    if (address !== undefined && this.isLocked(`a:${address}`, this.lockout.maxFailuresPerAddress, now)) return true;
    return userName !== undefined && this.isLocked(`u:${userName}`, this.lockout.maxFailuresPerUser, now);
  }

  private isLocked(key: string, max: number, now: number): boolean {
    const f = this.failures.get(key);
    return f !== undefined && f.count >= max && now < f.resetAt;
  }

  private fail(key: string, max: number, now: number): void {
    let f = this.failures.get(key);
    if (f === undefined || now >= f.resetAt) {
      if (f !== undefined) this.failures.delete(key);
      if (this.failures.size >= this.maxTracked) this.prune(now);
      f = { count: 0, resetAt: now + this.lockout.duration };
      this.failures.set(key, f);
    }
    f.count++;
    // The lock lasts the full duration from the failure that set it.
    if (f.count === max) f.resetAt = now + this.lockout.duration;
  }

  private prune(now: number): void {
    for (const [k, f] of this.failures) if (now >= f.resetAt) this.failures.delete(k);
    // Still full: forget the oldest records (insertion order) rather than grow without bound.
    for (const k of this.failures.keys()) {
      if (this.failures.size < this.maxTracked) break;
      this.failures.delete(k);
    }
  }

  private acquire(): Promise<boolean> | boolean {
    if (this.running < this.maxConcurrent) {
      this.running++;
      return true;
    }
    if (this.waiting.length >= this.maxQueued) return false;
    return new Promise<boolean>((resolve) => this.waiting.push(() => resolve(true)));
  }

  private release(): void {
    const next = this.waiting.shift();
    // The slot passes straight to the next waiter.
    if (next) next();
    else this.running--;
  }
}
