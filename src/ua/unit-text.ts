// How the generated UNECE table (generated/units.ts) writes a character past U+00FF: the six
// characters \uXXXX. A handful of the names (Ω, ‰, subscripts) would otherwise make V8 keep the
// whole table two bytes a character. The generator writes with it, src/ua/units.ts looks up with
// it and reads the fields back.

/** Text as the table writes it. */
export function tableText(text: string): string {
  return text.replace(/[^\u0000-\u00ff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);
}

/** A field of the table as it reads. */
export function fieldText(field: string): string {
  return field.includes("\\u") ? field.replace(/\\u([0-9a-f]{4})/g, (_, hex: string) => String.fromCharCode(parseInt(hex, 16))) : field;
}
