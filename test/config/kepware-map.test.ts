// A Kepware CSV made into a device of a map being edited (src/config/kepware-map.ts): appended to
// its devices with the map's comments and layout kept, the placeholder bus added for modbus-rtu,
// and the map's own mistakes named rather than rewritten.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { deviceMapSchema as schemaOf } from "../../src/config/device-map.js";
import { addKepwareDevice } from "../../src/config/kepware-map.js";
import { builtinDrivers } from "../../drivers/builtin.js";
import { validateYaml } from "../../src/config/load.js";

const drivers = builtinDrivers();
const deviceMapSchema = schemaOf(drivers);
const csv = readFileSync(join(import.meta.dirname, "../cli/fixtures/kepware-comma.csv"), "utf8");
const MAP = "# our plant\n\ndevices:\n  # the press line\n  - name: sim\n    driver: simulator\n    tags:\n      - { name: a, address: input:0 } # first\n";

describe("addKepwareDevice", () => {
  it("appends the device, keeping the map's comments, one tag a line", () => {
    const r = addKepwareDevice({ text: MAP, csv, device: "press", host: "192.0.2.7", port: "5020", station: 3 }, drivers);
    if ("error" in r) throw new Error(r.error);
    expect(r.text.startsWith("# our plant\n\ndevices:\n  # the press line\n  - name: sim\n")).toBe(true);
    expect(r.text).toContain("      - { name: a, address: input:0 } # first\n");
    expect(r.text).toMatch(/\n {2}- name: press\n {4}driver: modbus-tcp\n {4}host: 192\.0\.2\.7\n {4}port: 5020\n {4}unitId: 3\n/);
    expect(r.text).toMatch(/\n {6}- \{ name: [^\n]+ \}\n/);
    const v = validateYaml(deviceMapSchema, r.text, "devices.yaml");
    expect(v.issues).toEqual([]);
    expect(v.ok && v.value.devices.map((d) => d.name)).toEqual(["sim", "press"]);
    expect(v.ok && v.value.devices[1]!.tags.length).toBe(r.converted);
  });

  it("puts a modbus-rtu device on a placeholder bus, and starts a map from nothing", () => {
    const r = addKepwareDevice({ text: "", csv, device: "oven", driver: "modbus-rtu", station: "5" }, drivers);
    if ("error" in r) throw new Error(r.error);
    expect(r.text).toMatch(/buses:\n {2}rs485-1:\n {4}port: \/dev\/ttyUSB0\n/);
    expect(validateYaml(deviceMapSchema, r.text, "devices.yaml").issues).toEqual([]);
  });

  it("names what it cannot do instead of rewriting the map", () => {
    expect(addKepwareDevice({ text: "devices: [\n", csv, device: "x" }, drivers)).toEqual({ error: expect.stringMatching(/YAML syntax error/) });
    expect(addKepwareDevice({ text: "devices: 3\n", csv, device: "x" }, drivers)).toEqual({ error: "devices: is not a list in the map: fix it first" });
    expect(addKepwareDevice({ text: MAP, csv, device: "x", driver: "profibus" }, drivers)).toEqual({ error: expect.stringMatching(/^driver: expected one of modbus-tcp/) });
    expect(addKepwareDevice({ text: MAP, csv: "nothing,here\n", device: "x" }, drivers)).toEqual({ error: expect.stringMatching(/^no tag converted from the CSV/) });
    expect(addKepwareDevice({ text: MAP, csv, device: "" }, drivers)).toEqual({ error: "the device needs a name" });
  });
});
