// Password hashes and the lockout of UserDirectory, at the unit level with a FakeClock.
import { describe, expect, it } from "vitest";
import { FakeClock } from "../../src/sampling/clock.js";
import {
  certificateThumbprint,
  DEFAULT_SCRYPT_PARAMS,
  hashPassword,
  LoginResult,
  normaliseThumbprint,
  parsePasswordHash,
  UserDirectory,
  userEntries,
  verifyPassword,
  type PasswordHash,
} from "../../src/sessions/users.js";
import { hasPermission, Permission } from "../../src/sessions/roles.js";

// Cheap parameters for the tests' own users; the directory's dummy hash keeps the default cost.
const CHEAP = { logN: 10, r: 8, p: 1 };

function parsed(text: string): PasswordHash {
  const h = parsePasswordHash(text);
  if (typeof h === "string") throw new Error(h);
  return h;
}

describe("password hashes", () => {
  it("hashes with the default parameters in PHC form, salted, and verifies", async () => {
    const a = await hashPassword("correct horse");
    const b = await hashPassword("correct horse");
    expect(a).toMatch(/^\$scrypt\$ln=14,r=8,p=1\$[A-Za-z0-9+/]+\$[A-Za-z0-9+/]+$/);
    expect(a).not.toBe(b);
    expect(parsed(a).params).toEqual(DEFAULT_SCRYPT_PARAMS);
    expect(await verifyPassword("correct horse", parsed(a))).toBe(true);
    expect(await verifyPassword("correct horsf", parsed(a))).toBe(false);
    expect(await verifyPassword(Buffer.from("correct horse"), parsed(b))).toBe(true);
  });

  it("keeps the parameters in the hash", async () => {
    const h = await hashPassword("pw", CHEAP);
    expect(parsed(h).params).toEqual(CHEAP);
    expect(await verifyPassword("pw", parsed(h))).toBe(true);
  });

  it.each([
    ["", "a hash printed"],
    ["password123", "a hash printed"],
    ["$scrypt$ln=14,r=8,p=1$c2FsdHNhbHQ$", "a hash printed"],
    ["$scrypt$ln=9,r=8,p=1$c2FsdHNhbHRzYWx0$a2V5a2V5a2V5a2V5a2V5a2V5a2V5a2V5a2V5a2V5a2U", "10 <= ln <= 20"],
    ["$scrypt$ln=20,r=16,p=1$c2FsdHNhbHRzYWx0$a2V5a2V5a2V5a2V5a2V5a2V5a2V5a2V5a2V5a2V5a2U", "at most 256 MiB"],
  ])("refuses %j", (text, message) => {
    expect(parsePasswordHash(text)).toContain(message);
  });

  it("normalises thumbprints", () => {
    const der = Buffer.from("not a certificate, but bytes to hash");
    const t = certificateThumbprint(der);
    expect(t).toMatch(/^[0-9a-f]{40}$/);
    expect(normaliseThumbprint(t.toUpperCase().replace(/(..)(?!$)/g, "$1:"))).toBe(t);
    expect(normaliseThumbprint("abc")).toBeUndefined();
  });
});

describe("roles", () => {
  it("viewer < operator < admin", () => {
    expect(hasPermission("viewer", Permission.Read | Permission.Browse | Permission.Subscribe | Permission.HistoryRead)).toBe(true);
    expect(hasPermission("viewer", Permission.WriteDeviceTags)).toBe(false);
    expect(hasPermission("operator", Permission.WriteDeviceTags)).toBe(true);
    expect(hasPermission("operator", Permission.WriteConfiguration)).toBe(false);
    expect(hasPermission("admin", Permission.WriteConfiguration)).toBe(true);
  });
});

describe("UserDirectory", () => {
  const lockout = { maxFailuresPerUser: 3, maxFailuresPerAddress: 5, duration: 60_000 };

  async function directory(clock: FakeClock): Promise<UserDirectory> {
    return new UserDirectory(
      userEntries({
        alice: { role: "operator", password: await hashPassword("alice-pw", CHEAP) },
        bob: { role: "viewer", password: await hashPassword("bob-pw", CHEAP) },
        cert: { role: "admin", certificates: ["00112233445566778899aabbccddeeff00112233"] },
      }),
      { lockout, clock },
    );
  }
  const pw = (s: string) => Buffer.from(s);

  it("logs users in with their role; wrong passwords, unknown users and undecryptable tokens are denied alike", async () => {
    const d = await directory(new FakeClock());
    expect(await d.checkPassword("alice", pw("alice-pw"), "10.0.0.1")).toEqual({ result: LoginResult.Ok, role: "operator" });
    expect(await d.checkPassword("bob", pw("bob-pw"), "10.0.0.1")).toEqual({ result: LoginResult.Ok, role: "viewer" });
    expect(await d.checkPassword("alice", pw("bob-pw"), "10.0.0.1")).toEqual({ result: LoginResult.Denied });
    expect(await d.checkPassword("mallory", pw("alice-pw"), "10.0.0.1")).toEqual({ result: LoginResult.Denied });
    expect(await d.checkPassword("cert", pw(""), "10.0.0.1")).toEqual({ result: LoginResult.Denied });
    expect(await d.checkPassword("alice", undefined, "10.0.0.1")).toEqual({ result: LoginResult.Denied });
    expect(d.acceptsPasswords).toBe(true);
    expect(d.acceptsCertificates).toBe(true);
    expect(d.certificateRole("00112233445566778899aabbccddeeff00112233")).toBe("admin");
    expect(d.certificateRole("ffffffffffffffffffffffffffffffffffffffff")).toBeUndefined();
    // Unknown names are checked against a dummy hash of the table's own cost, not the default.
    expect((d as unknown as { dummy: PasswordHash }).dummy.params).toEqual(CHEAP);
  });

  it("locks a user after N failures, refuses even the right password, and releases after the window", async () => {
    const clock = new FakeClock();
    const d = await directory(clock);
    for (let i = 0; i < 3; i++) expect((await d.checkPassword("alice", pw("guess" + i), `10.0.0.${i + 1}`)).result).toBe(LoginResult.Denied);
    expect(d.isLockedOut("alice", undefined)).toBe(true);
    expect((await d.checkPassword("alice", pw("alice-pw"), "10.0.0.9")).result).toBe(LoginResult.Denied);
    // Other users are untouched.
    expect((await d.checkPassword("bob", pw("bob-pw"), "10.0.0.9")).result).toBe(LoginResult.Ok);
    clock.advance(59_999);
    expect((await d.checkPassword("alice", pw("alice-pw"), "10.0.0.9")).result).toBe(LoginResult.Denied);
    clock.advance(1);
    expect(d.isLockedOut("alice", undefined)).toBe(false);
    expect((await d.checkPassword("alice", pw("alice-pw"), "10.0.0.9")).result).toBe(LoginResult.Ok);
  });

  it("forgets failures older than the window, and a success clears the user's count", async () => {
    const clock = new FakeClock();
    const d = await directory(clock);
    await d.checkPassword("alice", pw("x"), "10.0.0.1");
    await d.checkPassword("alice", pw("x"), "10.0.0.1");
    clock.advance(60_000);
    await d.checkPassword("alice", pw("x"), "10.0.0.1");
    await d.checkPassword("alice", pw("x"), "10.0.0.1");
    expect(d.isLockedOut("alice", undefined)).toBe(false);
    expect((await d.checkPassword("alice", pw("alice-pw"), "10.0.0.1")).result).toBe(LoginResult.Ok);
    await d.checkPassword("alice", pw("x"), "10.0.0.1");
    await d.checkPassword("alice", pw("x"), "10.0.0.1");
    expect(d.isLockedOut("alice", undefined)).toBe(false);
  });

  it("locks an address that guesses at many user names, known or not", async () => {
    const clock = new FakeClock();
    const d = await directory(clock);
    for (const name of ["a", "b", "c", "d", "e"]) await d.checkPassword(name, pw("x"), "192.0.2.7");
    expect(d.isLockedOut(undefined, "192.0.2.7")).toBe(true);
    expect((await d.checkPassword("alice", pw("alice-pw"), "192.0.2.7")).result).toBe(LoginResult.Denied);
    expect((await d.checkPassword("alice", pw("alice-pw"), "192.0.2.8")).result).toBe(LoginResult.Ok);
    clock.advance(60_000);
    expect((await d.checkPassword("alice", pw("alice-pw"), "192.0.2.7")).result).toBe(LoginResult.Ok);
  });

  it("bounds the lockout records", async () => {
    const clock = new FakeClock();
    const d = new UserDirectory({}, { lockout, clock, maxTrackedKeys: 4 });
    for (let i = 0; i < 10; i++) await d.checkPassword("nobody", pw("x"), `198.51.100.${i}`);
    // Only the most recent addresses are remembered.
    expect((d as unknown as { failures: Map<string, unknown> }).failures.size).toBeLessThanOrEqual(4);
  });

  it("refuses checks beyond the queue at once instead of piling them up", async () => {
    const d = new UserDirectory(userEntries({ u: { role: "viewer", password: await hashPassword("p", CHEAP) } }), {
      maxConcurrentChecks: 1,
      maxQueuedChecks: 1,
    });
    const results = await Promise.all([0, 1, 2, 3].map(() => d.checkPassword("u", pw("p"), "10.1.1.1")));
    expect(results.filter((r) => r.result === LoginResult.Ok)).toHaveLength(2);
  });
});
