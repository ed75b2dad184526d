// Opc.Ua.NodeSet2.xml -> src/ua/generated/ns0.ts: the reduced, read-only namespace 0.
//
// What is kept (DESIGN: "a reduced namespace 0 ... types that clients resolve, the Server object"):
// - every ReferenceType, DataType, ObjectType and VariableType node, but the InstanceDeclarations
//   below them only for the types in DECLARATION_TYPES (the events, conditions and diagnostics the
//   server shows; ServerType's components etc. are left out): clients resolve type hierarchies,
//   they do not need the declarations of a type they never see an instance of;
// - the EnumStrings / EnumValues / OptionSetValues properties of DataTypes (Part 3 §5.8.3, clients
//   read them to show enumerations) and each DataType's "Default Binary" encoding object
//   (Part 3 §5.8.4, HasEncoding);
// - the DataTypeDefinition attribute of DataTypes (Part 3 §5.8.2), compactly, without field
//   descriptions;
// - Root, Objects, Types, Views and the type folders; the ModellingRule objects;
// - the Server object with the children listed in SERVER_CHILDREN, among them
//   ServerCapabilities.HistoryServerCapabilities (Part 11 §5.4.2) and DefaultHAConfiguration
//   (Part 11 §5.7.3: the configuration of every historized Variable that references none);
// - the aggregate function objects of the processed reads fieldgate implements, organized by the
//   three AggregateFunctions folders (Part 13 §4.2.2.1).
// Every reference whose target is not kept is dropped and every kept reference gets its inverse,
// so a client browsing from Root finds nothing dangling.
import { generatedHeader, readSchemaFile, type GeneratedFile } from "./schema.js";

// ---------------------------------------------------------------------------------------------
// A minimal XML reader for the NodeSet2 format: elements, attributes, text, comments, the
// declaration. No DTDs, no namespaces beyond ignoring prefixes, no CDATA (NodeSet2 has none).

interface XmlElement {
  name: string;
  attrs: Record<string, string>;
  children: XmlElement[];
  text: string;
}

const ENTITIES: Record<string, string> = { lt: "<", gt: ">", amp: "&", quot: '"', apos: "'" };

function decodeEntities(s: string): string {
  if (!s.includes("&")) return s;
  return s.replace(/&(#x[0-9a-fA-F]+|#[0-9]+|[a-z]+);/g, (m, e: string) => {
    if (e[0] === "#") return String.fromCodePoint(e[1] === "x" ? parseInt(e.slice(2), 16) : parseInt(e.slice(1), 10));
    const r = ENTITIES[e];
    if (r === undefined) throw new Error(`unknown XML entity ${m}`);
    return r;
  });
}

function parseXml(src: string): XmlElement {
  const root: XmlElement = { name: "#document", attrs: {}, children: [], text: "" };
  const stack: XmlElement[] = [root];
  const attrRe = /([A-Za-z_:][-A-Za-z0-9_:.]*)\s*=\s*("([^"]*)"|'([^']*)')/g;
  let i = 0;
  while (i < src.length) {
    const lt = src.indexOf("<", i);
    if (lt < 0) break;
    if (lt > i) stack[stack.length - 1].text += decodeEntities(src.slice(i, lt));
    if (src.startsWith("<!--", lt)) {
      const end = src.indexOf("-->", lt);
      if (end < 0) throw new Error("unterminated comment");
      i = end + 3;
      continue;
    }
    if (src.startsWith("<?", lt)) {
      i = src.indexOf("?>", lt) + 2;
      continue;
    }
    const gt = src.indexOf(">", lt);
    if (gt < 0) throw new Error("unterminated tag");
    const tag = src.slice(lt + 1, gt);
    i = gt + 1;
    if (tag[0] === "/") {
      const name = tag.slice(1).trim();
      const top = stack.pop();
      if (!top || top.name !== name) throw new Error(`mismatched </${name}> at ${lt}`);
      continue;
    }
    const selfClosing = tag.endsWith("/");
    const body = selfClosing ? tag.slice(0, -1) : tag;
    const m = /^[^\s]+/.exec(body);
    if (!m) throw new Error(`bad tag at ${lt}`);
    const el: XmlElement = { name: m[0], attrs: {}, children: [], text: "" };
    attrRe.lastIndex = m[0].length;
    for (let a = attrRe.exec(body); a; a = attrRe.exec(body)) el.attrs[a[1]] = decodeEntities(a[3] ?? a[4]);
    stack[stack.length - 1].children.push(el);
    if (!selfClosing) stack.push(el);
  }
  if (stack.length !== 1) throw new Error("unclosed element " + stack[stack.length - 1].name);
  return root;
}

function child(el: XmlElement, name: string): XmlElement | undefined {
  return el.children.find((c) => c.name === name);
}

// ---------------------------------------------------------------------------------------------
// The model read from the NodeSet.

const NODE_CLASS: Record<string, number> = {
  UAObject: 1,
  UAVariable: 2,
  UAMethod: 4,
  UAObjectType: 8,
  UAVariableType: 16,
  UAReferenceType: 32,
  UADataType: 64,
  UAView: 128,
};

interface RawRef {
  type: number;
  target: number;
  forward: boolean;
}

interface RawNode {
  id: number;
  nodeClass: number;
  el: XmlElement;
  browseName: string;
  refs: RawRef[];
}

// Well-known ids used by the selection (Part 5 / NodeIds.csv).
const HasSubtype = 45;
const HasProperty = 46;
const HasEncoding = 38;
const Organizes = 35;
const HasComponent = 47;
const HasModellingRule = 37;
const MANDATORY = 78;

const FOLDERS = [84, 85, 86, 87, 88, 89, 90, 91, 3048, 17708];
const MODELLING_RULES = [78, 80, 83, 11508, 11510];
/**
 * Interpolative, Average, Minimum, Maximum, Count, Start, End: what ReadProcessed accepts
 * (SUPPORTED_AGGREGATES in src/history/aggregates.ts; test/history/capabilities.test.ts checks
 * that the two lists agree).
 */
const AGGREGATES = [2341, 2342, 2346, 2347, 2352, 2357, 2358];
/** ServerCapabilities/AggregateFunctions, HistoryServerCapabilities/AggregateFunctions, DefaultHAConfiguration/AggregateFunctions. */
const AGGREGATE_FOLDERS = [2997, 11201, 32643];
const SERVER_CHILDREN = [
  2253, // Server
  2254, 2255, // ServerArray, NamespaceArray
  2256, 2257, 2258, 2259, 2260, 2261, 2262, 2263, 2264, 2265, 2266, 2992, 2993, // ServerStatus
  2267, 2994, // ServiceLevel, Auditing
  2268, 2269, 2271, 2272, 2735, 2736, 2737, 3704, 11702, 11703, 12911, // ServerCapabilities
  24095, 24096, 24097, 24098, 24104, 31916, // MaxSessions ... MaxMonitoredItemsQueueSize
  2996, 2997, // ModellingRules, AggregateFunctions folders
  11704, 11705, 12165, 12166, 11707, 12167, 12168, 11709, 11710, 11711, 11712, 11713, 11714, // OperationLimits
  2274, 2294, // ServerDiagnostics, EnabledFlag
  2275, 2276, 2277, 2278, 2279, 3705, 2281, 2282, 2284, 2285, 2286, 2287, 2288, // ServerDiagnosticsSummary
  2296, 3709, // ServerRedundancy, RedundancySupport
  // Base Info Diagnostics (Part 5 §6.3.3): the arrays and the sessions' summary beside the summary.
  2289, 2290, 3706, 3707, 3708,
  // MaxSelectClauseParameters, MaxWhereClauseParameters (Part 5 §6.3.2): the EventFilter limits.
  24099, 24100,
  // Part 5 §9.1, §9.3, §9.4: GetMonitoredItems, ResendData, SetSubscriptionDurable with their
  // arguments; RequestServerStateChange (§9.5), which fieldgate does not run (Executable false).
  11492, 11493, 11494, 12873, 12874, 12749, 12750, 12751, 12886, 12887,
  // HistoryServerCapabilities (Part 11 §5.4.2): every property, the AggregateFunctions folder.
  11192, 11193, 11242, 11273, 11274, 11196, 11197, 11198, 11199, 11200, 11281, 11282, 11283, 11502, 11275, 11201, 19091,
  // DefaultHAConfiguration (Part 11 §5.7.3) with AggregateConfiguration, AggregateFunctions,
  // Stepped, ExceptionDeviation(Format), ServerTimestampSupported, MaxTimeStoredValues. Left out:
  // Definition, Min/MaxTimeInterval (each tag has its own poll rate), StartOf(Online)Archive (the
  // oldest sample of thousands of tables is not worth a query per read) and MaxCountStoredValues
  // (retention is by age and size, not by count).
  32637, 32638, 32639, 32640, 32641, 32642, 32643, 32644, 32648, 32649, 32682, 32752,
];
/**
 * References a running server has that the NodeSet leaves to the server (Part 5 §6.3.2:
 * ServerCapabilities.ModellingRules and AggregateFunctions list what the server supports).
 */
const ADDED_REFS: Array<[number, number, number]> = [
  ...MODELLING_RULES.map((r): [number, number, number] => [2996, Organizes, r]),
  ...AGGREGATE_FOLDERS.flatMap((f) => AGGREGATES.map((a): [number, number, number] => [f, Organizes, a])),
];
const DATATYPE_PROPERTIES = new Set(["EnumStrings", "EnumValues", "OptionSetValues"]);

/**
 * Types whose InstanceDeclarations are kept, with how many levels below the type (Infinity: all):
 * the EventTypes fieldgate raises (a client builds its select clauses from their fields, Part 4
 * §7.22.3), the Condition and Alarm types of its communication-failure alarm (Part 9 §5.5, §5.7,
 * §5.8) with their state variables, and the diagnostics types of Part 5 §6.3.3 - §6.3.9 whose
 * instances the server shows. Embedded 2017 (Part 7) asks that the types a server uses be exposed
 * with their components. Below each type: Mandatory declarations, the Optional ones in
 * OPTIONAL_DECLARATIONS (fieldgate fills them), and the type-level nodes without a ModellingRule
 * (TrueState/FalseState of a TwoStateVariable, ConditionType's ConditionRefresh methods).
 */
const DECLARATION_TYPES: ReadonlyArray<readonly [number, number]> = [
  // BaseEventType, AuditEventType and the audit events of sessions, channels, certificates,
  // writes and method calls (Part 5 §6.4.3 - §6.4.27).
  [2041, Infinity], [2052, Infinity], [2058, Infinity], [2059, Infinity], [2060, Infinity], [2069, Infinity],
  [2071, Infinity], [2075, Infinity], [2080, Infinity], [2100, Infinity], [2127, Infinity],
  // SystemStatusChangeEventType, GeneralModelChangeEventType (Part 5 §6.4.31, §6.4.33).
  [11446, Infinity], [2133, Infinity],
  // ConditionType, AcknowledgeableConditionType, AlarmConditionType, OffNormalAlarmType,
  // LimitAlarmType, ExclusiveLimitAlarmType and its state machine (Part 9 §5.5.2, §5.7.2,
  // §5.8.2, §5.8.23, §5.8.18, §5.8.19).
  [2782, Infinity], [2881, Infinity], [2915, Infinity], [10637, Infinity], [2955, Infinity], [9341, Infinity], [9318, Infinity],
  // The variable types of condition states: TwoStateVariableType, ConditionVariableType,
  // StateVariableType, FiniteStateVariableType (Part 9 §5.3, Part 5 §B.4).
  [8995, Infinity], [9002, Infinity], [2755, Infinity], [2760, Infinity],
  // Diagnostics structures (Part 5 §7.6 - §7.13) and the object per session (Part 5 §6.3.6).
  [2150, Infinity], [2165, Infinity], [2172, Infinity], [2197, Infinity], [2244, Infinity], [2029, 1], [2026, 1], [2020, 1],
];
/** Optional InstanceDeclarations fieldgate fills in the events it raises. */
const OPTIONAL_DECLARATIONS = new Set([
  17615, // AuditSecurityEventType StatusCodeId
  9016, // ConditionType EnabledState/TransitionTime
  9098, // AcknowledgeableConditionType AckedState/TransitionTime
  9102, 9107, // ConfirmedState, its TransitionTime
  9113, // Confirm
  9165, // AlarmConditionType ActiveState/TransitionTime
  9000, // TwoStateVariableType TransitionTime
  11110, 11111, // TwoStateVariableType TrueState, FalseState
  11124, 11125, 11126, 11127, // LimitAlarmType HighHighLimit, HighLimit, LowLimit, LowLowLimit
]);

function numericId(text: string, aliases: Map<string, string>): number {
  const s = (aliases.get(text.trim()) ?? text).trim();
  const m = /^i=(\d+)$/.exec(s);
  if (!m) throw new Error(`not a namespace 0 numeric NodeId: ${text}`);
  return Number(m[1]);
}

function loadNodes(): { nodes: Map<number, RawNode>; aliases: Map<string, string> } {
  const doc = parseXml(readSchemaFile("Opc.Ua.NodeSet2.xml"));
  const set = doc.children.find((c) => c.name === "UANodeSet");
  if (!set) throw new Error("no UANodeSet");
  const aliases = new Map<string, string>();
  for (const a of child(set, "Aliases")?.children ?? []) aliases.set(a.attrs.Alias, a.text.trim());
  const nodes = new Map<number, RawNode>();
  for (const el of set.children) {
    const nodeClass = NODE_CLASS[el.name];
    if (!nodeClass) continue;
    const id = numericId(el.attrs.NodeId, aliases);
    const refs: RawRef[] = [];
    for (const r of child(el, "References")?.children ?? []) {
      refs.push({
        type: numericId(r.attrs.ReferenceType, aliases),
        target: numericId(r.text, aliases),
        forward: r.attrs.IsForward !== "false",
      });
    }
    nodes.set(id, { id, nodeClass, el, browseName: el.attrs.BrowseName, refs });
  }
  return { nodes, aliases };
}

function selectNodes(nodes: Map<number, RawNode>): Set<number> {
  const keep = new Set<number>();
  const add = (id: number): void => {
    if (!nodes.has(id)) throw new Error(`i=${id} is not in the NodeSet`);
    keep.add(id);
  };
  for (const n of nodes.values()) if (n.nodeClass >= 8) keep.add(n.id);
  for (const n of nodes.values()) {
    if (n.nodeClass !== 64) continue;
    for (const r of n.refs) {
      const t = nodes.get(r.target);
      if (!r.forward || !t) continue;
      if (r.type === HasProperty && DATATYPE_PROPERTIES.has(t.browseName)) keep.add(t.id);
      if (r.type === HasEncoding && t.browseName === "Default Binary") keep.add(t.id);
    }
  }
  // Encodings and properties that only name their DataType through an inverse reference.
  for (const n of nodes.values()) {
    for (const r of n.refs) {
      if (r.forward || nodes.get(r.target)?.nodeClass !== 64) continue;
      if (r.type === HasProperty && DATATYPE_PROPERTIES.has(n.browseName)) keep.add(n.id);
      if (r.type === HasEncoding && n.browseName === "Default Binary") keep.add(n.id);
    }
  }
  for (const id of [...FOLDERS, ...MODELLING_RULES, ...AGGREGATES, ...SERVER_CHILDREN]) add(id);
  for (const [typeId, depth] of DECLARATION_TYPES) keepDeclarations(nodes, typeId, depth, keep);
  return keep;
}

/** Adds the InstanceDeclarations below `parentId` (see DECLARATION_TYPES) to `keep`. */
function keepDeclarations(nodes: Map<number, RawNode>, parentId: number, depth: number, keep: Set<number>): void {
  if (depth <= 0) return;
  const parent = nodes.get(parentId);
  if (!parent) throw new Error(`i=${parentId} is not in the NodeSet`);
  for (const r of parent.refs) {
    if (!r.forward || (r.type !== HasComponent && r.type !== HasProperty)) continue;
    const child = nodes.get(r.target);
    if (!child || child.nodeClass > 4) continue;
    const rule = child.refs.find((c) => c.forward && c.type === HasModellingRule)?.target;
    if (rule !== undefined && rule !== MANDATORY && !OPTIONAL_DECLARATIONS.has(child.id)) continue;
    keep.add(child.id);
    keepDeclarations(nodes, child.id, depth - 1, keep);
  }
}

// ---------------------------------------------------------------------------------------------
// Values and definitions, reduced to JSON-able tuples the runtime turns into Variants.

/** [locale, text]; locale "" when absent. */
type LText = [string, string];

function ltext(el: XmlElement | undefined): LText {
  if (!el) return ["", ""];
  if (el.children.length === 0) return [el.attrs.Locale ?? "", el.text.trim()];
  return [child(el, "Locale")?.text.trim() ?? "", child(el, "Text")?.text ?? ""];
}

/** Value kinds of the generated table; the runtime switches on them. */
const V_LTEXT_ARRAY = 0;
const V_ENUMVALUES = 1;
const V_STRING = 2;
const V_BOOLEAN = 3;
const V_INT32 = 4;
const V_ARGUMENTS = 5;
const V_LTEXT = 6;
const V_UINT32 = 7;

/** Argument (Part 3 §8.6): [name, dataType, valueRank, arrayDimensions, description]. */
function convertArgument(node: RawNode, arg: XmlElement, aliases: Map<string, string>): unknown[] {
  const dataType = child(child(arg, "DataType") ?? arg, "Identifier")?.text;
  if (dataType === undefined) throw new Error(`i=${node.id}: Argument without a DataType`);
  const dims = (child(arg, "ArrayDimensions")?.children ?? []).map((d) => Number(d.text));
  return [child(arg, "Name")?.text ?? "", numericId(dataType, aliases), Number(child(arg, "ValueRank")?.text ?? -1), dims, ltext(child(arg, "Description"))];
}

function convertValue(node: RawNode, aliases: Map<string, string>): unknown[] | undefined {
  const v = child(node.el, "Value");
  if (!v) return undefined;
  const body = v.children[0];
  if (!body) return undefined;
  switch (body.name) {
    case "ListOfLocalizedText":
      return [V_LTEXT_ARRAY, body.children.map(ltext)];
    case "ListOfExtensionObject": {
      const out: unknown[] = [];
      let kind = -1;
      for (const eo of body.children) {
        const content = child(eo, "Body") ?? eo;
        const ev = child(content, "EnumValueType");
        const arg = child(content, "Argument");
        const k = ev ? V_ENUMVALUES : arg ? V_ARGUMENTS : -1;
        if (k < 0 || (kind >= 0 && k !== kind)) throw new Error(`i=${node.id}: only EnumValueType or Argument ExtensionObjects are supported`);
        kind = k;
        if (ev) out.push([Number(child(ev, "Value")?.text ?? 0), ltext(child(ev, "DisplayName")), ltext(child(ev, "Description"))]);
        else out.push(convertArgument(node, arg!, aliases));
      }
      return [kind < 0 ? V_ENUMVALUES : kind, out];
    }
    case "LocalizedText":
      return [V_LTEXT, ltext(body)];
    case "UInt32":
      return [V_UINT32, Number(body.text)];
    case "String":
      return [V_STRING, body.text];
    case "Boolean":
      return [V_BOOLEAN, body.text.trim() === "true" ? 1 : 0];
    case "Int32":
      return [V_INT32, Number(body.text)];
    default:
      throw new Error(`i=${node.id}: unsupported value ${body.name}`);
  }
}

/** StructureType (Part 3 §8.49). */
const STRUCTURE = 0;
const STRUCTURE_WITH_OPTIONAL_FIELDS = 1;
const UNION = 2;
const STRUCTURE_WITH_SUBTYPED_VALUES = 3;
const UNION_WITH_SUBTYPED_VALUES = 4;

function supertype(nodes: Map<number, RawNode>, id: number): number | undefined {
  return nodes.get(id)?.refs.find((r) => r.type === HasSubtype && !r.forward)?.target;
}

function isSubtype(nodes: Map<number, RawNode>, id: number, base: number): boolean {
  for (let t: number | undefined = id; t !== undefined; t = supertype(nodes, t)) if (t === base) return true;
  return false;
}

/**
 * Enum: [0, [[name, value], ...]]; structure: [1, structureType, defaultEncodingId, baseType,
 * [[name, dataType, valueRank, isOptional, arrayDimensions?], ...]]. OptionSets with a
 * Definition are enumerations of bits (Part 3 §5.8.2 uses EnumDefinition for them).
 */
function convertDefinition(
  node: RawNode,
  nodes: Map<number, RawNode>,
  aliases: Map<string, string>,
  binaryEncodings: Map<number, number>,
): unknown[] | undefined {
  const def = child(node.el, "Definition");
  if (!def) return undefined;
  const isEnum = isSubtype(nodes, node.id, 29) || def.attrs.IsOptionSet === "true";
  if (isEnum) return [0, def.children.map((f) => [f.attrs.Name, Number(f.attrs.Value ?? 0)])];
  const isUnion = isSubtype(nodes, node.id, 12756);
  const subtyped = def.children.some((f) => f.attrs.AllowSubTypes === "true");
  const optional = def.children.some((f) => f.attrs.IsOptional === "true");
  const structureType = isUnion
    ? subtyped
      ? UNION_WITH_SUBTYPED_VALUES
      : UNION
    : subtyped
      ? STRUCTURE_WITH_SUBTYPED_VALUES
      : optional
        ? STRUCTURE_WITH_OPTIONAL_FIELDS
        : STRUCTURE;
  const encoding = binaryEncodings.get(node.id);
  const fields = def.children.map((f) => {
    const t: unknown[] = [
      f.attrs.Name,
      f.attrs.DataType ? numericId(f.attrs.DataType, aliases) : 24,
      f.attrs.ValueRank !== undefined ? Number(f.attrs.ValueRank) : -1,
      f.attrs.IsOptional === "true" ? 1 : 0,
    ];
    if (f.attrs.ArrayDimensions) t.push(f.attrs.ArrayDimensions);
    return t;
  });
  return [1, structureType, encoding ?? 0, supertype(nodes, node.id) ?? 22, fields];
}

// ---------------------------------------------------------------------------------------------

export function generateNs0(): GeneratedFile[] {
  const { nodes, aliases } = loadNodes();
  const keep = selectNodes(nodes);
  const ids = [...keep].sort((a, b) => a - b);

  // Reference sets per kept node: original order first, then synthesized inverses, no duplicates.
  const refs = new Map<number, RawRef[]>();
  const seen = new Set<string>();
  const push = (src: number, r: RawRef): void => {
    const key = `${src}:${r.type}:${r.target}:${r.forward ? 1 : 0}`;
    if (seen.has(key)) return;
    seen.add(key);
    refs.get(src)!.push(r);
  };
  for (const id of ids) refs.set(id, []);
  for (const id of ids) for (const r of nodes.get(id)!.refs) if (keep.has(r.target)) push(id, r);
  for (const [src, type, target] of ADDED_REFS) push(src, { type, target, forward: true });
  for (const id of ids) {
    for (const r of [...refs.get(id)!]) push(r.target, { type: r.type, target: id, forward: !r.forward });
  }

  // DataType -> its "Default Binary" encoding object, from either end of HasEncoding.
  const binaryEncodings = new Map<number, number>();
  for (const id of ids) {
    for (const r of refs.get(id)!) {
      if (r.type === HasEncoding && r.forward && nodes.get(r.target)?.browseName === "Default Binary") binaryEncodings.set(id, r.target);
    }
  }
  const index = new Map(ids.map((id, i) => [id, i]));
  const classes: number[] = [];
  const names: string[] = [];
  const displayNames: unknown[] = [];
  const descriptions: unknown[] = [];
  const flags: number[] = [];
  const inverseNames: unknown[] = [];
  const variables: unknown[] = [];
  const values: unknown[] = [];
  const definitions: unknown[] = [];
  const refStart: number[] = [];
  const refData: number[] = [];

  for (const id of ids) {
    const n = nodes.get(id)!;
    const i = index.get(id)!;
    const a = n.el.attrs;
    classes.push(n.nodeClass);
    names.push(n.browseName);
    const dn = ltext(child(n.el, "DisplayName"));
    if (dn[0] !== "" || dn[1] !== n.browseName) displayNames.push(i, dn);
    const desc = child(n.el, "Description");
    if (desc) descriptions.push(i, ltext(desc));
    // Part 3 §5: IsAbstract, Symmetric; EventNotifier for Objects; AccessLevel for Variables
    // (CurrentWrite and HistoryWrite masked off: namespace 0 is served read-only).
    let f = (a.IsAbstract === "true" ? 1 : 0) | (a.Symmetric === "true" ? 2 : 0);
    if (n.nodeClass === 1) f |= Number(a.EventNotifier ?? 0) << 8;
    if (n.nodeClass === 2) f |= (Number(a.AccessLevel ?? 1) & ~0x0a) << 8;
    flags.push(f);
    const inv = child(n.el, "InverseName");
    if (inv) inverseNames.push(i, ltext(inv));
    if (n.nodeClass === 2 || n.nodeClass === 16) {
      const dataType = a.DataType ? numericId(a.DataType, aliases) : 24;
      const dims = a.ArrayDimensions ? a.ArrayDimensions.split(",").map(Number) : [];
      variables.push([i, dataType, Number(a.ValueRank ?? -1), Number(a.MinimumSamplingInterval ?? 0), dims]);
      const v = convertValue(n, aliases);
      if (v) values.push([i, ...v]);
    }
    if (n.nodeClass === 64) {
      const d = convertDefinition(n, nodes, aliases, binaryEncodings);
      if (d) definitions.push([i, ...d]);
    }
    refStart.push(refData.length);
    for (const r of refs.get(id)!) refData.push(r.type, r.forward ? r.target : -r.target);
  }
  refStart.push(refData.length);

  // Several entries per line keeps diffs of a regenerated table readable.
  const j = (v: unknown): string => {
    if (!Array.isArray(v) || v.length === 0) return JSON.stringify(v);
    const per = v.every((e) => typeof e === "number") ? 40 : 6;
    const lines: string[] = [];
    for (let k = 0; k < v.length; k += per) lines.push("  " + v.slice(k, k + per).map((e) => JSON.stringify(e)).join(", ") + ",");
    return "[\n" + lines.join("\n") + "\n]";
  };
  const out = [
    generatedHeader("gen-ns0.ts", ["Opc.Ua.NodeSet2.xml"]).trimEnd(),
    "// Parallel arrays indexed by node position (ascending numeric NodeId); read by",
    "// src/address-space/ns0-table.ts. Sparse columns are flat [position, value, ...] lists.",
    "",
    `export const ns0Count = ${ids.length};`,
    `export const ns0Ids: readonly number[] = ${j(ids)};`,
    `export const ns0Classes: readonly number[] = ${j(classes)};`,
    `export const ns0BrowseNames: readonly string[] = ${j(names)};`,
    "/** [position, [locale, text]] where the DisplayName is not the BrowseName. */",
    `export const ns0DisplayNames: readonly unknown[] = ${j(displayNames)};`,
    `export const ns0Descriptions: readonly unknown[] = ${j(descriptions)};`,
    "/** bit 0 IsAbstract, bit 1 Symmetric, bits 8-15 EventNotifier (Objects) or AccessLevel (Variables). */",
    `export const ns0Flags: readonly number[] = ${j(flags)};`,
    `export const ns0InverseNames: readonly unknown[] = ${j(inverseNames)};`,
    "/** [position, dataType, valueRank, minimumSamplingInterval, arrayDimensions] of Variables and VariableTypes. */",
    `export const ns0Variables: ReadonlyArray<readonly [number, number, number, number, number[]]> = ${j(variables)};`,
    "/** [position, kind, payload]: 0 LocalizedText[], 1 EnumValueType[], 2 String, 3 Boolean, 4 Int32, 5 Argument[] as [name, dataType, valueRank, dims, description], 6 LocalizedText, 7 UInt32. */",
    `export const ns0Values: ReadonlyArray<readonly unknown[]> = ${j(values)};`,
    "/** [position, 0, [[name, value]]] enumerations; [position, 1, structureType, encodingId, baseType, [[name, dataType, valueRank, isOptional, dims?]]] structures. */",
    `export const ns0Definitions: ReadonlyArray<readonly unknown[]> = ${j(definitions)};`,
    "/** References of node k: ns0Refs[ns0RefStart[k] .. ns0RefStart[k+1]) as (referenceTypeId, target) pairs; a negative target is an inverse reference. */",
    `export const ns0RefStart: readonly number[] = ${j(refStart)};`,
    `export const ns0Refs: readonly number[] = ${j(refData)};`,
    "",
  ];
  return [{ path: "src/ua/generated/ns0.ts", content: out.join("\n") }];
}
