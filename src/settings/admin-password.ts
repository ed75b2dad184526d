// admin-password.txt on the FIELDGATE drive: the first admin of a gateway made from a laptop
// without Linux. The file holds one line, the password, or `name: password` to name the user
// (default admin); lines beginning with # are comments. At the import it becomes a user of the
// gateway.yaml being applied (the drive's, or the gateway's own): role admin, the password as the
// scrypt hash `fieldgate password` prints (sessions/users.ts hashPassword), the rest of the file
// as written (config/entry-yaml.ts setSectionEntry). The file itself never leaves the drive: it is
// removed there once the set is applied (import.ts), never copied to applied/, and nothing said
// about it (IMPORT-RESULT.txt, the status file, the log) repeats any of its content: issues give
// the line and what was expected, never a character or a byte of the password.
import { isUtf8 } from "node:buffer";
import { readFileSync, statSync } from "node:fs";
import { passwordProblem } from "../config/credentials.js";
import type { ConfigIssue } from "../config/errors.js";
import { setSectionEntry } from "../config/entry-yaml.js";
import { hashPassword } from "../sessions/users.js";

export const PASSWORD_FILE = "admin-password.txt";
export const DEFAULT_ADMIN = "admin";

/** A user name as gateway.yaml's `users` takes it (config/gateway-config.ts keyPattern). */
const USER_NAME = /^[^\s:]{1,64}$/;
/** `name: password`: the name ends at the first colon followed by a space. */
const NAMED = /^([^\s:]+):[ \t]+/;

export interface DrivePassword {
  readonly user: string;
  readonly password: string;
}

const issue = (file: string, line: number, column: number, path: string, message: string): ConfigIssue => ({ file, line, column, path, message });

/**
 * The user and password in `file` (shown as `shown`), or the first reason they cannot be used.
 * Read without config-text.ts: its messages name the byte that is not UTF-8, a byte of the password.
 */
export function readPasswordFile(file: string, shown: string): DrivePassword | ConfigIssue {
  let bytes: Buffer;
  try {
    // A password file is a line: anything large is another file under this name.
    if (statSync(file).size > 64 * 1024) return issue(shown, 0, 0, "", "larger than 64 KiB: not a password file");
    bytes = readFileSync(file);
  } catch (err) {
    return issue(shown, 0, 0, "", `cannot be read: ${(err as Error).message}`);
  }
  if ((bytes[0] === 0xff && bytes[1] === 0xfe) || (bytes[0] === 0xfe && bytes[1] === 0xff)) {
    return issue(shown, 0, 0, "", "the file is saved as UTF-16 (it begins with a UTF-16 byte order mark); save it as UTF-8");
  }
  if (!isUtf8(bytes)) return issue(shown, 0, 0, "", "the file is not UTF-8: it was saved in another encoding (Latin-1, Windows-1252, ...); save it as UTF-8");
  const lines = bytes.toString("utf8").replace(/^\ufeff/, "").split(/\r?\n/);
  let found: { line: number; text: string } | undefined;
  for (let i = 0; i < lines.length; i++) {
    const text = lines[i]!;
    if (text.startsWith("#") || text.trim() === "") continue;
    if (found !== undefined) return issue(shown, i + 1, 1, "", `expected one line with the password (or name: password), and line ${found.line} is one already: remove this one (a # at its start makes it a comment)`);
    found = { line: i + 1, text };
  }
  if (found === undefined) return issue(shown, 0, 0, "", "has no password in it: write the password on a line of its own (or name: password to name the user; # starts a comment)");
  const named = NAMED.exec(found.text);
  const user = named ? named[1]! : DEFAULT_ADMIN;
  const password = named ? found.text.slice(named[0].length) : found.text;
  // Not repeated: what stands before ": " may be part of a password.
  if (named && !USER_NAME.test(user)) return issue(shown, found.line, 1, "user", "expected a user name of at most 64 characters without spaces before the first ': ' (a password with ': ' in it needs the name before it: admin: <password>)");
  const problem = passwordProblem(password);
  if (problem !== undefined) return issue(shown, found.line, named ? named[0].length + 1 : 1, "password", problem);
  return { user, password };
}

/** What a gateway.yaml gives a user: a role, maybe certificates (kept), maybe a password. */
interface UserValue {
  readonly certificates?: readonly string[] | undefined;
}

/**
 * The gateway.yaml `text` with `pw.user` an admin with `pw.password`, hashed as `fieldgate
 * password` does; `existing`: that user as the file has it, whose certificates stay.
 */
export async function withAdmin(text: string, pw: DrivePassword, existing: UserValue | undefined): Promise<{ readonly text: string } | { readonly error: string }> {
  const hash = await hashPassword(pw.password);
  const certificates = existing?.certificates;
  return setSectionEntry(text, "users", pw.user, { role: "admin", password: hash, ...(certificates !== undefined ? { certificates: [...certificates] } : {}) });
}
