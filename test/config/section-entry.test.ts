// One entry of a settings file's section set where a person's file keeps everything else as
// written (src/config/entry-yaml.ts setSectionEntry): the shipped gateway.yaml with its aligned
// comments gets a user, an existing user is replaced whole, and the shapes the splice does not
// handle are written by the yaml Document with the same values. And the rule a password typed
// for a user must meet (src/config/credentials.ts passwordProblem).
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { parse } from "yaml";
import { describe, expect, it } from "vitest";
import { passwordProblem } from "../../src/config/credentials.js";
import { setSectionEntry } from "../../src/config/entry-yaml.js";

const SHIPPED = readFileSync(join(import.meta.dirname, "../../config/gateway.yaml"), "utf8");
const ADMIN = { role: "admin", password: "$scrypt$ln=14,r=8,p=1$c2FsdHNhbHRzYWx0$a2V5a2V5a2V5a2V5a2V5a2V5a2V5a2V5a2V5a2V5" };

function set(text: string, name = "admin", value: Record<string, unknown> = ADMIN): string {
  const r = setSectionEntry(text, "users", name, value);
  if ("error" in r) throw new Error(r.error);
  return r.text;
}

describe("setSectionEntry", () => {
  it("adds a users section to the shipped gateway.yaml at its end, every line before it as it was", () => {
    const out = set(SHIPPED);
    expect(out.startsWith(SHIPPED)).toBe(true);
    expect(out.slice(SHIPPED.length)).toBe(`users:\n  admin:\n    role: admin\n    password: ${ADMIN.password}\n`);
    expect(parse(out).users).toEqual({ admin: ADMIN });
  });

  it("adds a user after the others and replaces one of that name whole, at the section's indentation, comments kept", () => {
    const text = "log:\n  level: info          # aligned\nusers:\n    bob:               # the night shift\n        role: viewer\n        password: old\n    # keep me\n    admin:\n        role: viewer\n        certificates: [aa]\nweb:\n  port: 8443\n";
    const added = set(text, "carol");
    expect(added).toBe(text.replace("web:\n", `    carol:\n      role: admin\n      password: ${ADMIN.password}\nweb:\n`));
    const replaced = set(text, "admin", { ...ADMIN, certificates: ["aa"] });
    expect(replaced).toContain("    # keep me\n    admin:\n      role: admin\n");
    expect(replaced).toContain("level: info          # aligned\n");
    expect(replaced).toContain("bob:               # the night shift\n");
    expect(parse(replaced).users).toEqual({ bob: { role: "viewer", password: "old" }, admin: { ...ADMIN, certificates: ["aa"] } });
  });

  it("a file without a last line end, a flow mapping and an empty section: the same values either way", () => {
    expect(set("log:\n  level: info")).toBe(`log:\n  level: info\nusers:\n  admin:\n    role: admin\n    password: ${ADMIN.password}\n`);
    for (const text of ["users: { bob: { role: viewer, password: x } }\nlog: {}\n", "users:\nlog: {}\n", "# only a comment\n", ""]) {
      const out = parse(set(text));
      expect(out.users.admin, text).toEqual(ADMIN);
      if (text.startsWith("users: {")) expect(out.users.bob).toEqual({ role: "viewer", password: "x" });
    }
  });

  it("refuses a file it cannot add to, saying why", () => {
    expect(setSectionEntry("users: [a, b]\n", "users", "admin", ADMIN)).toEqual({ error: "users: is not a mapping in the file: fix it first" });
    expect(setSectionEntry("- a\n", "users", "admin", ADMIN)).toEqual({ error: "the file is not a mapping of settings: fix it first" });
    expect(setSectionEntry("users: {\n", "users", "admin", ADMIN)).toMatchObject({ error: expect.stringMatching(/^the file has a YAML syntax error/) });
  });
});

describe("passwordProblem", () => {
  it.each([
    ["correct horse", undefined],
    ["12345678", undefined],
    ["Grüße-Müller", undefined],
    ["1234567", "expected at least 8 characters; this one is shorter"],
    // Eight UTF-16 units, four characters.
    ["😀😀😀😀", "expected at least 8 characters; this one is shorter"],
    ["tab\there-too", "expected no control characters (a tab, for example): type it again without"],
    ["escape\u001b[0m", "expected no control characters (a tab, for example): type it again without"],
    [" leading-space", "expected no space at its beginning or end: nobody sees it there"],
    ["trailing-space ", "expected no space at its beginning or end: nobody sees it there"],
    ["x".repeat(1025), "expected at most 1024 characters; this one is longer"],
  ])("%j: %s", (password, problem) => {
    expect(passwordProblem(password)).toBe(problem);
  });
});
