// Secondary addresses (EN 13757-3 §7, the network layer; The M-Bus documentation §7.1): a meter
// is selected by the 8 bytes of its identification, the ID (8 BCD digits), manufacturer, version
// and medium of its fixed header, sent to address 253 with CI 52h. Each ID digit may be the
// wildcard Fh, the manufacturer FFFFh, version and medium FFh: a selection with wildcards is
// answered by every meter that matches, which the search (scan.ts) narrows digit by digit.
//
// Written in the device map as the 8 digits of the ID ("12345678", F for a wildcard digit), or
// those and 8 hexadecimal digits more: the manufacturer's code (4), version (2) and medium (2),
// the form the scan prints ("06855817 2C2D 08 04" without the spaces).
import type { FixedHeader } from "./records.js";

export interface SecondaryAddress {
  /** 8 characters, 0-9 or F (a wildcard digit). */
  readonly id: string;
  /** The manufacturer code (2 bytes), FFFFh for any. */
  readonly manufacturer: number;
  /** FFh for any. */
  readonly version: number;
  /** FFh for any. */
  readonly medium: number;
}

export const ANY = { manufacturer: 0xffff, version: 0xff, medium: 0xff } as const;

export type ParsedSecondary = { readonly ok: true; readonly value: SecondaryAddress } | { readonly ok: false; readonly message: string };

export function parseSecondary(raw: unknown): ParsedSecondary {
  if (typeof raw === "number") return { ok: false, message: "quote it: a secondary address is text, its leading zeros and F wildcards count" };
  if (typeof raw !== "string") return { ok: false, message: "" };
  const t = raw.trim().toUpperCase();
  if (!/^[0-9F]{8}([0-9A-F]{8})?$/.test(t)) {
    if (/^[0-9A-F]+$/.test(t) && t.length !== 8 && t.length !== 16) return { ok: false, message: `it has ${t.length} digits` };
    if (/^[0-9A-F]{8}/.test(t) && /[A-E]/.test(t.slice(0, 8))) return { ok: false, message: "the ID's digits are 0-9, or F for any digit" };
    return { ok: false, message: "" };
  }
  const more = t.length === 16;
  return {
    ok: true,
    value: {
      id: t.slice(0, 8),
      manufacturer: more ? parseInt(t.slice(8, 12), 16) : ANY.manufacturer,
      version: more ? parseInt(t.slice(12, 14), 16) : ANY.version,
      medium: more ? parseInt(t.slice(14, 16), 16) : ANY.medium,
    },
  };
}

const hex = (n: number, digits: number): string => n.toString(16).toUpperCase().padStart(digits, "0");

/** The 16 hexadecimal digits of an address: ID, manufacturer, version, medium. */
export function formatSecondary(a: SecondaryAddress): string {
  return `${a.id}${hex(a.manufacturer, 4)}${hex(a.version, 2)}${hex(a.medium, 2)}`;
}

/** The data of a selection (SND_UD to 253, CI 52h): ID least significant byte first, manufacturer, version, medium. */
export function selectionData(a: SecondaryAddress): Buffer {
  const b = Buffer.alloc(8);
  for (let i = 0; i < 4; i++) b[i] = parseInt(a.id.slice(6 - 2 * i, 8 - 2 * i), 16);
  b.writeUInt16LE(a.manufacturer, 4);
  b[6] = a.version;
  b[7] = a.medium;
  return b;
}

/** The address of the meter whose fixed header this is (no wildcards). */
export function addressOf(h: FixedHeader): SecondaryAddress {
  const code = ((h.manufacturer.charCodeAt(0) - 64) << 10) | ((h.manufacturer.charCodeAt(1) - 64) << 5) | (h.manufacturer.charCodeAt(2) - 64);
  return { id: h.id, manufacturer: code & 0xffff, version: h.version, medium: h.medium };
}

/** Whether the meter of fixed header `h` answers a selection of `a` (wildcards match anything). */
export function matches(a: SecondaryAddress, h: FixedHeader): boolean {
  const m = addressOf(h);
  for (let i = 0; i < 8; i++) if (a.id[i] !== "F" && a.id[i] !== m.id[i]) return false;
  return (
    (a.manufacturer === ANY.manufacturer || a.manufacturer === m.manufacturer) &&
    (a.version === ANY.version || a.version === m.version) &&
    (a.medium === ANY.medium || a.medium === m.medium)
  );
}
