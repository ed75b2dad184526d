// Turns a schema (schema.ts) into a JSON Schema (draft 2020-12) for editors: the YAML language
// server reads it through the `# yaml-language-server: $schema=` line and offers completion,
// hover text and red squiggles. The gateway itself never validates with it; validate.ts does,
// so the JSON Schema only has to be as strict as an editor can usefully be.
import { deviceMapSchema, type MapDrivers } from "./device-map.js";
import { gatewaySchema } from "./gateway-config.js";
import { networkSchema } from "./network-config.js";
import { formatDuration, formatSize, type ObjectSpec, type SchemaSpec, type VariantSpec } from "./schema.js";

export type JsonSchema = { readonly [key: string]: unknown };

const DRAFT = "https://json-schema.org/draft/2020-12/schema";
const DURATION_PATTERN = "^\\s*(\\d+(\\.\\d+)?(ms|s|m|h|d))+\\s*$";
const SIZE_PATTERN = "^\\s*\\d+(\\.\\d+)?\\s*(B|KiB|MiB|GiB|TiB)\\s*$";

export function toJsonSchema(schema: SchemaSpec): JsonSchema {
  const out: Record<string, unknown> = {};
  if (schema.description !== undefined) out.description = schema.description;
  if (schema.default?.json !== undefined) out.default = schema.default.json;
  switch (schema.kind) {
    case "string":
      out.type = "string";
      if (schema.minLength !== undefined) out.minLength = schema.minLength;
      if (schema.maxLength !== undefined) out.maxLength = schema.maxLength;
      if (schema.pattern) out.pattern = schema.pattern.source;
      break;
    case "integer":
    case "number":
      out.type = schema.kind;
      if (schema.min !== undefined) out.minimum = schema.min;
      if (schema.max !== undefined) out.maximum = schema.max;
      break;
    case "boolean":
      out.type = "boolean";
      break;
    case "enum":
      out.enum = [...schema.values];
      break;
    case "duration":
    case "size": {
      // Bounds of the string form cannot be expressed in JSON Schema; the text says them.
      const fmt = schema.kind === "duration" ? formatDuration : formatSize;
      const bounds = [schema.min !== undefined ? `at least ${fmt(schema.min)}` : "", schema.max !== undefined ? `at most ${fmt(schema.max)}` : ""]
        .filter((s) => s !== "")
        .join(", ");
      const unit = schema.kind === "duration" ? "a number of milliseconds, or 500ms, 10s, 5m, 1h" : "a number of bytes, or 64KiB, 16MiB, 1GiB";
      out.description = `${schema.description ?? ""}${schema.description ? " " : ""}(${unit}${bounds ? `; ${bounds}` : ""})`;
      const num: Record<string, unknown> = { type: "integer", minimum: schema.min ?? 0 };
      if (schema.max !== undefined) num.maximum = schema.max;
      out.anyOf = [num, { type: "string", pattern: schema.kind === "duration" ? DURATION_PATTERN : SIZE_PATTERN }];
      break;
    }
    case "path":
      out.type = "string";
      out.minLength = 1;
      break;
    case "array":
      out.type = "array";
      out.items = toJsonSchema(schema.items);
      if (schema.minItems !== undefined) out.minItems = schema.minItems;
      if (schema.maxItems !== undefined) out.maxItems = schema.maxItems;
      if (schema.uniqueItems) out.uniqueItems = true;
      break;
    case "object": {
      out.type = "object";
      const properties: Record<string, JsonSchema> = {};
      const required: string[] = [];
      for (const [key, child] of Object.entries(schema.shape)) {
        properties[key] = toJsonSchema(child);
        if (child.kind !== "optional" && child.kind !== "object" && child.default === undefined) required.push(key);
      }
      out.properties = properties;
      if (required.length > 0) out.required = required;
      out.additionalProperties = false;
      break;
    }
    case "record":
      out.type = "object";
      out.additionalProperties = toJsonSchema(schema.values);
      if (schema.keyPattern) out.propertyNames = { pattern: schema.keyPattern.source };
      break;
    case "optional":
      return { ...toJsonSchema(schema.inner), ...out };
    case "custom":
      Object.assign(out, schema.jsonSchema);
      break;
    case "variant":
      return { ...variantJsonSchema(schema), ...out };
  }
  return out;
}

/**
 * A variant as one object: its properties those of every variant, each key's schema where the
 * variants agree on it (else any of theirs). Variants of different keys add, each, what its own
 * name requires and allows (if/then on the key), so an editor checks a mapping by its variant.
 */
function variantJsonSchema(schema: VariantSpec): Record<string, unknown> {
  const groups = new Map<ObjectSpec, string[]>();
  for (const [name, spec] of schema.variants) groups.set(spec, [...(groups.get(spec) ?? []), name]);
  const shown = [...groups.keys()].map((spec) => toJsonSchema(spec) as { properties: Record<string, JsonSchema>; required?: string[] });
  if (shown.length === 1) return shown[0]!;
  const mixed = new Map<string, JsonSchema[]>();
  for (const s of shown) {
    for (const [key, child] of Object.entries(s.properties)) {
      const seen = mixed.get(key) ?? [];
      if (!seen.some((c) => JSON.stringify(c) === JSON.stringify(child))) seen.push(child);
      mixed.set(key, seen);
    }
  }
  const properties: Record<string, JsonSchema> = {};
  for (const [key, forms] of mixed) properties[key] = forms.length === 1 ? forms[0]! : { anyOf: forms };
  properties[schema.key] = toJsonSchema(schema.common.shape[schema.key]!);
  const required = (shown[0]!.required ?? []).filter((k) => shown.every((s) => s.required?.includes(k)));
  const names = [...groups.values()];
  return {
    type: "object",
    properties,
    ...(required.length > 0 ? { required } : {}),
    additionalProperties: false,
    allOf: shown.map((s, i) => ({
      if: { properties: { [schema.key]: { enum: names[i] } }, required: [schema.key] },
      then: { properties: s.properties, ...(s.required ? { required: s.required } : {}), propertyNames: { enum: Object.keys(s.properties) } },
    })),
  };
}

/** The JSON Schema of gateway.yaml, as committed in config/gateway.schema.json. */
export function gatewayJsonSchema(): JsonSchema {
  return {
    $schema: DRAFT,
    $comment: "Generated by src/build/write-schema.ts from src/config/gateway-config.ts; do not edit.",
    title: "fieldgate gateway.yaml",
    ...toJsonSchema(gatewaySchema),
  };
}

/** The exact text of config/gateway.schema.json. */
export function renderGatewayJsonSchema(): string {
  return `${JSON.stringify(gatewayJsonSchema(), null, 2)}\n`;
}

/** The JSON Schema of a device map of `drivers`; config/devices.schema.json is the built-in drivers'. */
export function deviceMapJsonSchema(drivers: MapDrivers): JsonSchema {
  return {
    $schema: DRAFT,
    $comment: "Generated by src/build/write-schema.ts from src/config/device-map.ts and the drivers' definitions (drivers/builtin.ts); do not edit.",
    title: "fieldgate device map",
    ...toJsonSchema(deviceMapSchema(drivers)),
  };
}

/** The exact text of config/devices.schema.json, for `drivers`. */
export function renderDeviceMapJsonSchema(drivers: MapDrivers): string {
  return `${JSON.stringify(deviceMapJsonSchema(drivers), null, 2)}\n`;
}

/** The JSON Schema of network.yaml, as committed in config/network.schema.json. */
export function networkJsonSchema(): JsonSchema {
  return {
    $schema: DRAFT,
    $comment: "Generated by src/build/write-schema.ts from src/config/network-config.ts; do not edit.",
    title: "fieldgate network.yaml",
    ...toJsonSchema(networkSchema),
  };
}

/** The exact text of config/network.schema.json. */
export function renderNetworkJsonSchema(): string {
  return `${JSON.stringify(networkJsonSchema(), null, 2)}\n`;
}
