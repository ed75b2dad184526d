// The UNECE units looked up in the generated table's text (src/ua/units.ts): every line is found
// by its code and by its display name (the first line of a shared name), a name listing
// spellings by each of them, and nothing that is not a whole field of a line.
import { describe, expect, it } from "vitest";
import { UNIT_TABLE } from "../../src/ua/generated/units.js";
import { UNECE_NAMESPACE_URI, unitByCode, unitByDisplayName, unitDisplayNames } from "../../src/ua/units.js";

/** A field as the table writes it, read as JSON reads a string (the table writes \\uXXXX past U+00FF). */
const read = (f: string): string => JSON.parse(`"${f.replace(/"/g, '\\"')}"`) as string;
const LINES = UNIT_TABLE.slice(1, -1)
  .split("\n")
  .map((l) => l.split("\t").map(read) as [string, string, string, string]);

describe("UNECE units", () => {
  it("has the table of UNECE_to_OPCUA.csv, one line per unit", () => {
    expect(UNECE_NAMESPACE_URI).toBe("http://www.opcfoundation.org/UA/units/un/cefact");
    expect(LINES.length).toBeGreaterThan(1800);
    for (const line of LINES) expect(line).toHaveLength(4);
  });

  it("finds every line by its code", () => {
    for (const [code, unitId, displayName, description] of LINES) {
      expect(unitByCode(code)).toEqual({ code, unitId: Number(unitId), displayName, description });
    }
    expect(unitByCode("CEL")).toEqual({ code: "CEL", unitId: 4408652, displayName: "°C", description: "degree Celsius" });
  });

  it("finds a display name's first line: V is the volt, not volt AC or DC (reached by their codes)", () => {
    const first = new Map<string, string>();
    for (const [code, , displayName] of LINES) if (!first.has(displayName)) first.set(displayName, code);
    for (const [name, code] of first) expect(unitByDisplayName(name)?.code, name).toBe(code);
    expect(unitByDisplayName("V")?.description).toBe("volt");
    expect(unitByCode("2G")?.description).toBe("volt AC");
  });

  it("finds a name that lists spellings by each, displaying the one asked for", () => {
    expect(unitByDisplayName("kg/L")).toEqual({ code: "B35", unitId: 4338485, displayName: "kg/L", description: "kilogram per litre" });
    expect(unitByDisplayName("kg/l")?.code).toBe("B35");
    expect(unitByDisplayName("kg/l or kg/L")?.displayName).toBe("kg/l or kg/L");
    expect(unitByDisplayName("dtn")?.code).toBe("DTN");
  });

  it("finds nothing for a part of a field, another column, or text that no line could hold", () => {
    // "degree Celsius" is a description, "4408652" a UnitId, "°" a display name's first character
    // only in some lines but a name of its own in another: each asked for as what it is not.
    expect(unitByDisplayName("degree Celsius")).toBeUndefined();
    expect(unitByDisplayName("4408652")).toBeUndefined();
    expect(unitByDisplayName("CEL")).toBeUndefined();
    expect(unitByCode("°C")).toBeUndefined();
    expect(unitByCode("CE")).toBeUndefined();
    expect(unitByDisplayName("")).toBeUndefined();
    expect(unitByDisplayName("°C\tdegree Celsius")).toBeUndefined();
    expect(unitByCode("CEL\n")).toBeUndefined();
    expect(unitByDisplayName("ton")).toBeUndefined();
  });

  it("keeps the table one byte a character, and finds and gives the names past U+00FF as they are", () => {
    // V8 keeps a string with one character past U+00FF two bytes a character, the whole table.
    expect([...UNIT_TABLE].filter((c) => c.charCodeAt(0) > 0xff)).toEqual([]);
    expect(LINES.some(([, , name]) => /[^\u0000-\u00ff]/.test(name))).toBe(true);
    expect(unitByDisplayName("H/\u2126")).toEqual({ code: "H04", unitId: 4730932, displayName: "H/\u2126", description: "henry per ohm" });
    expect(unitByCode("H04")?.displayName).toBe("H/\u2126");
    expect(unitDisplayNames()).toContain("H/\u2126");
    // The table's own writing of a name is not a name.
    expect(unitByDisplayName("H/\\u2126")).toBeUndefined();
  });

  it("lists each display name and spelling once, for suggestions", () => {
    const names = unitDisplayNames();
    expect(new Set(names).size).toBe(names.length);
    for (const n of ["°C", "V", "kg/l or kg/L", "kg/l", "kg/L", "dt", "dtn"]) expect(names).toContain(n);
    expect(names).not.toContain("degree Celsius");
  });
});
