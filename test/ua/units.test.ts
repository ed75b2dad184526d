// The UNECE units looked up in the generated table's text (src/ua/units.ts): every line is found
// by its code and by its display name (the first line of a shared name), a name listing
// spellings by each of them, and nothing that is not a whole field of a line.
import { describe, expect, it } from "vitest";
import { UNIT_TABLE } from "../../src/ua/generated/units.js";
import { UNECE_NAMESPACE_URI, unitByCode, unitByDisplayName, unitDisplayNames } from "../../src/ua/units.js";

const LINES = UNIT_TABLE.slice(1, -1).split("\n").map((l) => l.split("\t") as [string, string, string, string]);

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

  it("lists each display name and spelling once, for suggestions", () => {
    const names = unitDisplayNames();
    expect(new Set(names).size).toBe(names.length);
    for (const n of ["°C", "V", "kg/l or kg/L", "kg/l", "kg/L", "dt", "dtn"]) expect(names).toContain(n);
    expect(names).not.toContain("degree Celsius");
  });
});
