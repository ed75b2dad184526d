// StatusCode.csv -> src/ua/generated/status-codes.ts: the named codes and a code-to-name table.
import { generatedHeader, parseCsv, readSchemaFile, type GeneratedFile } from "./schema.js";

export function generateStatusCodes(): GeneratedFile[] {
  const rows = parseCsv(readSchemaFile("StatusCode.csv"));
  const lines: string[] = [generatedHeader("gen-status-codes.ts", ["StatusCode.csv"])];
  lines.push("/* eslint-disable */");
  lines.push("export const StatusCodes = {");
  for (const [name, code] of rows) {
    lines.push(`  ${name}: ${code},`);
  }
  lines.push("} as const;");
  lines.push("");
  lines.push("export type StatusCodeName = keyof typeof StatusCodes;");
  lines.push("");
  lines.push("const names = new Map<number, string>();");
  lines.push("for (const [name, code] of Object.entries(StatusCodes)) names.set(code, name);");
  lines.push("");
  lines.push("/** Descriptions of the codes, for messages shown to people. */");
  lines.push("export const StatusCodeDescriptions: Readonly<Record<StatusCodeName, string>> = {");
  for (const [name, , description] of rows) {
    lines.push(`  ${name}: ${JSON.stringify(description ?? "")},`);
  }
  lines.push("};");
  lines.push("");
  lines.push("/** The name of a code (flag bits of the low 16 bits are ignored), or its hex form. */");
  lines.push("export function statusCodeName(code: number): string {");
  lines.push("  const base = (code & 0xffff0000) >>> 0;");
  lines.push("  return names.get(base) ?? \"0x\" + (code >>> 0).toString(16).padStart(8, \"0\");");
  lines.push("}");
  lines.push("");
  return [{ path: "src/ua/generated/status-codes.ts", content: lines.join("\n") }];
}
