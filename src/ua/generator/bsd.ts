// Opc.Ua.Types.bsd (an OPC Binary TypeDictionary, Part 5 Annex C) -> a small model the code
// generators read.
// The file is regular, machine-written XML with one element per tag and no mixed content except
// <opc:Documentation>, so a tag tokenizer is enough; no XML library is needed (or installed).

export interface BsdEnumValue {
  readonly name: string;
  readonly value: number;
}

export interface BsdEnum {
  readonly kind: "enum";
  readonly name: string;
  readonly lengthInBits: number;
  readonly isOptionSet: boolean;
  readonly values: readonly BsdEnumValue[];
  readonly documentation?: string;
}

export interface BsdField {
  readonly name: string;
  /** The type name with its prefix, e.g. `opc:Int32`, `ua:NodeId`, `tns:ReadValueId`. */
  readonly typeName: string;
  /** Name of the field that holds this field's element count (`NoOfX`), when it is an array. */
  readonly lengthField?: string;
  /** For optional fields / union members / bit fields: the controlling field. */
  readonly switchField?: string;
  readonly switchValue?: number;
  /** For `opc:Bit` fields: the number of bits (default 1). */
  readonly length?: number;
  /** The type the field was inherited from, when the bsd repeats an inherited field. */
  readonly sourceType?: string;
}

export interface BsdStructure {
  readonly kind: "structure";
  readonly name: string;
  readonly baseType?: string;
  readonly fields: readonly BsdField[];
  readonly documentation?: string;
}

export interface BsdOpaque {
  readonly kind: "opaque";
  readonly name: string;
  readonly lengthInBits?: number;
  readonly documentation?: string;
}

export type BsdType = BsdEnum | BsdStructure | BsdOpaque;

export interface BsdDictionary {
  readonly targetNamespace: string;
  /** Every type in file order. */
  readonly types: readonly BsdType[];
  readonly byName: ReadonlyMap<string, BsdType>;
}

/** One XML tag: `<name attrs>`, `</name>` or `<name attrs/>`, or a run of text between tags. */
interface Token {
  readonly type: "open" | "close" | "empty" | "text";
  readonly name: string;
  readonly attrs: Readonly<Record<string, string>>;
  /** Offset in the input, for error messages. */
  readonly at: number;
}

const ENTITIES: Record<string, string> = { lt: "<", gt: ">", amp: "&", quot: '"', apos: "'" };

function unescapeXml(s: string): string {
  return s.replace(/&(#x[0-9a-fA-F]+|#[0-9]+|[a-z]+);/g, (m, e: string) => {
    if (e.startsWith("#x")) return String.fromCodePoint(parseInt(e.slice(2), 16));
    if (e.startsWith("#")) return String.fromCodePoint(parseInt(e.slice(1), 10));
    return ENTITIES[e] ?? m;
  });
}

const ATTR = /([A-Za-z_][\w:.-]*)\s*=\s*(?:"([^"]*)"|'([^']*)')/g;

function tokenize(text: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  while (i < text.length) {
    const lt = text.indexOf("<", i);
    if (lt < 0) {
      if (text.slice(i).trim() !== "") tokens.push({ type: "text", name: unescapeXml(text.slice(i)), attrs: {}, at: i });
      break;
    }
    if (lt > i && text.slice(i, lt).trim() !== "") {
      tokens.push({ type: "text", name: unescapeXml(text.slice(i, lt)), attrs: {}, at: i });
    }
    if (text.startsWith("<!--", lt)) {
      const endc = text.indexOf("-->", lt + 4);
      if (endc < 0) throw new Error(`bsd: unterminated comment at ${lt}`);
      i = endc + 3;
      continue;
    }
    if (text.startsWith("<?", lt)) {
      const endp = text.indexOf("?>", lt + 2);
      if (endp < 0) throw new Error(`bsd: unterminated processing instruction at ${lt}`);
      i = endp + 2;
      continue;
    }
    const gt = text.indexOf(">", lt);
    if (gt < 0) throw new Error(`bsd: unterminated tag at ${lt}`);
    let body = text.slice(lt + 1, gt);
    let type: Token["type"] = "open";
    if (body.startsWith("/")) {
      type = "close";
      body = body.slice(1);
    } else if (body.endsWith("/")) {
      type = "empty";
      body = body.slice(0, -1);
    }
    const m = /^\s*([A-Za-z_][\w:.-]*)/.exec(body);
    if (!m) throw new Error(`bsd: malformed tag at ${lt}`);
    const attrs: Record<string, string> = {};
    const rest = body.slice(m[0].length);
    ATTR.lastIndex = 0;
    for (let a = ATTR.exec(rest); a; a = ATTR.exec(rest)) attrs[a[1]] = unescapeXml(a[2] ?? a[3] ?? "");
    tokens.push({ type, name: m[1], attrs, at: lt });
    i = gt + 1;
  }
  return tokens;
}

function int(s: string | undefined, what: string): number | undefined {
  if (s === undefined) return undefined;
  const n = Number(s);
  if (!Number.isInteger(n)) throw new Error(`bsd: ${what} is not an integer: ${s}`);
  return n;
}

/** Parses the text of an OPC Binary type dictionary (Opc.Ua.Types.bsd). */
export function parseBsd(text: string): BsdDictionary {
  const tokens = tokenize(text.replace(/^\uFEFF/, ""));
  const types: BsdType[] = [];
  let targetNamespace = "";
  // The type being read, with its children collected as they come.
  let current: { tag: string; attrs: Record<string, string>; fields: BsdField[]; values: BsdEnumValue[]; doc?: string } | undefined;
  let inDoc = false;

  const finish = (): void => {
    if (!current) return;
    const a = current.attrs;
    const name = a.Name;
    if (!name) throw new Error(`bsd: ${current.tag} without a Name`);
    if (current.tag === "opc:EnumeratedType") {
      types.push({
        kind: "enum",
        name,
        lengthInBits: int(a.LengthInBits, `${name}.LengthInBits`) ?? 32,
        isOptionSet: a.IsOptionSet === "true",
        values: current.values,
        documentation: current.doc,
      });
    } else if (current.tag === "opc:StructuredType") {
      types.push({ kind: "structure", name, baseType: a.BaseType, fields: current.fields, documentation: current.doc });
    } else {
      types.push({ kind: "opaque", name, lengthInBits: int(a.LengthInBits, `${name}.LengthInBits`), documentation: current.doc });
    }
    current = undefined;
  };

  for (const t of tokens) {
    if (t.type === "text") {
      if (inDoc && current) current.doc = (current.doc ?? "") + t.name.trim();
      continue;
    }
    switch (t.name) {
      case "opc:TypeDictionary":
        if (t.type !== "close") targetNamespace = t.attrs.TargetNamespace ?? "";
        break;
      case "opc:EnumeratedType":
      case "opc:StructuredType":
      case "opc:OpaqueType":
        if (t.type === "close") {
          finish();
        } else {
          if (current) throw new Error(`bsd: ${t.name} nested in ${current.tag} at ${t.at}`);
          current = { tag: t.name, attrs: { ...t.attrs }, fields: [], values: [] };
          if (t.type === "empty") finish();
        }
        break;
      case "opc:Documentation":
        inDoc = t.type === "open";
        break;
      case "opc:Field": {
        if (t.type === "close") break;
        if (!current || current.tag !== "opc:StructuredType") throw new Error(`bsd: Field outside a StructuredType at ${t.at}`);
        const a = t.attrs;
        if (!a.Name || !a.TypeName) throw new Error(`bsd: Field without Name or TypeName at ${t.at}`);
        current.fields.push({
          name: a.Name,
          typeName: a.TypeName,
          lengthField: a.LengthField,
          switchField: a.SwitchField,
          switchValue: int(a.SwitchValue, `${a.Name}.SwitchValue`),
          length: int(a.Length, `${a.Name}.Length`),
          sourceType: a.SourceType,
        });
        break;
      }
      case "opc:EnumeratedValue": {
        if (t.type === "close") break;
        if (!current || current.tag !== "opc:EnumeratedType") throw new Error(`bsd: EnumeratedValue outside an EnumeratedType at ${t.at}`);
        const v = int(t.attrs.Value, `${t.attrs.Name}.Value`);
        if (!t.attrs.Name || v === undefined) throw new Error(`bsd: EnumeratedValue without Name or Value at ${t.at}`);
        current.values.push({ name: t.attrs.Name, value: v });
        break;
      }
      case "opc:Import":
        break;
      default:
        throw new Error(`bsd: unexpected element ${t.name} at ${t.at}`);
    }
  }
  if (current) throw new Error(`bsd: ${current.tag} ${current.attrs.Name} not closed`);
  const byName = new Map<string, BsdType>();
  for (const t of types) {
    if (byName.has(t.name)) throw new Error(`bsd: duplicate type ${t.name}`);
    byName.set(t.name, t);
  }
  return { targetNamespace, types, byName };
}

/** `tns:ReadRequest` -> `ReadRequest`; `opc:Int32` -> `Int32`. */
export function localName(typeName: string): string {
  const i = typeName.indexOf(":");
  return i < 0 ? typeName : typeName.slice(i + 1);
}
