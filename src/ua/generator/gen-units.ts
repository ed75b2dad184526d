// UNECE_to_OPCUA.csv -> src/ua/generated/units.ts: the UNECE Recommendation 20 units with the
// UnitId that OPC UA derives from their code (Part 8 §5.6.3), for the EngineeringUnits property
// (EUInformation) of device tags. A device map names a unit by its display name ("°C"); a few
// display names are shared by several codes (V: volt, volt AC, volt DC), the first in the file
// wins and the others are reachable by their code. A name listing spellings ("% or pct") is
// found by each of them.
import { tableText } from "../unit-text.js";
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
  // One string, a line per unit, rather than an array of arrays: a gateway looks up the few
  // units its map names (src/ua/units.ts), and the whole table as objects would stay in its heap.
  const lines: string[] = [];
  for (const [code, unitId, displayName, description] of rows) {
    const id = Number(unitId);
    if (!code || !Number.isInteger(id)) throw new Error(`UNECE_to_OPCUA.csv: bad row ${JSON.stringify([code, unitId])}`);
    for (const field of [code, displayName ?? "", description ?? ""]) {
      if (/[\t\n]/.test(field)) throw new Error(`UNECE_to_OPCUA.csv: a tab or line break in ${JSON.stringify(field)}`);
    }
    if ([code, displayName ?? "", description ?? ""].some((f) => f.includes("\\"))) throw new Error(`UNECE_to_OPCUA.csv: a backslash in the row of ${code}`);
    lines.push(tableText(`${code}\t${id}\t${displayName ?? ""}\t${description ?? ""}`));
  }
  out.push("/**");
  out.push(" * Code, UnitId, display name and description, tab-separated, a line each, in the order of the");
  out.push(" * CSV; the text starts and ends with a line break. A character past U+00FF is written \\uXXXX.");
  out.push(" */");
  out.push("export const UNIT_TABLE =");
  // A literal per line, so that the generated file stays readable and diffs stay small.
  out.push(`  "\\n" +`);
  for (const line of lines) out.push(`  ${JSON.stringify(line + "\n")} +`);
  out.push(`  "";`);
  out.push("");
  return [{ path: "src/ua/generated/units.ts", content: out.join("\n") }];
}
