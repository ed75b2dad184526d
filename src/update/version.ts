// Versions of the appliance image: what a gateway runs and what a bundle carries.
import { readFileSync } from "node:fs";
import { packageVersion } from "../package-info.js";

/**
 * Orders two versions in the manner of `systemd-analyze compare-versions`: runs of digits
 * compare as numbers, runs of letters alphabetically, '~' sorts before everything (the end
 * included: a pre-release), other characters only separate; a longer version whose common part
 * is equal is the greater. "0.1.0.202612011345" < "0.1.0.202612011345.1" < "0.1.1";
 * "1.0~rc1" < "1.0". Negative when a < b, 0 when equal, positive when a > b.
 */
export function compareVersions(a: string, b: string): number {
  let i = 0;
  let j = 0;
  const isAlnum = (c: string | undefined): boolean => c !== undefined && /[0-9A-Za-z~]/.test(c);
  for (;;) {
    while (i < a.length && !isAlnum(a[i])) i++;
    while (j < b.length && !isAlnum(b[j])) j++;
    // '~' sorts before anything, the end included.
    if (a[i] === "~" || b[j] === "~") {
      if (a[i] !== "~") return 1;
      if (b[j] !== "~") return -1;
      i++;
      j++;
      continue;
    }
    if (i >= a.length || j >= b.length) return (i < a.length ? 1 : 0) - (j < b.length ? 1 : 0);
    const digitA = /[0-9]/.test(a[i]);
    const digitB = /[0-9]/.test(b[j]);
    // A number sorts after letters at the same place.
    if (digitA !== digitB) return digitA ? 1 : -1;
    const re = digitA ? /[0-9]+/y : /[A-Za-z]+/y;
    re.lastIndex = i;
    const pa = re.exec(a)![0];
    re.lastIndex = j;
    const pb = re.exec(b)![0];
    i += pa.length;
    j += pb.length;
    if (digitA) {
      const na = pa.replace(/^0+/, "");
      const nb = pb.replace(/^0+/, "");
      if (na.length !== nb.length) return na.length - nb.length;
      if (na !== nb) return na < nb ? -1 : 1;
    } else if (pa !== pb) {
      return pa < pb ? -1 : 1;
    }
  }
}

/** What the running system is: an appliance image (os-release IMAGE_ID=fieldgate) or not. */
export interface RunningVersion {
  readonly version: string;
  /** True on the appliance image; false elsewhere (a checkout, a package), where updates do not apply. */
  readonly appliance: boolean;
}

/** From os-release (IMAGE_ID/IMAGE_VERSION, written by image/customize.sh), else package.json. */
export function runningVersion(osRelease = "/etc/os-release"): RunningVersion {
  try {
    const fields = parseOsRelease(readFileSync(osRelease, "utf8"));
    if (fields.IMAGE_ID === "fieldgate" && fields.IMAGE_VERSION) return { version: fields.IMAGE_VERSION, appliance: true };
  } catch {
    // No os-release: not the appliance.
  }
  return { version: packageVersion(), appliance: false };
}

/** os-release(5): KEY=value lines, values optionally quoted. */
export function parseOsRelease(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of text.split("\n")) {
    const m = /^([A-Z0-9_]+)=(.*)$/.exec(line.trim());
    if (!m) continue;
    let v = m[2];
    if (/^(["']).*\1$/.test(v)) v = v.slice(1, -1).replace(/\\(.)/g, "$1");
    out[m[1]] = v;
  }
  return out;
}
