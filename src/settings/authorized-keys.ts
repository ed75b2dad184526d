// Checks an authorized_keys file the way sshd(8) reads it (AUTHORIZED_KEYS FILE FORMAT): one key
// per line, "[options] keytype base64-key [comment]", blank lines and # comments ignored; the
// issues come out like every config issue (file:line:column, what was expected). The mistakes
// people make from Windows are named: a private key pasted instead of the public one, PuTTY's
// multi-line public key format, a DSA key that OpenSSH no longer takes.
import type { ConfigIssue } from "../config/errors.js";

/** The key types sshd accepts (ssh-dss was removed in OpenSSH 10). */
const KEY_TYPES = [
  "ssh-ed25519",
  "ssh-rsa",
  "ecdsa-sha2-nistp256",
  "ecdsa-sha2-nistp384",
  "ecdsa-sha2-nistp521",
  "sk-ssh-ed25519@openssh.com",
  "sk-ecdsa-sha2-nistp256@openssh.com",
] as const;

export interface AuthorizedKeys {
  /** The key lines, trimmed, in the file's order; empty means "no key": SSH stays off. */
  readonly keys: readonly string[];
  readonly issues: readonly ConfigIssue[];
}

export function checkAuthorizedKeys(text: string, file: string): AuthorizedKeys {
  const issues: ConfigIssue[] = [];
  const keys: string[] = [];
  const lines = text.split(/\r?\n/);
  const at = (line: number, column: number, message: string): void => {
    issues.push({ file, line, column, path: "", message });
  };
  for (let i = 0; i < lines.length; i++) {
    const raw = lines[i]!;
    const lead = raw.length - raw.trimStart().length;
    const line = raw.trim();
    if (line === "" || line.startsWith("#")) continue;
    if (/^-----BEGIN .*PRIVATE KEY-----/.test(line)) {
      at(i + 1, lead + 1, "this is a private key, which must never leave your computer: put the one line of the public key here (the .pub file, starting with ssh-ed25519 or ssh-rsa)");
      break;
    }
    if (/^---- BEGIN SSH2 PUBLIC KEY ----/.test(line)) {
      at(i + 1, lead + 1, "this is PuTTY's public key format: in PuTTYgen, copy the one line under \"Public key for pasting into OpenSSH authorized_keys file\" instead");
      break;
    }
    const tokens = splitTokens(line);
    const typeAt = tokens.findIndex((t) => (KEY_TYPES as readonly string[]).includes(t.text));
    if (typeAt < 0) {
      const first = tokens[0]!;
      const message =
        first.text === "ssh-dss"
          ? "a DSA key (ssh-dss), which OpenSSH no longer accepts: make an Ed25519 key (ssh-keygen -t ed25519, or PuTTYgen's EdDSA)"
          : `expected a public key line "ssh-ed25519 AAAA... comment" (key types: ${KEY_TYPES.slice(0, 5).join(", ")}), got "${first.text.slice(0, 30)}"`;
      at(i + 1, lead + first.column, message);
      continue;
    }
    const type = tokens[typeAt]!.text;
    const blob = tokens[typeAt + 1];
    if (blob === undefined) {
      at(i + 1, lead + tokens[typeAt]!.column + type.length, `expected the key (base64, AAAA...) after ${type}`);
      continue;
    }
    const why = blobProblem(type, blob.text);
    if (why !== undefined) {
      at(i + 1, lead + blob.column, why);
      continue;
    }
    keys.push(line);
  }
  return { keys, issues };
}

/** Tokens separated by blanks, a quoted part ("from=\"a b\"") kept in one; columns are 1-based. */
function splitTokens(line: string): { text: string; column: number }[] {
  const out: { text: string; column: number }[] = [];
  let i = 0;
  while (i < line.length) {
    while (i < line.length && (line[i] === " " || line[i] === "\t")) i++;
    if (i >= line.length) break;
    const start = i;
    let quoted = false;
    while (i < line.length && (quoted || (line[i] !== " " && line[i] !== "\t"))) {
      if (line[i] === '"') quoted = !quoted;
      i++;
    }
    out.push({ text: line.slice(start, i), column: start + 1 });
  }
  return out;
}

/** The base64 blob must decode to an SSH wire-format key whose first string is the key type (RFC 4253 §6.6). */
function blobProblem(type: string, b64: string): string | undefined {
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(b64) || b64.length % 4 !== 0) return "the key is not valid base64: it was cut or changed while copying (copy the whole line again)";
  const bytes = Buffer.from(b64, "base64");
  if (bytes.length < 4) return "the key is too short: it was cut while copying";
  const n = bytes.readUInt32BE(0);
  if (n + 4 > bytes.length) return "the key is cut short: copy the whole line again";
  const inner = bytes.subarray(4, 4 + n).toString("latin1");
  if (inner !== type) return `the key says it is ${JSON.stringify(inner.slice(0, 40))}, not ${type}: the line was put together from two keys`;
  // The rest is length-prefixed strings (the key's numbers or points) that fill it exactly: a
  // key cut or joined while copying does not.
  let at = 4 + n;
  while (at + 4 <= bytes.length) at += 4 + bytes.readUInt32BE(at);
  if (at !== bytes.length) return "the key is cut short or has something added: copy the whole line again";
  return undefined;
}
