// `fieldgate mbus scan`: the meters on a serial line (a level converter's port) or behind an
// M-Bus to TCP converter, found by primary and secondary search (scan.ts), printed as a device
// map (YAML: the bus, and one device entry per meter with a tag per record) that `fieldgate
// validate` accepts; progress and what each meter is go to stderr as they are found.
import { writeFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { deviceEntriesText } from "../../src/config/entry-yaml.js";
import { formatIssue } from "../../src/config/load.js";
import type { DiscoveryTarget } from "../../src/devices/discovery.js";
import type { CommandContext } from "../../src/devices/registry.js";
import { discoverMeters } from "./discover.js";
import { MBUS_LINE } from "./protocol.js";

function usage(context: CommandContext, message: string): number {
  context.err(`fieldgate mbus: ${message}\nusage:\n${context.drivers.commandNamed("mbus")?.usage ?? ""}\n`);
  return 2;
}

function intOption(v: string | undefined, name: string, min: number, max: number): number | string | undefined {
  if (v === undefined) return undefined;
  const n = Number(v);
  return Number.isInteger(n) && n >= min && n <= max ? n : `--${name}: expected a whole number from ${min} to ${max}, got "${v}"`;
}

export async function mbusCommand(args: readonly string[], context: CommandContext): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({
      args: [...args],
      allowPositionals: true,
      options: {
        bus: { type: "string" },
        host: { type: "string" },
        port: { type: "string" },
        baud: { type: "string" },
        parity: { type: "string" },
        primary: { type: "boolean" },
        secondary: { type: "boolean" },
        from: { type: "string" },
        to: { type: "string" },
        timeout: { type: "string" },
        retries: { type: "string" },
        "bus-name": { type: "string" },
        out: { type: "string", short: "o" },
        help: { type: "boolean", short: "h" },
      },
    });
  } catch (e) {
    return usage(context, (e as Error).message);
  }
  const { values: v, positionals } = parsed;
  if (v.help) {
    context.out(`usage:\n${context.drivers.commandNamed("mbus")?.usage ?? ""}\n`);
    return 0;
  }
  if (positionals[0] !== "scan" || positionals.length > 1) return usage(context, "expected `mbus scan`");
  if ((v.bus === undefined) === (v.host === undefined)) return usage(context, "give the serial line (--bus /dev/ttyUSB0) or the converter (--host H --port N)");
  const numbers = {
    port: intOption(v.port, "port", 1, 65535),
    baud: intOption(v.baud, "baud", 300, 38400),
    from: intOption(v.from, "from", 0, 250),
    to: intOption(v.to, "to", 0, 250),
    timeout: intOption(v.timeout, "timeout", 10, 60_000),
    retries: intOption(v.retries, "retries", 0, 5),
  };
  for (const n of Object.values(numbers)) if (typeof n === "string") return usage(context, n);
  const num = numbers as { [K in keyof typeof numbers]: number | undefined };
  if (v.host !== undefined && num.port === undefined) return usage(context, "--host needs --port (an M-Bus to TCP converter has no standard port)");
  const parity = v.parity ?? MBUS_LINE.parity;
  if (parity !== "even" && parity !== "none" && parity !== "odd") return usage(context, `--parity: expected even, none or odd, got "${parity}"`);
  const busName = v["bus-name"] ?? "mbus";
  const baudRate = num.baud ?? MBUS_LINE.baudRate;
  const target: DiscoveryTarget =
    v.bus !== undefined
      ? { kind: "bus", name: busName, bus: { port: v.bus, baudRate, parity, dataBits: 8, stopBits: 1, interRequestDelay: 0 } }
      : { kind: "tcp", host: v.host!, port: num.port! };
  const where = v.bus !== undefined ? `${v.bus} at ${baudRate} baud` : `${v.host}:${num.port}`;
  const primary = v.primary === true || v.secondary !== true;
  const secondary = v.secondary === true || v.primary !== true;
  context.err(`fieldgate mbus: searching ${where} (${[primary ? "primary" : "", secondary ? "secondary" : ""].filter(Boolean).join(" and ")} addresses)\n`);
  let found;
  try {
    found = await discoverMeters(target, {
      primary,
      secondary,
      ...(num.from === undefined ? {} : { from: num.from }),
      ...(num.to === undefined ? {} : { to: num.to }),
      ...(num.timeout === undefined ? {} : { timeout: num.timeout }),
      ...(num.retries === undefined ? {} : { retries: num.retries }),
      ...(v.host !== undefined && num.baud !== undefined ? { busBaudRate: num.baud } : {}),
      progress: (line) => context.err(`  ${line}\n`),
    });
  } catch (e) {
    context.err(`fieldgate mbus: ${(e as Error).message}\n`);
    return 1;
  }
  if (found.length === 0) {
    context.err(`fieldgate mbus: no meter answered on ${where}\n`);
    return 1;
  }
  const bus: Record<string, unknown> = { port: v.bus };
  if (baudRate !== MBUS_LINE.baudRate) bus.baudRate = baudRate;
  if (parity !== MBUS_LINE.parity) bus.parity = parity;
  const comments = [
    `Found by \`fieldgate mbus scan\` on ${where}: ${found.length} meter${found.length === 1 ? "" : "s"}.`,
    ...found.map((f) => `  ${f.summary}`),
    "Values are in the units each record's VIF gives (EngineeringUnits); check the rates, then",
    "    fieldgate validate --devices THIS_FILE",
  ];
  const { text, issues } = deviceEntriesText(comments, v.bus !== undefined ? { buses: { [busName]: bus } } : {}, found.map((f) => f.entry), context.drivers, v.out ?? "scan.yaml");
  if (issues.length > 0) {
    for (const i of issues) context.err(`fieldgate mbus: the map made is not valid: ${formatIssue(i)}\n`);
    return 2;
  }
  if (v.out !== undefined) writeFileSync(v.out, text);
  else context.out(text);
  context.err(`fieldgate mbus: ${found.length} meter${found.length === 1 ? "" : "s"} found${v.out !== undefined ? `; wrote ${v.out}` : ""}\n`);
  return 0;
}
