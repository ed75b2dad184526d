// The users: section and the user keys of security: in gateway.yaml (defaults, what a mistake
// says, thumbprints normalised), and that the server builds its user table from them.
import { describe, expect, it } from "vitest";
import { gatewaySchema } from "../../src/config/gateway-config.js";
import { validateYaml } from "../../src/config/load.js";
import { hashPassword } from "../../src/sessions/users.js";

function issues(yaml: string): string[] {
  return validateYaml(gatewaySchema, yaml, "gateway.yaml").issues.map((i) => `${i.line}:${i.column} ${i.path}: ${i.message}`);
}

function value(yaml: string) {
  const r = validateYaml(gatewaySchema, yaml, "gateway.yaml");
  expect(r.issues).toEqual([]);
  return r.value!;
}

describe("users in gateway.yaml", () => {
  it("defaults: no users, anonymous viewers, lockout after 5 failures per user or 20 per address for 5 minutes", () => {
    const c = value("server:\n  port: 4841\n");
    expect(c.users).toEqual({});
    expect(c.security).toMatchObject({ allowAnonymous: true, anonymousRole: "viewer", lockout: { maxFailuresPerUser: 5, maxFailuresPerAddress: 20, duration: 300_000 } });
  });

  it("takes users with a hash, certificates (thumbprints normalised), or both", async () => {
    const hash = await hashPassword("x", { logN: 10, r: 8, p: 1 });
    const c = value(`users:
  alice:
    role: operator
    password: "${hash}"
  scada:
    role: viewer
    certificates: ["3F:A1:00:11:22:33:44:55:66:77:88:99:AA:BB:CC:DD:EE:FF:00:9C"]
  root:
    role: admin
    password: '${hash}'
    certificates: [3fa10011223344556677889 9aabbccddeeff009d]
security:
  anonymousRole: operator
  lockout: { maxFailuresPerUser: 3, duration: 30s }
`);
    expect(c.users.alice).toEqual({ role: "operator", password: hash, certificates: undefined });
    expect(c.users.scada!.certificates).toEqual(["3fa100112233445566778899aabbccddeeff009c"]);
    expect(c.users.root!.certificates).toEqual(["3fa100112233445566778899aabbccddeeff009d"]);
    expect(c.security.anonymousRole).toBe("operator");
    expect(c.security.lockout).toEqual({ maxFailuresPerUser: 3, maxFailuresPerAddress: 20, duration: 30_000 });
  });

  it("refuses configs in which nobody, or no user, could open a session", async () => {
    const hash = await hashPassword("x", { logN: 10, r: 8, p: 1 });
    const user = `users:\n  alice:\n    role: viewer\n    password: "${hash}"\n`;
    expect(issues("security:\n  allowAnonymous: false\n")).toEqual([
      "2:19 security.allowAnonymous: expected true when no users are configured: nobody could open a session",
    ]);
    expect(issues(`security:\n  allowAnonymous: false\n  securityPolicies: [None]\n${user}`)).toEqual([
      "2:19 security.allowAnonymous: expected true when securityPolicies offers only None: users log in only on signed endpoints, so nobody could open a session",
    ]);
    expect(issues(`security:\n  securityPolicies: [None]\n${user}`)).toEqual([
      "2:21 security.securityPolicies: expected a signing policy (Basic256Sha256, ...) when users are configured: users log in only on signed endpoints",
    ]);
    expect(issues(`security:\n  allowAnonymous: false\n${user}`)).toEqual([]);
  });

  it("says what is wrong, where", () => {
    expect(
      issues(`users:
  alice:
    role: operater
    password: hunter2
  bob:
    role: viewer
  "a b":
    role: admin
    password: "$scrypt$ln=9,r=8,p=1$c2FsdHNhbHRzYWx0$a2V5a2V5a2V5a2V5a2V5a2V5a2V5a2V5a2V5a2V5a2U"
  carl:
    role: viewer
    certificates: [abc]
    pasword: x
security:
  anonymousRole: guest
  lockout:
    duration: 0s
`),
    ).toEqual([
      '3:11 users.alice.role: expected one of "viewer", "operator", "admin", got "operater"; did you mean "operator"?',
      '4:15 users.alice.password: expected a password hash printed by `fieldgate password`, got "hunter2"; run `fieldgate password` and paste what it prints',
      "6:5 users.bob.password: expected a password hash or certificates: this user could never log in",
      `7:3 users["a b"]: expected a user name of 1 to 64 characters without spaces or ':', got "a b"`,
      '12:20 users.carl.certificates[0]: expected a SHA-1 certificate thumbprint (40 hex digits), got "abc"',
      '13:5 users.carl.pasword: unknown key; did you mean "password"?',
      '15:18 security.anonymousRole: expected one of "viewer", "operator", "admin", got "guest"',
      '17:15 security.lockout.duration: expected a duration between 1s and 1d (like 500ms, 10s, 5m, 1h), got "0s"',
    ]);
  });
});
