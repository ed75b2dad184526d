// The DSL on its own, with a small device-map-like schema: the shapes a later issue needs
// (lists of objects with required keys, user-named mappings, custom scalars, checks across
// list entries) must work without changes to the machinery.
import { describe, expect, it } from "vitest";
import { toJsonSchema } from "../../src/config/json-schema.js";
import { validateYaml } from "../../src/config/load.js";
import {
  array,
  custom,
  duration,
  enumOf,
  formatDuration,
  formatSize,
  integer,
  number,
  object,
  optional,
  parseDuration,
  parseSize,
  path,
  record,
  size,
  string,
  type Infer,
} from "../../src/config/schema.js";
import { formatPath, suggest } from "../../src/config/validate.js";

const address = custom<{ table: string; offset: number }>({
  expected: 'an address like "holding:100"',
  jsonSchema: { type: "string", pattern: "^(coil|discrete|input|holding):\\d+$" },
  parse(raw) {
    const m = typeof raw === "string" ? /^(coil|discrete|input|holding):(\d+)$/.exec(raw) : null;
    if (!m) return { ok: false, message: "" };
    const offset = Number(m[2]);
    return offset <= 65535 ? { ok: true, value: { table: m[1]!, offset } } : { ok: false, message: "the offset must be 0 to 65535" };
  },
});

const tag = object({
  name: string({ minLength: 1 }),
  address,
  scale: number({ default: 1 }),
  rate: duration({ default: "1s", min: "10ms" }),
});

const deviceMap = object({
  buses: record(object({ port: path(), baudRate: integer({ default: 9600, min: 300, max: 921600 }) }), {
    keyPattern: /^[a-z][a-z0-9-]*$/,
    keyText: "a bus name of lowercase letters, digits and -",
  }),
  devices: array(
    object(
      {
        name: string({ minLength: 1 }),
        driver: enumOf(["modbus-tcp", "modbus-rtu"] as const),
        bus: optional(string()),
        tags: array(tag, { default: [] }),
      },
      {
        check(d, c) {
          const seen = new Set<string>();
          d.tags.forEach((t, i) => {
            if (seen.has(t.name)) c.report(["tags", i, "name"], `another tag of this device is already named "${t.name}"`);
            seen.add(t.name);
          });
        },
      },
    ),
    { default: [] },
  ),
  cache: optional(size({ min: "1KiB" })),
});

type DeviceMap = Infer<typeof deviceMap>;

function check(yaml: string): string[] {
  return validateYaml(deviceMap, yaml, "/plant/devices.yaml").issues.map((i) => `${i.line}:${i.column} ${i.path}: ${i.message}`);
}

function value(yaml: string): DeviceMap {
  const r = validateYaml(deviceMap, yaml, "/plant/devices.yaml");
  if (!r.ok) throw new Error(r.issues.map((i) => i.message).join("\n"));
  return r.value;
}

describe("validation with the DSL", () => {
  it("returns typed values with defaults, custom scalars parsed and paths resolved", () => {
    const v = value(
      [
        "buses:",
        "  rs485-1: { port: /dev/ttyUSB0, baudRate: 19200 }",
        "  rs485-2: { port: ./ttyS1 }",
        "devices:",
        "  - name: boiler",
        "    driver: modbus-tcp",
        "    tags:",
        "      - { name: temperature, address: holding:100, scale: 0.1 }",
        "",
      ].join("\n"),
    );
    expect(v.buses).toEqual({ "rs485-1": { port: "/dev/ttyUSB0", baudRate: 19200 }, "rs485-2": { port: "/plant/ttyS1", baudRate: 9600 } });
    expect(v.devices[0]).toEqual({
      name: "boiler",
      driver: "modbus-tcp",
      tags: [{ name: "temperature", address: { table: "holding", offset: 100 }, scale: 0.1, rate: 1000 }],
    });
    expect("bus" in v.devices[0]!).toBe(false);
    expect(v.cache).toBeUndefined();
  });

  it("reports a missing required key at the mapping that lacks it", () => {
    expect(check("buses: {}\ndevices:\n  - driver: modbus-tcp\n")).toEqual([
      "3:5 devices[0].name: missing required key; expected a string that is not empty",
    ]);
  });

  it("reports a missing required section at the top of the file", () => {
    expect(check("devices: []\n")).toEqual(["1:1 buses: missing required key; expected a mapping"]);
  });

  it("reports custom scalars with their own words", () => {
    expect(check("buses: {}\ndevices:\n  - { name: a, driver: modbus-tcp, tags: [{ name: t, address: holding:70000 }] }\n")).toEqual([
      '3:63 devices[0].tags[0].address: expected an address like "holding:100", got "holding:70000"; the offset must be 0 to 65535',
    ]);
  });

  it("runs checks across list entries and points at the entry", () => {
    const yaml = [
      "buses: {}",
      "devices:",
      "  - name: a",
      "    driver: modbus-tcp",
      "    tags:",
      "      - { name: t1, address: coil:1 }",
      "      - { name: t1, address: coil:2 }",
      "",
    ].join("\n");
    expect(check(yaml)).toEqual(['7:17 devices[0].tags[1].name: another tag of this device is already named "t1"']);
  });

  it("checks user-named keys and suggests close enum values", () => {
    expect(check("buses:\n  RS485: { port: /dev/x }\ndevices:\n  - { name: a, driver: modbus-tpc }\n")).toEqual([
      '2:3 buses.RS485: expected a bus name of lowercase letters, digits and -, got "RS485"',
      '4:24 devices[0].driver: expected one of "modbus-tcp", "modbus-rtu", got "modbus-tpc"; did you mean "modbus-tcp"?',
    ]);
  });

  it("follows aliases and refuses keys that are not names", () => {
    expect(value("buses:\n  a: &b { port: /x }\n  b: *b\n").buses.b).toEqual({ port: "/x", baudRate: 9600 });
    expect(check("buses: {}\n[1, 2]: x\n")).toEqual(["2:1 : expected a key name, got a list of 2 items"]);
  });

  it("does not run a check on an object whose keys are invalid", () => {
    const yaml = "buses: {}\ndevices:\n  - { name: a, driver: x, tags: [{ name: t, address: coil:1 }, { name: t, address: coil:1 }] }\n";
    expect(check(yaml)).toHaveLength(1);
  });
});

describe("durations", () => {
  it.each([
    ["0ms", 0],
    ["250ms", 250],
    ["2s", 2000],
    ["1h30m", 5_400_000],
    ["1d", 86_400_000],
    [1500, 1500],
  ])("parses %s", (raw, ms) => {
    expect(parseDuration(raw)).toEqual({ ok: true, value: ms });
  });

  it.each(["", "s", "10", "10 s", "1.0001ms", "-5s", "5 minutes", "1h 30m", -1, 1.5, true, null])("refuses %j", (raw) => {
    expect(parseDuration(raw).ok).toBe(false);
  });

  it("formats back to the largest exact unit", () => {
    expect([0, 500, 1000, 90_000, 3_600_000, 5_400_000].map(formatDuration)).toEqual(["0ms", "500ms", "1s", "90s", "1h", "90m"]);
  });
});

describe("sizes", () => {
  it.each([
    ["512B", 512],
    ["64KiB", 65536],
    ["1.5KiB", 1536],
    ["16 MiB", 16 * 1024 * 1024],
    ["1GiB", 1024 ** 3],
    [4096, 4096],
  ])("parses %s", (raw, bytes) => {
    expect(parseSize(raw)).toEqual({ ok: true, value: bytes });
  });

  it.each(["64KB", "16MB", "1G", "64k", "0.1B", "64", "lots", -1, 0.5])("refuses %j", (raw) => {
    expect(parseSize(raw).ok).toBe(false);
  });

  it("says what was probably meant", () => {
    expect(parseSize("16MB")).toEqual({ ok: false, message: 'sizes use binary units: did you mean "16MiB"?' });
  });

  it("formats back to the largest exact unit", () => {
    expect([100, 1024, 1536, 65536, 1024 ** 3].map(formatSize)).toEqual(["100B", "1KiB", "1536B", "64KiB", "1GiB"]);
  });
});

describe("suggestions", () => {
  const keys = ["maxNodesPerRead", "maxNodesPerWrite", "maxSessions", "host", "port"];
  it.each([
    ["maxNodesPerReed", "maxNodesPerRead"],
    ["maxnodesperread", "maxNodesPerRead"],
    ["maxSesions", "maxSessions"],
    ["hsot", "host"],
    ["prot", "port"],
  ])("%s → %s", (word, near) => {
    expect(suggest(word, keys)).toBe(near);
  });

  it.each(["password", "x", "timeout"])("nothing for %s", (word) => {
    expect(suggest(word, keys)).toBeUndefined();
  });
});

describe("paths in messages", () => {
  it("name keys, list indexes and odd keys", () => {
    expect(formatPath(["devices", 2, "tags", 0, "name"])).toBe("devices[2].tags[0].name");
    expect(formatPath(["buses", "a.b", "port"])).toBe('buses["a.b"].port');
    expect(formatPath([])).toBe("");
  });
});

describe("JSON Schema", () => {
  it("marks required keys, refuses unknown ones and accepts both forms of a duration", () => {
    const js = toJsonSchema(tag) as {
      required: string[];
      additionalProperties: boolean;
      properties: Record<string, Record<string, unknown>>;
    };
    expect(js.required).toEqual(["name", "address"]);
    expect(js.additionalProperties).toBe(false);
    expect(js.properties.rate).toMatchObject({
      default: "1s",
      anyOf: [{ type: "integer", minimum: 10 }, { type: "string" }],
    });
    const pattern = new RegExp((js.properties.rate!.anyOf as { pattern?: string }[])[1]!.pattern!);
    expect(["500ms", "1h30m"].every((s) => pattern.test(s))).toBe(true);
    expect(pattern.test("5 minutes")).toBe(false);
    expect(js.properties.address).toEqual({ type: "string", pattern: "^(coil|discrete|input|holding):\\d+$" });
  });

  it("describes user-named mappings with a key pattern", () => {
    expect(toJsonSchema(deviceMap.shape.buses)).toMatchObject({
      type: "object",
      propertyNames: { pattern: "^[a-z][a-z0-9-]*$" },
      additionalProperties: { type: "object", required: ["port"] },
    });
  });
});

describe("schema construction", () => {
  it("refuses a default that its own schema would refuse", () => {
    expect(() => integer({ default: 0, min: 1 })).toThrow(/out of range/);
    expect(() => duration({ default: "10 seconds" })).toThrow(/invalid literal/);
    expect(() => enumOf(["a", "b"], { default: "c" as "a" })).toThrow(/not one of/);
  });
});
