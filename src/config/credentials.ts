// The credentials a gateway.yaml gives its users, as config values: password hashes in the form
// `fieldgate password` prints (`$scrypt$ln=14,r=8,p=1$<salt>$<key>`, the PHC string format,
// base64 without '='), certificate thumbprints, and the role names. Checking a password against
// a hash is the server's (src/sessions/users.ts); config only reads and checks the text.

/** The roles a user may have, least privileged first (src/sessions/roles.ts says what each may do). */
export const ROLE_NAMES = ["viewer", "operator", "admin"] as const;

export interface ScryptParams {
  /** log2 of the CPU/memory cost N. */
  readonly logN: number;
  readonly r: number;
  readonly p: number;
}

/** A hash may not ask for more than this per check (128·N·r bytes): a config cannot exhaust RAM. */
export const MAX_SCRYPT_MEMORY = 256 * 1024 * 1024;

export interface PasswordHash {
  readonly params: ScryptParams;
  readonly salt: Buffer;
  readonly key: Buffer;
}

/** Memory one check of a hash with these parameters takes (128·N·r bytes). */
export function scryptMemory(p: ScryptParams): number {
  return 128 * 2 ** p.logN * p.r;
}

const HASH_RE = /^\$scrypt\$ln=(\d{1,2}),r=(\d{1,2}),p=(\d{1,2})\$([A-Za-z0-9+/]{11,64})\$([A-Za-z0-9+/]{22,128})$/;

/** Parses a hash string; returns a message for the config error when it is not one. */
export function parsePasswordHash(text: string): PasswordHash | string {
  const m = HASH_RE.exec(text);
  if (!m) return "a hash printed by `fieldgate password` ($scrypt$ln=..,r=..,p=..$salt$key)";
  const params = { logN: Number(m[1]), r: Number(m[2]), p: Number(m[3]) };
  if (params.logN < 10 || params.logN > 20 || params.r < 1 || params.p < 1 || params.p > 16) {
    return "scrypt parameters 10 <= ln <= 20, r >= 1 and 1 <= p <= 16";
  }
  if (scryptMemory(params) > MAX_SCRYPT_MEMORY) return `scrypt parameters that need at most ${MAX_SCRYPT_MEMORY >> 20} MiB (128·2^ln·r)`;
  const salt = Buffer.from(m[4]!, "base64");
  const key = Buffer.from(m[5]!, "base64");
  if (salt.length < 8 || key.length < 16) return "a salt of at least 8 bytes and a key of at least 16 bytes";
  return { params, salt, key };
}

/** Normalises a configured thumbprint (hex, any case, optional ':' or ' ' separators); undefined when not one. */
export function normaliseThumbprint(text: string): string | undefined {
  const hex = text.replace(/[:\s]/g, "").toLowerCase();
  return /^[0-9a-f]{40}$/.test(hex) ? hex : undefined;
}


/** The fewest characters a password set for a user may have (NIST SP 800-63B §5.1.1.2: at least 8). */
export const MIN_PASSWORD_LENGTH = 8;
/** The most: longer ones are a file pasted by mistake, not a password (SP 800-63B asks that 64 be allowed). */
export const MAX_PASSWORD_LENGTH = 1024;

/**
 * Why `password` cannot be a user's password, in words that never repeat it; undefined when it
 * can. Characters count as code points; control characters (a tab, an escape) and white space at
 * either end are refused because nobody sees them in the file and few can type them at a login.
 */
export function passwordProblem(password: string): string | undefined {
  const length = [...password].length;
  if (length < MIN_PASSWORD_LENGTH) return `expected at least ${MIN_PASSWORD_LENGTH} characters; this one is shorter`;
  if (length > MAX_PASSWORD_LENGTH) return `expected at most ${MAX_PASSWORD_LENGTH} characters; this one is longer`;
  // C0, DEL and C1 (Unicode's Cc category).
  if (/[\u0000-\u001f\u007f-\u009f]/.test(password)) return "expected no control characters (a tab, for example): type it again without";
  if (/^\s|\s$/u.test(password)) return "expected no space at its beginning or end: nobody sees it there";
  return undefined;
}
