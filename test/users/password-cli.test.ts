// `fieldgate password` on the built CLI: from a pipe (first line), and from a terminal without
// echo (through a pseudo-terminal made by Debian's python3, skipped when python3 is absent).
import { spawnSync } from "node:child_process";
import { resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { parsePasswordHash, verifyPassword, type PasswordHash } from "../../src/sessions/users.js";

const cli = resolve(__dirname, "../../dist/src/cli.js");
const hasPython = spawnSync("python3", ["-c", "import pty"]).status === 0;

function hashOf(text: string): PasswordHash {
  const h = parsePasswordHash(text.trim());
  if (typeof h === "string") throw new Error(`not a hash: ${text}`);
  return h;
}

// Drives the CLI through a pty: answers both prompts, prints everything the terminal showed.
const PTY_DRIVER = `
import os, pty, sys
pid, fd = pty.fork()
if pid == 0:
    os.execv(sys.argv[1], [sys.argv[1], sys.argv[2], "password"])
out = b""
def until(s):
    global out
    while s not in out:
        d = os.read(fd, 1024)
        if not d: raise SystemExit("eof before " + s.decode())
        out += d
until(b"Password: ")
os.write(fd, sys.argv[3].encode() + b"\\r")
until(b"Again: ")
os.write(fd, sys.argv[4].encode() + b"\\r")
try:
    while True:
        d = os.read(fd, 1024)
        if not d: break
        out += d
except OSError:
    pass
_, status = os.waitpid(pid, 0)
sys.stdout.write(out.decode())
sys.exit(os.WEXITSTATUS(status))
`;

describe("fieldgate password", () => {
  it("hashes the first line of a pipe", async () => {
    const r = spawnSync(process.execPath, [cli, "password"], { input: "pässwörd\r\nsecond line\n", timeout: 20_000 });
    expect(r.status).toBe(0);
    const hash = hashOf(r.stdout.toString());
    expect(await verifyPassword("pässwörd", hash)).toBe(true);
  });

  it("refuses an empty password", () => {
    const r = spawnSync(process.execPath, [cli, "password"], { input: "\n", timeout: 20_000 });
    expect(r.status).toBe(1);
    expect(r.stdout.toString()).toBe("");
  });

  it("refuses a password the drive's rule refuses, without repeating it", () => {
    const short = spawnSync(process.execPath, [cli, "password"], { input: "s3cr7\n", timeout: 20_000 });
    expect(short.status).toBe(1);
    expect(short.stdout.toString()).toBe("");
    expect(short.stderr.toString()).toContain("at least 8 characters");
    expect(short.stderr.toString()).not.toContain("s3cr7");
    const tab = spawnSync(process.execPath, [cli, "password"], { input: "long\tenough-pw\n", timeout: 20_000 });
    expect(tab.status).toBe(1);
    expect(tab.stderr.toString()).toContain("control characters");
  });

  it.skipIf(!hasPython)("asks twice on a terminal without echoing", async () => {
    const r = spawnSync("python3", ["-c", PTY_DRIVER, process.execPath, cli, "tty-secr3t", "tty-secr3t"], { timeout: 20_000 });
    const shown = r.stdout.toString();
    expect(r.status).toBe(0);
    expect(shown).not.toContain("tty-secr3t");
    expect(await verifyPassword("tty-secr3t", hashOf(shown.split("Again:")[1]!))).toBe(true);
    const differ = spawnSync("python3", ["-c", PTY_DRIVER, process.execPath, cli, "one", "two"], { timeout: 20_000 });
    expect(differ.status).toBe(1);
    expect(differ.stdout.toString()).toContain("differ");
  });
});
