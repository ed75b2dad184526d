// The FAT drive's import (src/settings/import.ts) on folders that stand for the drive's
// fieldgate/ folder, /etc/fieldgate, /data/etc/ssh and the data folder: a valid set, one bad file
// in a set, a set applied once and never again, the editors' slips, and a power cut at every
// step of an import (the process stopped there; the next run finishes or starts over).
import { generateKeyPairSync } from "node:crypto";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, truncateSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, beforeEach, describe, expect, it } from "vitest";
import { ConfigVersions } from "../../src/settings/config-versions.js";
import { importSettings, KEEP_APPLIED, readStatus, type ImportPaths } from "../../src/settings/import.js";
import { importCutAt, importFolders, PowerCut } from "../helpers/import-folders.js";
import { DRIVERS } from "../helpers/map.js";

const repo = resolve(__dirname, "../..");
const root = mkdtempSync(join(tmpdir(), "fieldgate-import-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const GATEWAY = readFileSync(join(repo, "config/gateway.yaml"), "utf8");
const DEVICES = readFileSync(join(repo, "config/devices.yaml"), "utf8");
const NETWORK = readFileSync(join(repo, "config/network.yaml"), "utf8");
/** The shipped map with one more tag: what a person adds. */
const NEW_DEVICES = DEVICES.replace("    tags:\n", "    tags:\n      - name: added\n        address: holding:7\n        type: uint16\n");
const STATIC = "hostname: line3\nports:\n  - mac: 52:54:00:12:34:56\n    addresses: [192.168.77.10/24]\n    gateway: 192.168.77.1\n";

/** An OpenSSH public key line (RFC 4253 §6.6 wire format) for a fresh Ed25519 key. */
function sshKey(comment: string): string {
  const raw = generateKeyPairSync("ed25519").publicKey.export({ type: "spki", format: "der" }).subarray(-32);
  const str = (b: Buffer): Buffer => Buffer.concat([Buffer.from([0, 0, 0, b.length]), b]);
  return `ssh-ed25519 ${Buffer.concat([str(Buffer.from("ssh-ed25519")), str(raw)]).toString("base64")} ${comment}`;
}

let n = 0;
let paths: ImportPaths;
let drive: string;
const clock = (iso: string) => () => new Date(iso);
const crlf = (s: string): string => s.replace(/\n/g, "\r\n");
const read = (f: string): string => readFileSync(f, "utf8");

/** A gateway as shipped, in folders under `base`, and its drive with what the image puts there. */
function freshGateway(base: string): void {
  paths = importFolders(base, { "gateway.yaml": GATEWAY, "devices.yaml": DEVICES, "network.yaml": NETWORK });
  drive = paths.from;
  // Never applied.
  writeFileSync(join(drive, "devices.yaml.example"), crlf(DEVICES));
}

beforeEach(() => freshGateway(join(root, String(++n))));

describe("fieldgate settings import", () => {
  it("applies a valid set, keeps the files it replaced, turns SSH on, moves the set and says so in Notepad's words", async () => {
    const key = sshKey("alice@laptop");
    writeFileSync(join(drive, "devices.yaml"), `\ufeff${crlf(NEW_DEVICES)}`); // Notepad: BOM and CRLF
    writeFileSync(join(drive, "Network.yaml"), STATIC);
    writeFileSync(join(drive, "authorized_keys"), crlf(`# mine\n${key}\n`));
    const r = await importSettings(paths, DRIVERS, { now: clock("2026-12-05T14:02:11Z") });
    expect(r).toMatchObject({ result: "applied", files: ["devices.yaml", "Network.yaml", "authorized_keys"], movedTo: "applied/2026-12-05_140211", resumed: false });
    expect(read(join(paths.configDir, "devices.yaml"))).toBe(NEW_DEVICES);
    expect(read(join(paths.configDir, "devices.yaml.previous"))).toBe(DEVICES);
    expect(read(join(paths.configDir, "network.yaml"))).toBe(STATIC);
    expect(read(join(paths.configDir, "network.yaml.previous"))).toBe(NETWORK);
    expect(read(join(paths.configDir, "gateway.yaml"))).toBe(GATEWAY);
    expect(existsSync(join(paths.configDir, "gateway.yaml.previous"))).toBe(false);
    expect(read(join(paths.sshDir, "authorized_keys/root"))).toBe(`${key}\n`);
    expect(existsSync(join(paths.sshDir, "enabled"))).toBe(true);
    // The drive: the set moved, the examples and README stay, the result beside them.
    expect(readdirSync(drive).sort()).toEqual(["IMPORT-RESULT.txt", "README.txt", "applied", "devices.yaml.example"]);
    expect(readdirSync(join(drive, "applied/2026-12-05_140211")).sort()).toEqual(["Network.yaml", "authorized_keys", "devices.yaml"]);
    const text = read(join(drive, "IMPORT-RESULT.txt"));
    expect(text).not.toMatch(/[^\r]\n/);
    expect(text).toContain("2026-12-05 14:02 UTC\r\n");
    expect(text).toContain("APPLIED.");
    expect(text).toContain("authorized_keys  SSH keys: 1 key; SSH is on");
    expect(text).toContain("applied\\2026-12-05_140211\\");
    const status = readStatus(paths)!;
    expect(status).toMatchObject({ result: "applied", files: ["devices.yaml", "Network.yaml", "authorized_keys"], issues: [], movedTo: "applied/2026-12-05_140211" });
    expect(existsSync(join(paths.configDir, ".settings-import.json"))).toBe(false);
  });

  it("keeps each file it applies as a version by the FIELDGATE drive, after the file it replaced, saying what changed", async () => {
    writeFileSync(join(drive, "devices.yaml"), NEW_DEVICES.replace(/^  - name: simulator$/m, "  - name: press"));
    writeFileSync(join(drive, "network.yaml"), STATIC);
    writeFileSync(join(drive, "gateway.yaml"), GATEWAY.replace(/^log:\n  level: info/m, "log:\n  level: debug"));
    await importSettings(paths, DRIVERS, { now: clock("2026-12-05T14:02:11Z") });
    const kept = (kind: string) => new ConfigVersions(join(paths.versionsDir!, kind));
    const devices = kept("devices").list();
    expect(devices.map((v) => [v.id, v.user, v.at])).toEqual([
      [2, "FIELDGATE drive", "2026-12-05T14:02:11.000Z"],
      [1, "on disk", expect.stringMatching(/^\d{4}-/)],
    ]);
    expect(devices[0]!.summary).toBe("added press; removed simulator; 0 unchanged");
    expect(devices[1]!.summary).toBe("the file as it was before the first change from the FIELDGATE drive");
    expect(kept("devices").text(1)).toBe(DEVICES);
    expect(kept("devices").text(2)).toBe(read(join(paths.configDir, "devices.yaml")));
    expect(kept("network").list()[0]!.summary).toBe("changed: hostname, ports");
    expect(kept("gateway").list()[0]!.summary).toBe("changed: log");
    // A later import: one more version each, the one before not kept again.
    writeFileSync(join(drive, "network.yaml"), `# the same, said again\n${STATIC}`);
    await importSettings(paths, DRIVERS, { now: clock("2026-12-06T08:00:00Z") });
    expect(kept("network").list().map((v) => [v.id, v.user, v.summary])).toEqual([
      [3, "FIELDGATE drive", "the same settings (comments or layout changed)"],
      [2, "FIELDGATE drive", "changed: hostname, ports"],
      [1, "on disk", "the file as it was before the first change from the FIELDGATE drive"],
    ]);
  });

  it("applies a set once: the next boot finds nothing, and a later change made on the gateway stays", async () => {
    writeFileSync(join(drive, "devices.yaml"), NEW_DEVICES);
    expect((await importSettings(paths, DRIVERS, { now: clock("2026-12-05T14:00:00Z") })).result).toBe("applied");
    const result = read(join(drive, "IMPORT-RESULT.txt"));
    // Changed since (the page, SSH): a second boot must not put the drive's file back.
    writeFileSync(join(paths.configDir, "devices.yaml"), DEVICES);
    expect(await importSettings(paths, DRIVERS, { now: clock("2026-12-05T15:00:00Z") })).toEqual({ result: "nothing" });
    expect(read(join(paths.configDir, "devices.yaml"))).toBe(DEVICES);
    expect(read(join(drive, "IMPORT-RESULT.txt"))).toBe(result);
  });

  it("refuses a set with one bad file: nothing applied, not even the good ones, and says file:line:column", async () => {
    const bad = NEW_DEVICES.replace("address: holding:7", "address: holdng:7");
    const line = bad.split("\n").findIndex((l) => l.includes("holdng:7")) + 1;
    writeFileSync(join(drive, "devices.yaml"), crlf(bad));
    writeFileSync(join(drive, "network.yaml"), STATIC);
    const r = await importSettings(paths, DRIVERS, { now: clock("2026-12-05T14:02:11Z") });
    expect(r).toMatchObject({ result: "refused", files: ["devices.yaml", "network.yaml"], unchanged: false });
    expect(read(join(paths.configDir, "devices.yaml"))).toBe(DEVICES);
    expect(read(join(paths.configDir, "network.yaml"))).toBe(NETWORK);
    expect(readdirSync(paths.configDir).sort()).toEqual(["devices.yaml", "gateway.yaml", "network.yaml"]);
    expect(existsSync(join(paths.sshDir, "enabled"))).toBe(false);
    // The set stays on the drive to be fixed.
    expect(existsSync(join(drive, "devices.yaml")) && existsSync(join(drive, "network.yaml")) && !existsSync(join(drive, "applied"))).toBe(true);
    const text = read(join(drive, "IMPORT-RESULT.txt"));
    expect(text).toContain("NOT APPLIED. Nothing was changed");
    expect(text).toContain(`  devices.yaml:${line}:18: devices[0].tags[0].address: expected a Modbus address`);
    expect(text).toContain('did you mean "holding:"?');
    expect(text).not.toMatch(/[^\r]\n/);
    const status = readStatus(paths)!;
    expect(status.result).toBe("refused");
    expect(status.issues).toEqual([expect.objectContaining({ file: "devices.yaml", line, column: 18, path: "devices[0].tags[0].address" })]);
    // The next boot with the same set: the same answer, and the drive is not written again.
    const again = await importSettings(paths, DRIVERS, { now: clock("2026-12-06T08:00:00Z") });
    expect(again).toMatchObject({ result: "refused", unchanged: true });
    expect(read(join(drive, "IMPORT-RESULT.txt"))).toBe(text);
    // Fixed on the laptop: applied at the boot after.
    writeFileSync(join(drive, "devices.yaml"), crlf(NEW_DEVICES));
    expect((await importSettings(paths, DRIVERS, { now: clock("2026-12-06T09:00:00Z") })).result).toBe("applied");
    expect(read(join(paths.configDir, "network.yaml"))).toBe(STATIC);
  });

  it.each([
    ["devices.yaml.txt", DEVICES, /devices\.yaml\.txt: Notepad added ".txt" to the name: rename it to devices\.yaml/],
    ["network.yml", NETWORK, /network\.yml: rename it to network\.yaml/],
    ["id_ed25519.pub", "ssh-ed25519 AAAA", /id_ed25519\.pub: a public key goes into a file named authorized_keys/],
  ])("names an editor's slip in the file name (%s) and applies nothing", async (name, text, message) => {
    writeFileSync(join(drive, name), text);
    writeFileSync(join(drive, "network.yaml.example"), NETWORK);
    const r = await importSettings(paths, DRIVERS);
    expect(r.result).toBe("refused");
    expect(read(join(drive, "IMPORT-RESULT.txt"))).toMatch(message);
  });

  it("refuses text that is not UTF-8, saying how to save it in Notepad", async () => {
    writeFileSync(join(drive, "devices.yaml"), Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(DEVICES, "utf16le")]));
    writeFileSync(join(drive, "network.yaml"), Buffer.from("hostname: b\xe4ckerei\n", "latin1"));
    const r = await importSettings(paths, DRIVERS);
    expect(r.result).toBe("refused");
    const text = read(join(drive, "IMPORT-RESULT.txt"));
    expect(text).toContain("devices.yaml: the file is saved as UTF-16 (it begins with a UTF-16 byte order mark); save it as UTF-8");
    expect(text).toContain("network.yaml:1:12: hostname: byte 0xE4 is not UTF-8: the file was saved in another encoding (Latin-1, Windows-1252, ...); save it as UTF-8");
    expect(text).toContain("To save a file as UTF-8 in Notepad: File > Save as, Encoding: UTF-8.");
  });

  it("refuses a gateway.yaml whose data folder is not this gateway's, at the line that says it", async () => {
    const appliance = GATEWAY.replace(/^dataDir:.*$/m, "dataDir: /var/lib/fieldgate");
    writeFileSync(join(paths.configDir, "gateway.yaml"), appliance);
    // A gateway.yaml from a checkout: dataDir ../data.
    writeFileSync(join(drive, "gateway.yaml"), GATEWAY);
    const line = GATEWAY.split("\n").findIndex((l) => l.startsWith("dataDir:")) + 1;
    const r = await importSettings(paths, DRIVERS);
    expect(r).toMatchObject({ result: "refused", issues: [expect.objectContaining({ file: "gateway.yaml", line, column: 10, path: "dataDir" })] });
    expect(read(join(drive, "IMPORT-RESULT.txt"))).toContain(`gateway.yaml:${line}:10: dataDir: expected /var/lib/fieldgate (where this gateway keeps its history and certificates), got ${resolve(paths.configDir, "../data")}`);
    expect(read(join(paths.configDir, "gateway.yaml"))).toBe(appliance);
  });

  it("applies a gateway.yaml and the devices.yaml it names together; a gateway.yaml naming a broken map on the gateway is refused", async () => {
    const newGateway = GATEWAY.replace("applicationName: fieldgate", "applicationName: line3");
    writeFileSync(join(drive, "gateway.yaml"), newGateway);
    writeFileSync(join(drive, "devices.yaml"), NEW_DEVICES);
    expect(await importSettings(paths, DRIVERS)).toMatchObject({ result: "applied", files: ["gateway.yaml", "devices.yaml"] });
    expect(read(join(paths.configDir, "gateway.yaml"))).toBe(newGateway);
    expect(read(join(paths.configDir, "gateway.yaml.previous"))).toBe(GATEWAY);
    // A gateway.yaml that names another map, broken, already on the gateway.
    writeFileSync(join(paths.configDir, "other.yaml"), "devices:\n  - name: x\n    driver: modbus-tpc\n    tags: [{ name: t, address: holding:1 }]\n");
    writeFileSync(join(drive, "gateway.yaml"), GATEWAY.replace("devices: ./devices.yaml", "devices: ./other.yaml"));
    const r = await importSettings(paths, DRIVERS);
    expect(r).toMatchObject({ result: "refused", issues: [expect.objectContaining({ file: join(paths.configDir, "other.yaml"), line: 3, message: expect.stringMatching(/^\(the device map gateway\.yaml names\) expected one of/) })] });
    expect(read(join(paths.configDir, "gateway.yaml"))).toBe(newGateway);
  });

  it("refuses a devices.yaml that the gateway.yaml would not use", async () => {
    writeFileSync(join(drive, "gateway.yaml"), GATEWAY.replace(/^devices: .*$/m, "# devices: ./devices.yaml"));
    writeFileSync(join(drive, "devices.yaml"), NEW_DEVICES);
    const r = await importSettings(paths, DRIVERS);
    expect(r.result).toBe("refused");
    expect(read(join(drive, "IMPORT-RESULT.txt"))).toContain("devices.yaml: gateway.yaml names no device map (devices:), so this devices.yaml would not be used: set devices: ./devices.yaml");
  });

  it("checks authorized_keys: a private key or PuTTY's format is refused at its line; no key turns SSH off", async () => {
    writeFileSync(join(drive, "authorized_keys"), `${sshKey("a")}\n\n-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n`);
    expect(await importSettings(paths, DRIVERS)).toMatchObject({ result: "refused", issues: [expect.objectContaining({ line: 3, column: 1, message: expect.stringMatching(/^this is a private key/) })] });
    writeFileSync(join(drive, "authorized_keys"), "---- BEGIN SSH2 PUBLIC KEY ----\nComment: x\n");
    expect(read(join(drive, "IMPORT-RESULT.txt"))).toContain("authorized_keys:3:1: this is a private key");
    expect(await importSettings(paths, DRIVERS)).toMatchObject({ result: "refused", issues: [expect.objectContaining({ line: 1, message: expect.stringMatching(/PuTTYgen/) })] });
    const key = sshKey("b");
    writeFileSync(join(drive, "authorized_keys"), `${key.slice(0, -20)}XX b\n`);
    expect(await importSettings(paths, DRIVERS)).toMatchObject({ result: "refused", issues: [expect.objectContaining({ line: 1, column: 13 })] });
    writeFileSync(join(drive, "authorized_keys"), `${key}\n`);
    expect((await importSettings(paths, DRIVERS)).result).toBe("applied");
    expect(existsSync(join(paths.sshDir, "enabled"))).toBe(true);
    writeFileSync(join(drive, "authorized_keys"), "# nobody\n");
    expect((await importSettings(paths, DRIVERS)).result).toBe("applied");
    expect(existsSync(join(paths.sshDir, "enabled")) || existsSync(join(paths.sshDir, "authorized_keys/root"))).toBe(false);
    expect(read(join(paths.sshDir, "authorized_keys/root.previous"))).toBe(`${key}\n`);
    expect(read(join(drive, "IMPORT-RESULT.txt"))).toContain("SSH keys: none, so SSH is off");
  });

  it("keeps the last sets applied on the drive, not every one", async () => {
    for (let i = 0; i < KEEP_APPLIED + 3; i++) {
      writeFileSync(join(drive, "network.yaml"), `hostname: box${i}\n`);
      expect((await importSettings(paths, DRIVERS, { now: clock(`2026-12-05T14:00:${String(i).padStart(2, "0")}Z`) })).result).toBe("applied");
    }
    const kept = readdirSync(join(drive, "applied")).sort();
    expect(kept).toHaveLength(KEEP_APPLIED);
    expect(kept[0]).toBe("2026-12-05_140003");
    expect(read(join(drive, "applied", kept.at(-1)!, "network.yaml"))).toBe(`hostname: box${KEEP_APPLIED + 2}\n`);
  });
});

describe("a power cut during an import", () => {
  const files = ["devices.yaml", "network.yaml"] as const;

  /** The set of the tests below, on the drive. */
  function putSet(key: string): void {
    writeFileSync(join(drive, "devices.yaml"), NEW_DEVICES);
    writeFileSync(join(drive, "network.yaml"), STATIC);
    writeFileSync(join(drive, "authorized_keys"), `${key}\n`);
  }

  /** Every target is wholly old or wholly new; never half, never missing. */
  function targetsWhole(): ("old" | "new")[] {
    const states: ("old" | "new")[] = [];
    for (const [f, old, now] of [[files[0], DEVICES, NEW_DEVICES], [files[1], NETWORK, STATIC]] as const) {
      const text = read(join(paths.configDir, f));
      expect([old, now], f).toContain(text);
      states.push(text === now ? "new" : "old");
    }
    return states;
  }

  it("at every step leaves each file old or new, and the next boot finishes the import once", async () => {
    const key = sshKey("c");
    // How many steps a whole import has.
    const steps: string[] = [];
    putSet(key);
    await importSettings(paths, DRIVERS, { step: (s) => steps.push(s) });
    expect(steps).toEqual(["staged", "committed", "applied devices.yaml", "applied network.yaml", "applied root", "applied enabled", "versions recorded", "moved devices.yaml", "moved network.yaml", "moved authorized_keys", "result written", "status written"]);

    for (let cut = 0; cut < steps.length; cut++) {
      freshGateway(join(root, `cut-${cut}`));
      putSet(key);
      await importCutAt(paths, DRIVERS, cut);
      const states = targetsWhole();
      // Before the commit nothing has changed; after it, the order of the journal.
      if (cut < 2) expect(states, steps[cut]).toEqual(["old", "old"]);
      // The next boot.
      const r = await importSettings(paths, DRIVERS, { now: clock("2026-12-05T16:00:00Z") });
      expect(r.result, steps[cut]).toBe("applied");
      expect(r.result === "applied" && r.resumed, steps[cut]).toBe(cut >= 1);
      expect(targetsWhole()).toEqual(["new", "new"]);
      expect(read(join(paths.configDir, "devices.yaml.previous"))).toBe(DEVICES);
      expect(read(join(paths.sshDir, "authorized_keys/root"))).toBe(`${key}\n`);
      expect(existsSync(join(paths.sshDir, "enabled"))).toBe(true);
      const sets = readdirSync(join(drive, "applied"));
      expect(sets, steps[cut]).toHaveLength(1);
      expect(readdirSync(join(drive, "applied", sets[0]!)).sort()).toEqual(["authorized_keys", "devices.yaml", "network.yaml"]);
      expect(read(join(drive, "IMPORT-RESULT.txt"))).toContain("APPLIED.");
      expect(readStatus(paths)?.result).toBe("applied");
      expect(readdirSync(paths.configDir).filter((f) => f.startsWith("."))).toEqual([]);
      // Each file a version once, after the one it replaced.
      for (const kind of ["devices", "network"]) {
        const kept = new ConfigVersions(join(paths.versionsDir!, kind)).list();
        expect(kept.map((v) => v.user), `${steps[cut]}: ${kind}`).toEqual(["FIELDGATE drive", "on disk"]);
      }
      // And once only.
      expect(await importSettings(paths, DRIVERS)).toEqual({ result: "nothing" });
    }
  });

  it("a staged file cut short by the power cut is never used: the set is imported again from the drive", async () => {
    putSet(sshKey("d"));
    await expect(
      importSettings(paths, DRIVERS, {
        step: (s) => {
          if (s !== "staged") return;
          truncateSync(join(paths.configDir, ".devices.yaml.import"), 100);
          throw new PowerCut(s);
        },
      }),
    ).rejects.toThrow(PowerCut);
    expect(await importSettings(paths, DRIVERS)).toMatchObject({ result: "applied", resumed: false });
    expect(read(join(paths.configDir, "devices.yaml"))).toBe(NEW_DEVICES);
  });

  it("a damaged journal is set aside, named, and the set imported from the drive", async () => {
    putSet(sshKey("e"));
    writeFileSync(join(paths.configDir, ".settings-import.json"), '{"format":1,"id":"2026-');
    expect(await importSettings(paths, DRIVERS)).toMatchObject({ result: "applied", resumed: false });
    expect(read(join(paths.configDir, ".settings-import.json.damaged"))).toBe('{"format":1,"id":"2026-');
    expect(read(join(paths.configDir, "network.yaml"))).toBe(STATIC);
  });
});
