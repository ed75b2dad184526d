// NodeIds.csv -> src/ua/generated/node-ids.ts: numeric ids of namespace 0, one table per NodeClass.
import { generatedHeader, parseCsv, readSchemaFile, type GeneratedFile } from "./schema.js";

const tableByClass: Record<string, string> = {
  Object: "ObjectIds",
  Variable: "VariableIds",
  Method: "MethodIds",
  ObjectType: "ObjectTypeIds",
  VariableType: "VariableTypeIds",
  ReferenceType: "ReferenceTypeIds",
  DataType: "DataTypeIds",
  View: "ViewIds",
};

export function generateNodeIds(): GeneratedFile[] {
  const rows = parseCsv(readSchemaFile("NodeIds.csv"));
  const tables = new Map<string, string[]>();
  for (const t of Object.values(tableByClass)) tables.set(t, []);
  for (const [name, id, nodeClass] of rows) {
    const table = tableByClass[nodeClass];
    if (!table) throw new Error(`NodeIds.csv: unknown NodeClass ${nodeClass} for ${name}`);
    tables.get(table)!.push(`  ${name}: ${Number(id)},`);
  }
  const out: string[] = [generatedHeader("gen-node-ids.ts", ["NodeIds.csv", "AttributeIds.csv"])];
  for (const [table, entries] of tables) {
    out.push(`export const enum ${table} {`, ...entries.map((e) => e.replace(": ", " = ")), "}", "");
  }
  out.push("/** Attribute ids (Part 6 §A.1, AttributeIds.csv). */", "export const enum AttributeIds {");
  for (const [name, id] of parseCsv(readSchemaFile("AttributeIds.csv"))) out.push(`  ${name} = ${Number(id)},`);
  out.push("}", "");
  return [{ path: "src/ua/generated/node-ids.ts", content: out.join("\n") }];
}
