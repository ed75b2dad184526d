// `fieldgate import kepware` and `fieldgate export csv` on tag lists written the way Kepware
// writes them (fixtures/): the header unquoted, the name, address and description quoted, CRLF,
// an empty trailing column; a comma file in UTF-8 and a semicolon file (decimal commas) in
// Windows-1252 with a line break and doubled quotes inside a description.
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { mapSchema } from "../helpers/map.js";
import { decodeText, detectDelimiter, exportKepwareCsv, importKepwareCsv, parseCsv } from "../../src/config/kepware.js";
import { validateYaml } from "../../src/config/load.js";
import { MODBUS_KEPWARE } from "../../drivers/modbus/kepware.js";

const cli = resolve(__dirname, "../../dist/src/cli.js");
const fixtures = join(__dirname, "fixtures");
const dir = mkdtempSync(join(tmpdir(), "fieldgate-kepware-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function run(...args: string[]): { status: number | null; stdout: string; stderr: string } {
  return spawnSync(process.execPath, [cli, ...args], { encoding: "utf8", timeout: 20_000 });
}

describe("CSV as Kepware writes it", () => {
  it("records keep quoted separators, doubled quotes and line breaks; the separator is found from the header", () => {
    const text = decodeText(readFileSync(join(fixtures, "kepware-semicolon.csv")));
    expect(detectDelimiter(text.split("\n")[0]!)).toBe(";");
    const records = parseCsv(text, ";");
    expect(records[1]!.fields[15]).toBe('Zone 1 "top"');
    expect(records[2]!.fields[15]).toBe("Power, 0..12,5 kW\nfrom the meter");
    // The record after the one with a line break starts two lines further on.
    expect(records.map((r) => r.line).slice(0, 5)).toEqual([1, 2, 3, 5, 6]);
    expect(records[0]!.fields).toHaveLength(17);
    expect(detectDelimiter(readFileSync(join(fixtures, "kepware-comma.csv"), "utf8").split("\n")[0]!)).toBe(",");
  });

  it("reads Windows-1252 and UTF-8 with a byte order mark", () => {
    expect(decodeText(Buffer.from([0x44, 0xb0, 0x43]))).toBe("D°C");
    expect(decodeText(Buffer.from("\ufeffTag Name,Address", "utf8"))).toBe("Tag Name,Address");
  });
});

describe("import", () => {
  it("converts a comma file: areas, bits, strings, types, access, rates, linear scaling, units; lists each row it cannot convert", () => {
    const r = importKepwareCsv(decodeText(readFileSync(join(fixtures, "kepware-comma.csv"))), MODBUS_KEPWARE);
    expect(r.delimiter).toBe(",");
    expect(r.rows).toBe(13);
    expect(r.rate).toBe(100);
    const byName = Object.fromEntries(r.tags.map((t) => [t.name, t]));
    expect(byName["Pump1.Running"]).toEqual({ name: "Pump1.Running", address: "coil:0", access: "readwrite", description: "Pump 1 run command" });
    expect(byName["Pump1.Fault"]).toEqual({ name: "Pump1.Fault", address: "discrete:0" });
    expect(byName["Tank.Level"]).toEqual({ name: "Tank.Level", address: "input:0", scale: 0.0244200244200, range: [0, 100], unit: "%", description: "Level, 4-20 mA input" });
    expect(byName["Tank.Temperature"]).toEqual({ name: "Tank.Temperature", address: "holding:0", type: "float32", rate: 500, unit: "°C" });
    expect(byName["Setpoint"]).toEqual({ name: "Setpoint", address: "holding:2", type: "int16", access: "readwrite", description: "Temperature setpoint" });
    expect(byName["Counter"]).toMatchObject({ address: "holding:4", type: "uint32" });
    expect(byName["Alarm.HighLevel"]).toMatchObject({ address: "holding:9.3", type: "bit" });
    expect(byName["Recipe"]).toMatchObject({ address: "holding:19", type: "string", length: 10, access: "readwrite", rate: 1000 });
    expect(byName["Energy"]).toMatchObject({ address: "holding:39", type: "int64", unit: "kW·h" });
    expect(byName["Flow"]).toMatchObject({ address: "holding:49", type: "float64", scale: 0.05, range: [0, 50], unit: "m³/h" });
    expect(r.notes.filter((n) => !n.converted).map((n) => [n.line, n.tag, n.message])).toEqual([
      [12, "Status", "data type BCD: BCD registers have no data type here (fieldgate reads binary integers)"],
      [13, "Speeds", '"400070 [4]" is an array; arrays have no equivalent here (one tag per value)'],
      [14, "Sqrt", "Square Root scaling has no equivalent here (engineering = raw * scale + offset)"],
    ]);
    expect(r.notes.filter((n) => n.converted).map((n) => n.line)).toEqual([4]); // Clamp on Tank.Level
  });

  it("converts a semicolon file with decimal commas, Negate Value, a LoHi string, and names what it left out", () => {
    const r = importKepwareCsv(decodeText(readFileSync(join(fixtures, "kepware-semicolon.csv"))), MODBUS_KEPWARE);
    expect(r.delimiter).toBe(";");
    const byName = Object.fromEntries(r.tags.map((t) => [t.name, t]));
    // 12,5 kW at 27648: the full scale of an S7 analog input.
    expect(byName["Oven.Power"]).toMatchObject({ address: "input:10", scale: Number((12.5 / 27648).toPrecision(12)), range: [0, 12.5], unit: "kW" });
    // Negated: engineering = -(raw * 0.1).
    expect(byName["Oven.Setpoint"]).toMatchObject({ address: "holding:110", type: "int16", scale: -0.1, range: [-100, 0], access: "readwrite", rate: 1000 });
    expect(byName["Oven.Serial"]).toMatchObject({ address: "holding:129", type: "string", length: 5, byteOrder: "BADC", rate: 5000 });
    expect(byName["Oven.Temperature"]).toMatchObject({ type: "float32", unit: "°C", description: 'Zone 1 "top"' });
    expect(byName["Oven.Input"]).toEqual({ name: "Oven.Input", address: "input:19" });
    const lines = r.notes.map((n) => `${n.line}: ${n.tag}: ${n.converted ? "" : "not converted: "}${n.message}`);
    expect(lines).toEqual([
      '7: Bad Name: not converted: "Bad Name" is not a tag name here (letters, digits, "_", "-" and "."; no spaces)',
      "8: Oven.Serial: a string of 9 bytes is read as 5 registers (10 bytes)",
      "9: Oven.Mode: not converted: data type Char: Char is one byte of a register: read the register as Word (or Short) and scale it",
      '10: Oven.Hours: not converted: "H0100" is a hexadecimal address; write it in decimal (400001 ...)',
      '11: Oven.Temperature: not converted: a second tag named "Oven.Temperature" (first on line 2)',
      "12: Oven.Input: Client Access R/W on an input register: Modbus cannot write it, imported read-only",
    ]);
  });

  it("refuses a file without Kepware's header", () => {
    const r = importKepwareCsv("Name,Register\nx,1\n", MODBUS_KEPWARE);
    expect(r.tags).toEqual([]);
    expect(r.notes[0]!.message).toMatch(/no header row with "Tag Name"/);
  });

  it("the command writes a device map that validates, lists the rows on stderr as FILE:LINE, and exits 1 when some were not converted", () => {
    const file = join(fixtures, "kepware-comma.csv");
    const res = run("import", "kepware", file, "--device", "plc1", "--host", "192.0.2.10", "--unit-id", "3", "--byte-order", "CDAB");
    expect(res.status).toBe(1);
    expect(res.stderr).toContain(`${file}:12: Status: not converted: data type BCD`);
    expect(res.stderr).toContain("10 of 13 rows converted, 3 not (listed above)");
    const check = validateYaml(mapSchema, res.stdout, "out.yaml");
    expect(check.ok, JSON.stringify(!check.ok && check.issues)).toBe(true);
    const map = check.ok ? check.value : undefined;
    expect(map!.devices[0]).toMatchObject({ name: "plc1", driver: "modbus-tcp", host: "192.0.2.10", unitId: 3, byteOrder: "CDAB", rate: 100 });
    expect(map!.devices[0]!.tags).toHaveLength(10);
    const out = join(dir, "devices.yaml");
    const ok = run("import", "kepware", join(fixtures, "kepware-semicolon.csv"), "--device", "oven", "--driver", "modbus-rtu", "--unit-id", "5", "--out", out);
    expect(ok.status).toBe(1);
    const validated = run("validate", "--devices", out);
    expect(validated.stderr).toBe("");
    expect(validated.status).toBe(0);
    expect(parse(readFileSync(out, "utf8")).buses).toEqual({ "rs485-1": { port: "/dev/ttyUSB0" } });
  });

  it("the command says what it needs", () => {
    expect(run("import", "kepware", join(fixtures, "kepware-comma.csv")).status).toBe(2);
    const missing = run("import", "kepware", join(dir, "nope.csv"), "--device", "x");
    expect(missing.status).toBe(2);
    expect(missing.stderr).toMatch(/nope\.csv: file not found/);
    expect(run("import", "kepware", join(fixtures, "kepware-comma.csv"), "--device", "x", "--byte-order", "XYZW").stderr).toMatch(/--byte-order: expected one of ABCD, CDAB, BADC, DCBA/);
  });
});

describe("export", () => {
  it.skipIf(!existsSync(cli))("writes Kepware's columns, and reads back to the same tags", () => {
    const imported = join(dir, "plc1.yaml");
    run("import", "kepware", join(fixtures, "kepware-comma.csv"), "--device", "plc1", "--out", imported);
    const csvFile = join(dir, "plc1.csv");
    const res = run("export", "csv", "--devices", imported, "--out", csvFile);
    expect(res.status).toBe(0);
    const csv = readFileSync(csvFile, "utf8");
    expect(csv.split("\r\n")[0]).toBe(
      "Tag Name,Address,Data Type,Respect Data Type,Client Access,Scan Rate,Scaling,Raw Low,Raw High,Scaled Low,Scaled High,Scaled Data Type,Clamp Low,Clamp High,Eng Units,Description,Negate Value",
    );
    expect(csv).toContain('"Tank.Level","300001",Word,1,RO,100,Linear,0,4095,0,100,Double,0,0,%,"Level, 4-20 mA input",0\r\n');
    expect(csv).toContain('"Recipe","400020.20H",String,1,R/W,1000,');
    expect(csv).toContain('"Alarm.HighLevel","400010.3",Boolean,1,RO,100,');
    const first = importKepwareCsv(decodeText(readFileSync(join(fixtures, "kepware-comma.csv"))), MODBUS_KEPWARE);
    const again = importKepwareCsv(csv, MODBUS_KEPWARE);
    expect(again.notes).toEqual([]);
    expect(again.tags).toEqual(first.tags);
  });

  it("semicolons with decimal commas, negative scales as Negate Value", () => {
    const text = "devices:\n  - name: d\n    driver: simulator\n    tags:\n      - { name: t, address: holding:0, type: int16, scale: -0.5, offset: 2, range: [-10, 10], unit: bar }\n";
    const check = validateYaml(mapSchema, text, "d.yaml");
    expect(check.ok).toBe(true);
    const csv = exportKepwareCsv(check.ok ? check.value.devices[0]! : (undefined as never), MODBUS_KEPWARE, ";");
    expect(csv.split("\r\n")[1]).toBe('"t";"400001";Short;1;RO;1000;Linear;-16;24;-10;10;Double;0;0;bar;"";1');
    const back = importKepwareCsv(csv, MODBUS_KEPWARE);
    expect(back.tags[0]).toMatchObject({ name: "t", address: "holding:0", type: "int16", scale: -0.5, offset: 2, range: [-10, 10], unit: "bar" });
  });

  it("needs a device name when the map has several", () => {
    const map = join(dir, "two.yaml");
    writeFileSync(map, "devices:\n  - { name: a, driver: simulator, tags: [{ name: x, address: input:0 }] }\n  - { name: b, driver: simulator, tags: [{ name: y, address: input:1 }] }\n");
    const res = run("export", "csv", "--devices", map);
    expect(res.status).toBe(2);
    expect(res.stderr).toMatch(/the map has 2 devices; name one with --device \(a, b\)/);
    expect(run("export", "csv", "--devices", map, "--device", "b").stdout).toContain('"y","300002",Word');
  });
});
