// UNECE_to_OPCUA.csv -> src/ua/generated/units.ts: the UNECE Recommendation 20 units with the
// UnitId that OPC UA derives from their code (Part 8 §5.6.3), for the EngineeringUnits property
// (EUInformation) of device tags. A device map names a unit by its display name ("°C"); a few
// display names are shared by several codes (V: volt, volt AC, volt DC), the first in the file
// wins and the others are reachable by their code. A name listing spellings ("% or pct") is
// found by each of them.
import { generatedHeader, parseCsv, readSchemaFile, type GeneratedFile } from "./schema.js";

export function generateUnits(): GeneratedFile[] {
  const rows = parseCsv(readSchemaFile("UNECE_to_OPCUA.csv"));
  const header = rows.shift();
  if (!header || header[0] !== "UNECECode" || header[1] !== "UnitId" || header[2] !== "DisplayName") {
    throw new Error("UNECE_to_OPCUA.csv: unexpected header " + JSON.stringify(header));
  }
  const out: string[] = [generatedHeader("gen-units.ts", ["UNECE_to_OPCUA.csv"])];
  out.push("/* eslint-disable */");
  out.push("");
  out.push("/** EUInformation.namespaceUri of every UNECE unit (Part 8 §5.6.3). */");
  out.push('export const UNECE_NAMESPACE_URI = "http://www.opcfoundation.org/UA/units/un/cefact";');
  out.push("");
  out.push("/** One UNECE unit: its common code, OPC UA UnitId, display name and description. */");
  out.push("export interface UneceUnit {");
  out.push("  readonly code: string;");
  out.push("  readonly unitId: number;");
  out.push("  readonly displayName: string;");
  out.push("  readonly description: string;");
  out.push("}");
  out.push("");
  out.push("/** [code, unitId, displayName, description], in the order of the CSV. */");
  out.push("const TABLE: ReadonlyArray<readonly [string, number, string, string]> = [");
  for (const [code, unitId, displayName, description] of rows) {
    const id = Number(unitId);
    if (!code || !Number.isInteger(id)) throw new Error(`UNECE_to_OPCUA.csv: bad row ${JSON.stringify([code, unitId])}`);
    out.push(`  [${JSON.stringify(code)}, ${id}, ${JSON.stringify(displayName ?? "")}, ${JSON.stringify(description ?? "")}],`);
  }
  out.push("];");
  out.push("");
  out.push("let byName: Map<string, UneceUnit> | undefined;");
  out.push("let byCode: Map<string, UneceUnit> | undefined;");
  out.push("");
  out.push("function index(): void {");
  out.push("  byName = new Map();");
  out.push("  byCode = new Map();");
  out.push("  for (const [code, unitId, displayName, description] of TABLE) {");
  out.push("    const unit: UneceUnit = { code, unitId, displayName, description };");
  out.push("    if (!byName.has(displayName)) byName.set(displayName, unit);");
  out.push("    byCode.set(code, unit);");
  out.push("  }");
  out.push("  // \"% or pct\", \"kg/l or kg/L\": each spelling names the unit, and is what it displays.");
  out.push("  for (const [code, unitId, displayName, description] of TABLE) {");
  out.push("    if (!displayName.includes(\" or \")) continue;");
  out.push("    for (const alt of displayName.split(\" or \")) {");
  out.push("      if (!byName.has(alt)) byName.set(alt, { code, unitId, displayName: alt, description });");
  out.push("    }");
  out.push("  }");
  out.push("}");
  out.push("");
  out.push("/** The unit with this display name (the first in the table when several share it). */");
  out.push("export function unitByDisplayName(name: string): UneceUnit | undefined {");
  out.push("  if (!byName) index();");
  out.push("  return byName!.get(name);");
  out.push("}");
  out.push("");
  out.push("/** The unit with this UNECE common code (\"CEL\"). */");
  out.push("export function unitByCode(code: string): UneceUnit | undefined {");
  out.push("  if (!byCode) index();");
  out.push("  return byCode!.get(code);");
  out.push("}");
  out.push("");
  out.push("/** Every display name, for suggestions. */");
  out.push("export function unitDisplayNames(): string[] {");
  out.push("  if (!byName) index();");
  out.push("  return [...byName!.keys()];");
  out.push("}");
  out.push("");
  return [{ path: "src/ua/generated/units.ts", content: out.join("\n") }];
}
