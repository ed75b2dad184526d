// The northbound: section of gateway.yaml: off when absent, the issue's keys with their
// defaults, and mistakes refused with line:column, key path and a did-you-mean; the shipped
// gateway.yaml's commented example is valid once uncommented; SIGHUP applies the section.
import { readFileSync } from "node:fs";
import { hostname } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { gatewaySchema } from "../../src/config/gateway-config.js";
import { validateYaml } from "../../src/config/load.js";
import { changesNeedingRestart } from "../../src/server/config-reload.js";

const repo = resolve(dirname(fileURLToPath(import.meta.url)), "../..");

function issuesOf(text: string): string[] {
  const r = validateYaml(gatewaySchema, text, "gateway.yaml");
  return r.issues.map((i) => `${i.line}:${i.column} ${i.path}: ${i.message}`);
}

function valueOf(text: string) {
  const r = validateYaml(gatewaySchema, text, join(repo, "config/gateway.yaml"));
  if (!r.ok) throw new Error(r.issues.map((i) => `${i.line}:${i.column} ${i.path}: ${i.message}`).join("\n"));
  return r.value;
}

describe("northbound config", () => {
  it("is off when absent", () => {
    expect(valueOf("server:\n  port: 4841\n").northbound).toBeUndefined();
  });

  it("takes the issue's keys, with the documented defaults", () => {
    const c = valueOf(`northbound:
  sparkplug:
    broker: mqtt://127.0.0.1:1883
    groupId: plant1
    primaryHostId: scada
    username: gw
    password: secret
    writeRole: operator
    storeAndForward: { maxAge: 7d, maxSize: 256MiB }
`).northbound!.sparkplug!;
    expect(c).toMatchObject({
      broker: "mqtt://127.0.0.1:1883",
      groupId: "plant1",
      edgeNodeId: hostname().split(".")[0],
      primaryHostId: "scada",
      username: "gw",
      password: "secret",
      writeRole: "operator",
      keepAlive: 30_000,
      retryBackoff: 1000,
      maxBackoff: 30_000,
      replayRate: 20_000,
      storeAndForward: { maxAge: 7 * 86_400_000, maxSize: 256 * 1024 * 1024 },
    });
    expect(c.storeAndForward.database).toBeUndefined();
  });

  it("refuses mistakes with line:column, the key and what was expected", () => {
    expect(issuesOf("northbound:\n  sparkplug:\n    broker: tcp://host\n    groupId: a/b\n")).toEqual([
      '3:13 northbound.sparkplug.broker: expected mqtt://host:port or mqtts://host:port, got "tcp://host"',
      "4:14 northbound.sparkplug.groupId: expected a name without '+', '/' or '#' (they are MQTT topic characters), got \"a/b\"",
    ]);
    const typo = issuesOf("northbound:\n  sparkplug:\n    broker: mqtt://h\n    groupId: g\n    writeRol: operator\n");
    expect(typo).toHaveLength(1);
    expect(typo[0]).toMatch(/^5:5 northbound\.sparkplug\.writeRol: .*did you mean "writeRole"\?/);
    expect(issuesOf("northbound:\n  sparkplug:\n    broker: mqtt://h\n    groupId: g\n    writeRole: root\n")[0]).toBe('5:16 northbound.sparkplug.writeRole: expected one of "viewer", "operator", "admin", got "root"');
    expect(issuesOf("northbound:\n  sparkplug:\n    broker: mqtt://h\n    groupId: g\n    ca: ./ca.pem\n")).toEqual([
      "5:9 northbound.sparkplug.ca: expected ca only with an mqtts:// broker, got mqtt://h",
    ]);
    expect(issuesOf("northbound:\n  sparkplug:\n    broker: mqtts://h:8883\n    groupId: g\n    cert: ./c.pem\n")).toEqual(["5:11 northbound.sparkplug.cert: expected cert and key together"]);
    expect(issuesOf("northbound:\n  sparkplug:\n    broker: mqtt://h:70000\n    groupId: g\n")).toEqual(["3:13 northbound.sparkplug.broker: expected a port between 1 and 65535, got 70000"]);
    expect(issuesOf("northbound:\n  sparkplug:\n    broker: mqtt://h\n    groupId: g\n    storeAndForward: { maxSize: 10KiB }\n")[0]).toBe('5:33 northbound.sparkplug.storeAndForward.maxSize: expected a size between 1MiB and 1TiB (like 64KiB, 16MiB, 1GiB), got "10KiB"');
    expect(issuesOf("northbound:\n  sparkplug:\n    groupId: g\n")).toEqual(["3:5 northbound.sparkplug.broker: missing required key; expected mqtt://host:port or mqtts://host:port"]);
  });

  it("the commented example in config/gateway.yaml is valid once uncommented", () => {
    const text = readFileSync(join(repo, "config/gateway.yaml"), "utf8");
    const lines = text.split("\n");
    const start = lines.findIndex((l) => l.startsWith("# northbound:"));
    expect(start).toBeGreaterThan(0);
    const block: string[] = [];
    for (let i = start; i < lines.length && lines[i]!.startsWith("#"); i++) {
      const l = lines[i]!;
      // Example lines are "# key..." or "#   key..."; prose lines are "# " followed by words with spaces before a colon.
      if (/^# ( {2})*[A-Za-z]+:/.test(l)) block.push(l.slice(2).replace(/\s+#.*$/, ""));
    }
    const c = valueOf(block.join("\n") + "\n").northbound!.sparkplug!;
    expect(c.broker).toMatch(/^mqtts?:\/\//);
    expect(c.groupId).toBeTruthy();
  });

  it("a changed northbound section needs no restart (SIGHUP applies it)", () => {
    const a = valueOf("server:\n  port: 4841\n");
    const b = valueOf("server:\n  port: 4841\nnorthbound:\n  sparkplug:\n    broker: mqtt://h\n    groupId: g\n");
    expect(changesNeedingRestart(a, b)).toEqual([]);
    expect(changesNeedingRestart(b, a)).toEqual([]);
  });
});
