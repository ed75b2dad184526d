// admin-password.txt on the FAT drive (src/settings/admin-password.ts through import.ts): the
// first admin made from a laptop without Linux. Alone, or with the set's gateway.yaml; refused
// with the rest of the set (the file kept, nothing applied); never a trace of the password but
// its scrypt hash (applied/, IMPORT-RESULT.txt, the status file, the versions, the command's
// output); the hash logs in through the gateway's own check; a power cut at every step.
import { createHash } from "node:crypto";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, beforeEach, describe, expect, it } from "vitest";
import { gatewaySchema } from "../../src/config/gateway-config.js";
import { validateFile } from "../../src/config/load.js";
import { UserDirectory, userEntries } from "../../src/sessions/users.js";
import { settingsCommand } from "../../src/settings/cli.js";
import { ConfigVersions } from "../../src/settings/config-versions.js";
import { importSettings, readStatus, type ImportPaths } from "../../src/settings/import.js";
import { importCutAt, importFolders, PowerCut } from "../helpers/import-folders.js";
import { DRIVERS } from "../helpers/map.js";

const repo = resolve(__dirname, "../..");
const root = mkdtempSync(join(tmpdir(), "fieldgate-admin-password-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const GATEWAY = readFileSync(join(repo, "config/gateway.yaml"), "utf8");
const DEVICES = readFileSync(join(repo, "config/devices.yaml"), "utf8");
const NEW_DEVICES = DEVICES.replace("    tags:\n", "    tags:\n      - name: added\n        address: holding:7\n        type: uint16\n");
const PASSWORD = "Kessel-Haus 7";
const THUMB = "3fa1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3";

let n = 0;
let paths: ImportPaths;
let drive: string;
const read = (f: string): string => readFileSync(f, "utf8");
const clock = (iso: string) => () => new Date(iso);

/** A gateway as shipped, and its drive, under `base`. */
function freshGateway(base: string): void {
  paths = importFolders(base, { "gateway.yaml": GATEWAY, "devices.yaml": DEVICES });
  drive = paths.from;
}

beforeEach(() => freshGateway(join(root, String(++n))));

/** The gateway.yaml on the gateway, as validated. */
function running() {
  const r = validateFile(gatewaySchema, join(paths.configDir, "gateway.yaml"));
  if (!r.ok) throw new Error(r.issues.map((i) => i.message).join("; "));
  return r.value;
}

/** The role a login of `user` with `password` gets from the gateway's own check; undefined: refused. */
async function login(user: string, password: string): Promise<string | undefined> {
  const users = new UserDirectory(userEntries(running().users));
  return (await users.checkPassword(user, Buffer.from(password, "utf8"), "127.0.0.1")).role;
}

/** Every file under `dir`, recursively. */
function filesUnder(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { recursive: true, encoding: "utf8" }).map((f) => join(dir, f)).filter((f) => statSync(f).isFile());
}

describe("admin-password.txt on the drive", () => {
  it("alone: the gateway's own gateway.yaml gets an admin whose password logs in, the rest of it as it was, the file removed", async () => {
    writeFileSync(join(drive, "admin-password.txt"), `\ufeff${PASSWORD}\r\n`); // Notepad: BOM and CRLF
    expect(await login("admin", PASSWORD)).toBeUndefined();
    const r = await importSettings(paths, DRIVERS, { now: clock("2026-12-05T14:02:11Z") });
    expect(r).toMatchObject({ result: "applied", files: ["admin-password.txt"], notes: [] });
    const now = read(join(paths.configDir, "gateway.yaml"));
    // Every line of the shipped file, comments and their alignment included, then the user.
    expect(now.startsWith(GATEWAY)).toBe(true);
    expect(now.slice(GATEWAY.length)).toMatch(/^users:\n {2}admin:\n {4}role: admin\n {4}password: \$scrypt\$ln=14,r=8,p=1\$[A-Za-z0-9+/]+\$[A-Za-z0-9+/]+\n$/);
    expect(read(join(paths.configDir, "gateway.yaml.previous"))).toBe(GATEWAY);
    expect(await login("admin", PASSWORD)).toBe("admin");
    expect(await login("admin", `${PASSWORD}x`)).toBeUndefined();
    // The drive: the file gone, nothing moved (no applied/ for a set of this file alone).
    expect(readdirSync(drive).sort()).toEqual(["IMPORT-RESULT.txt", "README.txt"]);
    const text = read(join(drive, "IMPORT-RESULT.txt"));
    expect(text).toContain("APPLIED.");
    expect(text).toContain("admin-password.txt  the password of user admin was set; admin-password.txt was removed from the drive\r\n");
    expect(text).not.toContain("moved to");
    expect(readStatus(paths)).toMatchObject({ result: "applied", files: ["admin-password.txt"] });
    // The page's versions: the gateway.yaml before, and the one with the user, by the drive.
    const kept = new ConfigVersions(join(paths.versionsDir!, "gateway"));
    expect(kept.list().map((v) => [v.user, v.summary])).toEqual([
      ["FIELDGATE drive", "changed: users"],
      ["on disk", "the file as it was before the first change from the FIELDGATE drive"],
    ]);
    expect(kept.text(2)).toBe(now);
    // Applied once: the next start finds nothing.
    expect(await importSettings(paths, DRIVERS)).toEqual({ result: "nothing" });
  });

  it("with the set's gateway.yaml: the user named in the file is added to that one; a user of that name keeps its certificates", async () => {
    const mine = GATEWAY.replace(/^log:\n {2}level: info/m, "log:\n  level: debug").replace("# users:\n", `users:\n  plant-eng:\n    role: viewer\n    certificates: ["${THUMB}"]\n  bob:\n    role: viewer\n    password: "$scrypt$ln=14,r=8,p=1$c2FsdHNhbHRzYWx0$a2V5a2V5a2V5a2V5a2V5a2V5a2V5a2V5a2V5a2V5"\n# users:\n`);
    writeFileSync(join(drive, "gateway.yaml"), mine);
    writeFileSync(join(drive, "devices.yaml"), NEW_DEVICES);
    writeFileSync(join(drive, "admin-password.txt"), `# the first admin\nplant-eng: ${PASSWORD}\n`);
    const r = await importSettings(paths, DRIVERS, { now: clock("2026-12-05T14:02:11Z") });
    expect(r).toMatchObject({ result: "applied", files: ["gateway.yaml", "devices.yaml", "admin-password.txt"] });
    const cfg = running();
    expect(cfg.log.level).toBe("debug");
    expect(cfg.users["plant-eng"]).toMatchObject({ role: "admin", certificates: [THUMB] });
    expect(cfg.users.bob).toMatchObject({ role: "viewer" });
    expect(await login("plant-eng", PASSWORD)).toBe("admin");
    expect(await login("admin", PASSWORD)).toBeUndefined();
    expect(read(join(paths.configDir, "devices.yaml"))).toBe(NEW_DEVICES);
    // The drive's gateway.yaml goes to applied/ as the person wrote it; the password file does not.
    const set = join(drive, "applied/2026-12-05_140211");
    expect(readdirSync(set).sort()).toEqual(["devices.yaml", "gateway.yaml"]);
    expect(read(join(set, "gateway.yaml"))).toBe(mine);
    expect(existsSync(join(drive, "admin-password.txt"))).toBe(false);
    const text = read(join(drive, "IMPORT-RESULT.txt"));
    expect(text).toContain("the password of user plant-eng was set; admin-password.txt was removed from the drive");
    expect(text).toContain("applied\\2026-12-05_140211\\");
    expect(new ConfigVersions(join(paths.versionsDir!, "gateway")).list()[0]).toMatchObject({ user: "FIELDGATE drive", summary: "changed: users, log" });
  });

  it.each([
    ["too short", "short1\n", "admin-password.txt:1:1: password: expected at least 8 characters; this one is shorter"],
    ["a tab", "Kessel\tHaus\n", "admin-password.txt:1:1: password: expected no control characters (a tab, for example): type it again without"],
    ["two lines", `${PASSWORD}\nnoch-ein-Passwort\n`, "admin-password.txt:2:1: expected one line with the password (or name: password), and line 1 is one already"],
    ["only comments", "# admin: ...\n\n", "admin-password.txt: has no password in it"],
    ["Latin-1", Buffer.from("K\xe4se-Kessel-7\n", "latin1"), "admin-password.txt: the file is not UTF-8: it was saved in another encoding (Latin-1, Windows-1252, ...); save it as UTF-8"],
    ["a space at its end", `admin: ${PASSWORD} \r\n`, "admin-password.txt:1:8: password: expected no space at its beginning or end"],
  ])("refuses %s with the rest of the set: nothing applied, the file kept, and nothing of it said", async (_what, content, message) => {
    writeFileSync(join(drive, "admin-password.txt"), content);
    writeFileSync(join(drive, "devices.yaml"), NEW_DEVICES);
    const r = await importSettings(paths, DRIVERS, { now: clock("2026-12-05T14:02:11Z") });
    expect(r).toMatchObject({ result: "refused", files: ["devices.yaml", "admin-password.txt"] });
    expect(read(join(paths.configDir, "gateway.yaml"))).toBe(GATEWAY);
    expect(read(join(paths.configDir, "devices.yaml"))).toBe(DEVICES);
    expect(readdirSync(paths.configDir).sort()).toEqual(["devices.yaml", "gateway.yaml"]);
    expect(readFileSync(join(drive, "admin-password.txt"))).toEqual(Buffer.from(content));
    const text = read(join(drive, "IMPORT-RESULT.txt"));
    expect(text).toContain("NOT APPLIED.");
    expect(text).toContain(message);
    const said = text + read(paths.statusFile);
    for (const secret of ["short1", "Kessel", "Haus", "noch-ein", "se-Kessel", "0xE4", PASSWORD]) expect(said).not.toContain(secret);
  });

  it("the image's example, renamed as it is, sets nothing: all comments, refused, the gateway.yaml untouched", async () => {
    const example = readFileSync(join(repo, "image/settings-drive/admin-password.txt.example"), "utf8");
    writeFileSync(join(drive, "admin-password.txt"), example.replace(/\n/g, "\r\n"));
    writeFileSync(join(drive, "admin-password.txt.example"), example);
    expect(await importSettings(paths, DRIVERS)).toMatchObject({ result: "refused", files: ["admin-password.txt"], issues: [expect.objectContaining({ file: "admin-password.txt", message: expect.stringMatching(/^has no password in it/) })] });
    expect(read(join(paths.configDir, "gateway.yaml"))).toBe(GATEWAY);
    // Notepad's ".txt" added to the name is named, as for the other files.
    rmSync(join(drive, "admin-password.txt"));
    writeFileSync(join(drive, "admin-password.txt.txt"), `${PASSWORD}\r\n`);
    const r = await importSettings(paths, DRIVERS);
    expect(r).toMatchObject({ result: "refused", issues: [expect.objectContaining({ file: "admin-password.txt.txt", message: expect.stringMatching(/^Notepad added ".txt" to the name: rename it to admin-password\.txt/) })] });
  });

  it("refuses a user name gateway.yaml would not take, without repeating it", async () => {
    writeFileSync(join(drive, "admin-password.txt"), `${"n".repeat(65)}: ${PASSWORD}\n`);
    const r = await importSettings(paths, DRIVERS);
    expect(r).toMatchObject({ result: "refused", issues: [expect.objectContaining({ file: "admin-password.txt", line: 1, column: 1, path: "user" })] });
    // What stands before ": " may be part of a password: not repeated either.
    expect(read(join(drive, "IMPORT-RESULT.txt"))).not.toMatch(/nnnn|Kessel/);
  });

  it("refuses a set whose gateway.yaml cannot take a user (policy None alone), saying so at the gateway.yaml", async () => {
    const none = GATEWAY.replace(/\n {4}- Basic256Sha256[^\n]*\n {4}- Aes128_Sha256_RsaOaep\n {4}- Aes256_Sha256_RsaPss\n/, "\n");
    writeFileSync(join(drive, "gateway.yaml"), none);
    writeFileSync(join(drive, "admin-password.txt"), `${PASSWORD}\n`);
    const r = await importSettings(paths, DRIVERS);
    expect(r).toMatchObject({ result: "refused", issues: [expect.objectContaining({ file: "gateway.yaml", path: "security.securityPolicies", message: expect.stringMatching(/^\(with the user admin of admin-password\.txt\) expected a signing policy/) })] });
    expect(read(join(paths.configDir, "gateway.yaml"))).toBe(GATEWAY);
    expect(existsSync(join(drive, "admin-password.txt")) && existsSync(join(drive, "gateway.yaml"))).toBe(true);
  });

  it("leaves no trace of the password but its scrypt hash: not in applied/, the result, the status, the versions, the configs or the command's output", async () => {
    writeFileSync(join(drive, "admin-password.txt"), `${PASSWORD}\n`);
    writeFileSync(join(drive, "devices.yaml"), NEW_DEVICES);
    const said: string[] = [];
    const code = await settingsCommand(
      ["import", "--from", drive, "--to", paths.configDir, "--ssh", paths.sshDir, "--status", paths.statusFile, "--versions", paths.versionsDir!],
      () => DRIVERS,
      (s) => said.push(s),
      (s) => said.push(s),
    );
    expect(code).toBe(0);
    expect(said.join("\n")).toMatch(/applied devices\.yaml, admin-password\.txt/);
    expect(await login("admin", PASSWORD)).toBe("admin");
    // The password, and the digests a fast guesser could test guesses against.
    const traces = [PASSWORD, Buffer.from(PASSWORD).toString("base64"), ...["sha256", "sha1", "md5"].flatMap((h) => [createHash(h).update(PASSWORD).digest("hex"), createHash(h).update(`${PASSWORD}\n`).digest("hex")])];
    const everything = [...filesUnder(drive), ...filesUnder(join(paths.configDir)), ...filesUnder(join(paths.statusFile, "..")), ...filesUnder(paths.sshDir)];
    expect(everything.some((f) => f.includes("applied"))).toBe(true);
    expect(everything.some((f) => f.endsWith("admin-password.txt"))).toBe(false);
    for (const f of everything) {
      const bytes = readFileSync(f).toString("utf8");
      for (const t of traces) expect(bytes.includes(t), `${f} holds ${t === PASSWORD ? "the password" : "a digest of it"}`).toBe(false);
    }
    for (const t of traces) expect(said.join("\n")).not.toContain(t);
  });
});

describe("a power cut during an import with admin-password.txt", () => {

  function putSet(): void {
    writeFileSync(join(drive, "admin-password.txt"), `${PASSWORD}\n`);
    writeFileSync(join(drive, "devices.yaml"), NEW_DEVICES);
  }

  /** gateway.yaml is the shipped one or the shipped one with the admin, never half; which one. */
  function gatewayWhole(): "old" | "new" {
    const text = read(join(paths.configDir, "gateway.yaml"));
    if (text === GATEWAY) return "old";
    expect(text.startsWith(GATEWAY)).toBe(true);
    expect(running().users.admin?.role).toBe("admin");
    return "new";
  }

  it("at every step leaves gateway.yaml old or new, and the next start finishes: the password logs in, the file leaves the drive", async () => {
    const steps: string[] = [];
    putSet();
    await importSettings(paths, DRIVERS, { step: (s) => steps.push(s) });
    expect(steps).toEqual(["staged", "committed", "applied gateway.yaml", "applied devices.yaml", "versions recorded", "moved devices.yaml", "removed admin-password.txt", "result written", "status written"]);

    for (let cut = 0; cut < steps.length; cut++) {
      freshGateway(join(root, `cut-${cut}`));
      putSet();
      await importCutAt(paths, DRIVERS, cut);
      const state = gatewayWhole();
      if (cut < 2) expect(state, steps[cut]).toBe("old");
      if (cut >= 2) expect(state, steps[cut]).toBe("new");
      // Until the import is done, the password is on the drive or in gateway.yaml: never lost.
      if (state === "old") expect(existsSync(join(drive, "admin-password.txt")), steps[cut]).toBe(true);
      const r = await importSettings(paths, DRIVERS);
      expect(r.result, steps[cut]).toBe("applied");
      expect(gatewayWhole()).toBe("new");
      expect(await login("admin", PASSWORD), steps[cut]).toBe("admin");
      expect(existsSync(join(drive, "admin-password.txt")), steps[cut]).toBe(false);
      expect(read(join(drive, "IMPORT-RESULT.txt"))).toContain("the password of user admin was set; admin-password.txt was removed from the drive");
      expect(read(join(paths.configDir, "gateway.yaml.previous"))).toBe(GATEWAY);
      expect(new ConfigVersions(join(paths.versionsDir!, "gateway")).list().map((v) => v.user), steps[cut]).toEqual(["FIELDGATE drive", "on disk"]);
      expect(readdirSync(paths.configDir).filter((f) => f.startsWith("."))).toEqual([]);
      expect(await importSettings(paths, DRIVERS)).toEqual({ result: "nothing" });
    }
  });

  it("a password file changed on the drive after the commit stays there, and the next start sets the new password", async () => {
    putSet();
    await expect(
      importSettings(paths, DRIVERS, {
        step: (s) => {
          if (s === "versions recorded") throw new PowerCut(s);
        },
      }),
    ).rejects.toThrow(PowerCut);
    // The card in the laptop between the two starts: another password written.
    writeFileSync(join(drive, "admin-password.txt"), "ein-anderes-Passwort\n");
    const r = await importSettings(paths, DRIVERS);
    expect(r).toMatchObject({ result: "applied", resumed: true, notes: ["admin-password.txt changed on the drive after it was imported: left where it is, to be imported at the next start"] });
    expect(read(join(drive, "IMPORT-RESULT.txt"))).toContain("the password of user admin was set; admin-password.txt was changed since, so it stays and is applied at the next start");
    expect(await login("admin", PASSWORD)).toBe("admin");
    expect(await importSettings(paths, DRIVERS)).toMatchObject({ result: "applied", files: ["admin-password.txt"] });
    expect(await login("admin", "ein-anderes-Passwort")).toBe("admin");
    expect(await login("admin", PASSWORD)).toBeUndefined();
    expect(existsSync(join(drive, "admin-password.txt"))).toBe(false);
  });
});
