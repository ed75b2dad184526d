import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { hostname, tmpdir } from "node:os";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { gatewaySchema } from "../../src/config/gateway-config.js";
import { renderGatewayJsonSchema } from "../../src/config/json-schema.js";
import { ConfigError, formatIssue, loadGatewayConfig, validateConfigFile, validateYaml } from "../../src/config/load.js";

const here = dirname(fileURLToPath(import.meta.url));
const repo = resolve(here, "../..");
const fixtures = join(here, "fixtures");
const FILE = "config/gateway.yaml";

/** Issues of `text` as `line:col path: message`, the way a person reads them. */
function issuesOf(text: string): string[] {
  const r = validateYaml(gatewaySchema, text, FILE);
  return r.issues.map((i) => `${i.line}:${i.column} ${i.path}: ${i.message}`);
}

function valueOf(text: string, file = join(repo, FILE)) {
  const r = validateYaml(gatewaySchema, text, file);
  if (!r.ok) throw new ConfigError(r.issues);
  return r.value;
}

describe("the default gateway.yaml", () => {
  it("loads, with port 4840, the test namespace off and dataDir ../data", () => {
    const c = loadGatewayConfig(join(repo, "config/gateway.yaml"));
    expect(c.server.port).toBe(4840);
    expect(c.server.host).toBe("0.0.0.0");
    expect(c.server.testNamespace).toBe(false);
    expect(c.dataDir).toBe(join(repo, "data"));
    expect(c.devices).toBe(join(repo, "config/devices.yaml"));
    expect(c.security.securityPolicies).toEqual(["None", "Basic256Sha256", "Aes128_Sha256_RsaOaep", "Aes256_Sha256_RsaPss"]);
  });

  it("points editors at the committed JSON Schema", () => {
    const text = readFileSync(join(repo, "config/gateway.yaml"), "utf8");
    expect(text.split("\n")[0]).toBe("# yaml-language-server: $schema=./gateway.schema.json");
  });

  it("shows, commented out, exactly the defaults the code uses", () => {
    // Uncommenting every `# key: value` line must change nothing: the comments do not lie.
    const file = join(repo, "config/gateway.yaml");
    const text = readFileSync(file, "utf8");
    const uncommented = text.replace(/^( {2})# (\w+: )/gm, "$1$2");
    expect(uncommented).not.toBe(text);
    const a = loadGatewayConfig(file);
    const b = valueOf(uncommented, file);
    expect(b).toEqual({ ...a, server: { ...a.server, applicationUri: "urn:my-gateway:fieldgate" } });
  });
});

describe("defaults", () => {
  it("fill in every key that a file leaves out", () => {
    const c = valueOf("server:\n  port: 4841\n");
    expect(c.server).toEqual({
      host: "0.0.0.0",
      port: 4841,
      applicationName: "fieldgate",
      applicationUri: `urn:${hostname()}:fieldgate`,
      productUri: "urn:fieldgate",
      testNamespace: false,
      benchNamespace: 0,
    });
    expect(c.security).toEqual({
      allowAnonymous: true,
      anonymousRole: "viewer",
      lockout: { maxFailuresPerUser: 5, maxFailuresPerAddress: 20, duration: 300_000 },
      securityPolicies: ["None", "Basic256Sha256", "Aes128_Sha256_RsaOaep", "Aes256_Sha256_RsaPss"],
      securityModes: ["Sign", "SignAndEncrypt"],
      certificateValidity: 1825 * 86_400_000,
      maxChainLength: 5,
      maxRejectedCertificates: 100,
      handshakes: { maxConcurrent: 2, maxQueued: 32, ratePerAddress: 10, burstPerAddress: 20 },
    });
    expect(c.limits).toEqual({
      maxSessions: 100,
      maxChannels: 100,
      minSessionTimeout: 10_000,
      maxSessionTimeout: 3_600_000,
      maxBrowseContinuationPoints: 10,
      maxNodesPerRead: 10_000,
      maxNodesPerWrite: 10_000,
      maxNodesPerBrowse: 1000,
      maxNodesPerTranslateBrowsePathsToNodeIds: 1000,
      maxNodesPerRegisterNodes: 1000,
      maxNodesPerMethodCall: 100,
      maxBrowsePathElements: 64,
      maxReferencesPerNode: 1000,
      maxStringLength: 1024 * 1024,
      maxByteStringLength: 16 * 1024 * 1024,
      maxArrayLength: 1_000_000,
      maxSubscriptions: 500,
      maxSubscriptionsPerSession: 50,
      maxMonitoredItems: 100_000,
      maxMonitoredItemsPerSubscription: 50_000,
      maxMonitoredItemsPerCall: 50_000,
      maxMonitoredItemsQueueSize: 1000,
      minPublishingInterval: 10,
      maxPublishingInterval: 3_600_000,
      minSamplingInterval: 10,
      maxKeepAliveCount: 1000,
      maxLifetimeCount: 15_000,
      maxNotificationsPerPublish: 65_536,
      maxPublishRequestsPerSession: 10,
    });
    expect(c.transport).toEqual({
      receiveBufferSize: 65536,
      sendBufferSize: 65536,
      maxMessageSize: 16 * 1024 * 1024,
      maxChunkCount: 256,
      helloTimeout: 5000,
      incompleteMessageTimeout: 10_000,
      memoryLimit: 32 * 1024 * 1024,
      maxPendingBytesPerChannel: undefined,
      sendTimeout: 10_000,
      highWaterMark: 100,
      lowWaterMark: 50,
      minTokenLifetime: 10_000,
      maxTokenLifetime: 3_600_000,
    });
  });

  it("treat a section whose keys are all commented out as empty", () => {
    expect(valueOf("limits:\n  # maxSessions: 5\nserver:\n  port: 1\n").limits.maxSessions).toBe(100);
  });
});

describe("durations and sizes", () => {
  it.each([
    ["500ms", 500],
    ["1s", 1000],
    ["5m", 300_000],
    ["1h", 3_600_000],
    ["1m30s", 90_000],
    ["1.5s", 1500],
    ["2500", 2500],
  ])("maxSessionTimeout: %s is %i ms", (text, ms) => {
    const yaml = `limits:\n  minSessionTimeout: 100ms\n  maxSessionTimeout: ${text}\n`;
    expect(valueOf(yaml).limits.maxSessionTimeout).toBe(ms);
  });

  it.each([
    ["64KiB", 65536],
    ["16MiB", 16 * 1024 * 1024],
    ["1GiB", 1024 ** 3],
    ["4096B", 4096],
    ["100000", 100_000],
    ["0.5MiB", 512 * 1024],
  ])("maxStringLength: %s is %i bytes", (text, bytes) => {
    expect(valueOf(`limits:\n  maxStringLength: ${text}\n`).limits.maxStringLength).toBe(bytes);
  });
});

describe("paths", () => {
  it("resolve against the folder of the file that holds them", () => {
    const dir = mkdtempSync(join(tmpdir(), "fieldgate-config-"));
    mkdirSync(join(dir, "etc"));
    const file = join(dir, "etc", "gateway.yaml");
    writeFileSync(file, "dataDir: ../var/data\ndevices: ./devices.yaml\n");
    const c = loadGatewayConfig(file);
    expect(c.dataDir).toBe(join(dir, "var", "data"));
    expect(c.devices).toBe(join(dir, "etc", "devices.yaml"));
  });

  it("resolve the default dataDir against the file too, wherever the process runs", () => {
    const dir = mkdtempSync(join(tmpdir(), "fieldgate-config-"));
    const file = join(dir, "gateway.yaml");
    writeFileSync(file, "server: {}\n");
    expect(loadGatewayConfig(file).dataDir).toBe(resolve(dir, "../data"));
  });

  it("keep absolute paths as they are", () => {
    expect(valueOf("dataDir: /var/lib/fieldgate\n").dataDir).toBe("/var/lib/fieldgate");
  });
});

// Each broken file with every issue it must produce, as `line:column path: message`.
const broken: [name: string, yaml: string, issues: string[]][] = [
  [
    "wrong type",
    "limits:\n  maxNodesPerRead: ten\n",
    ['2:20 limits.maxNodesPerRead: expected an integer between 1 and 100000, got "ten"'],
  ],
  [
    "unknown key, with a suggestion",
    "limits:\n  maxNodesPerReed: 10\n",
    ['2:3 limits.maxNodesPerReed: unknown key; did you mean "maxNodesPerRead"?'],
  ],
  ["unknown section, with a suggestion", "sever:\n  port: 1\n", ['1:1 sever: unknown key; did you mean "server"?']],
  [
    "unknown key, nothing close",
    "security:\n  password: x\n",
    [
      "2:3 security.password: unknown key; expected one of allowAnonymous, anonymousRole, lockout, securityPolicies, securityModes, certificateValidity, maxChainLength, maxRejectedCertificates, handshakes",
    ],
  ],
  ["out of range", "server:\n  port: 70000\n", ["2:9 server.port: expected an integer between 0 and 65535, got 70000"]],
  ["not an integer", "limits:\n  maxSessions: 1.5\n", ["2:16 limits.maxSessions: expected an integer between 1 and 10000, got 1.5"]],
  [
    "bad duration",
    "limits:\n  minSessionTimeout: 10 seconds\n",
    ['2:22 limits.minSessionTimeout: expected a duration between 100ms and 1d (like 500ms, 10s, 5m, 1h), got "10 seconds"'],
  ],
  [
    "duration without a unit",
    'transport:\n  helloTimeout: "5"\n',
    ['2:17 transport.helloTimeout: expected a duration between 100ms and 10m (like 500ms, 10s, 5m, 1h), got "5"; add a unit, e.g. "5ms" or "5s"'],
  ],
  [
    "duration out of range",
    "transport:\n  helloTimeout: 1h\n",
    ["2:17 transport.helloTimeout: expected a duration between 100ms and 10m (like 500ms, 10s, 5m, 1h), got \"1h\""],
  ],
  [
    "decimal size unit",
    "limits:\n  maxStringLength: 64KB\n",
    ['2:20 limits.maxStringLength: expected a size between 1KiB and 1GiB (like 64KiB, 16MiB, 1GiB), got "64KB"; sizes use binary units: did you mean "64KiB"?'],
  ],
  [
    "bad enum",
    "security:\n  securityPolicies: [none, Basic128Rsa15]\n",
    [
      '2:22 security.securityPolicies[0]: expected one of "None", "Basic256Sha256", "Aes128_Sha256_RsaOaep", "Aes256_Sha256_RsaPss", got "none"; did you mean "None"?',
      '2:28 security.securityPolicies[1]: expected one of "None", "Basic256Sha256", "Aes128_Sha256_RsaOaep", "Aes256_Sha256_RsaPss", got "Basic128Rsa15"',
    ],
  ],
  [
    "empty list",
    "security:\n  securityPolicies: []\n",
    ['2:21 security.securityPolicies: expected a list of at least 1 item, each one of "None", "Basic256Sha256", "Aes128_Sha256_RsaOaep", "Aes256_Sha256_RsaPss", got an empty list'],
  ],
  ["same policy twice", "security:\n  securityPolicies: [None, None]\n", ['2:28 security.securityPolicies[1]: duplicate entry "None"']],
  [
    "yes is not a boolean",
    "server:\n  testNamespace: yes\n",
    ['2:18 server.testNamespace: expected true or false, got "yes"; YAML 1.2 reads only true and false as booleans'],
  ],
  ["empty value", "server:\n  port:\n", ["2:8 server.port: expected an integer between 0 and 65535, got an empty value"]],
  [
    "not a URI",
    "server:\n  applicationUri: my server\n",
    ['2:19 server.applicationUri: expected a URI such as urn:my-gateway:fieldgate, got "my server"'],
  ],
  [
    "YAML syntax error",
    "server:\n  port: [1, 2\n",
    ["3:1 : YAML syntax error: Flow sequence in block collection must be sufficiently indented and end with a ]"],
  ],
  ["duplicate key", "server:\n  port: 1\n  host: a\n  port: 2\n", ["4:3 server.port: duplicate key; first given at line 2"]],
  [
    "lowWaterMark >= highWaterMark",
    "transport:\n  lowWaterMark: 100\n  highWaterMark: 100\n",
    ["2:17 transport.lowWaterMark: expected less than highWaterMark (100), got 100"],
  ],
  [
    "highWaterMark below the default lowWaterMark",
    "transport:\n  highWaterMark: 40\n",
    ["2:18 transport.highWaterMark: expected more than lowWaterMark (50), got 40"],
  ],
  [
    "minSessionTimeout > maxSessionTimeout",
    "limits:\n  maxSessionTimeout: 1m\n  minSessionTimeout: 2m\n",
    ["3:22 limits.minSessionTimeout: expected at most maxSessionTimeout (1m), got 2m"],
  ],
  [
    "pending bytes per channel above the memory limit",
    "transport:\n  maxPendingBytesPerChannel: 128MiB\n",
    ["2:30 transport.maxPendingBytesPerChannel: expected at most memoryLimit (32MiB), got 128MiB"],
  ],
  [
    "a memory limit below the given per-channel bound",
    "transport:\n  maxPendingBytesPerChannel: 16MiB\n  memoryLimit: 8MiB\n",
    ["2:30 transport.maxPendingBytesPerChannel: expected at most memoryLimit (8MiB), got 16MiB"],
  ],
  [
    "a memory limit that holds fewer than 8 chunks",
    "transport:\n  memoryLimit: 2MiB\n  receiveBufferSize: 1MiB\n",
    ["2:16 transport.memoryLimit: expected memoryLimit (2MiB) to hold at least 8 chunks of 1MiB"],
  ],
  [
    "a retired key (memoryLimit bounds the buffers now)",
    "transport:\n  bufferPoolSize: 1024\n",
    [
      "2:3 transport.bufferPoolSize: unknown key; expected one of receiveBufferSize, sendBufferSize, maxMessageSize, maxChunkCount, helloTimeout, incompleteMessageTimeout, memoryLimit, maxPendingBytesPerChannel, sendTimeout, highWaterMark, lowWaterMark, minTokenLifetime, maxTokenLifetime",
    ],
  ],
  ["empty file", "", ["1:1 : the file is empty; expected a mapping (server, dataDir, devices, security, users, limits, transport, history, northbound, web, log, update)"]],
  ["only comments", "# server:\n#   port: 1\n", ["1:1 : the file is empty; expected a mapping (server, dataDir, devices, security, users, limits, transport, history, northbound, web, log, update)"]],
  ["a list where a mapping was expected", "limits:\n  - maxSessions: 1\n", ["2:3 limits: expected a mapping, got a list of 1 item"]],
  [
    "a list at the top",
    "- server\n- limits\n",
    ["1:1 : expected a mapping (server, dataDir, devices, security, users, limits, transport, history, northbound, web, log, update), got a list of 2 items"],
  ],
  ["tabs", "server:\n\tport: 1\n", ["2:1 : YAML syntax error: a tab is used for indentation; YAML indents with spaces only"]],
  [
    "two documents",
    "server: {}\n---\nlimits: {}\n",
    ["2:1 : YAML syntax error: the file holds more than one YAML document (a second ---); a config file holds one"],
  ],
  ["empty path", 'dataDir: ""\n', ['1:10 dataDir: expected a path (relative to this file\'s folder, or absolute), got ""']],
  [
    "several problems at once, in file order",
    "server:\n  port: -1\n  hots: x\nlimits:\n  maxSessions: 0\n",
    [
      "2:9 server.port: expected an integer between 0 and 65535, got -1",
      '3:3 server.hots: unknown key; did you mean "host"?',
      "5:16 limits.maxSessions: expected an integer between 1 and 10000, got 0",
    ],
  ],
];

describe("broken files", () => {
  it.each(broken)("%s", (_name, yaml, expected) => {
    expect(issuesOf(yaml)).toEqual(expected);
  });

  it("are at least 12", () => {
    expect(broken.length).toBeGreaterThanOrEqual(12);
  });
});

describe("loadGatewayConfig", () => {
  it("throws one ConfigError that prints file:line:column: path: message, one issue per line", () => {
    const file = join(fixtures, "two-mistakes.yaml");
    let err: unknown;
    try {
      loadGatewayConfig(file);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ConfigError);
    const ce = err as ConfigError;
    expect(ce.code).toBe("ERR_FIELDGATE_CONFIG");
    expect(ce.message).toBe(
      [
        `${file}:5:3: limits.maxNodesPerReed: unknown key; did you mean "maxNodesPerRead"?`,
        `${file}:9:17: transport.lowWaterMark: expected less than highWaterMark (100), got 200`,
      ].join("\n"),
    );
    expect(ce.issues.map(formatIssue).join("\n")).toBe(ce.message);
  });

  it("shows the file name as it was given", () => {
    const rel = relative(process.cwd(), join(fixtures, "tabs.yaml"));
    const issues = validateConfigFile(rel);
    expect(issues).toEqual([
      { file: rel, line: 3, column: 1, path: "", message: "YAML syntax error: a tab is used for indentation; YAML indents with spaces only" },
    ]);
    expect(() => loadGatewayConfig(rel)).toThrow(`${rel}:3:1: YAML syntax error: a tab is used`);
  });

  it("refuses a missing file clearly", () => {
    const file = join(tmpdir(), "fieldgate-no-such-dir", "gateway.yaml");
    expect(validateConfigFile(file)).toEqual([{ file, line: 0, column: 0, path: "", message: "file not found" }]);
    expect(() => loadGatewayConfig(file)).toThrow(`${file}: file not found`);
  });

  it("refuses a folder", () => {
    expect(validateConfigFile(fixtures)[0]?.message).toBe("this is a folder, expected a YAML file");
  });

  it("returns no issues for a good file", () => {
    expect(validateConfigFile(join(repo, "config/gateway.yaml"))).toEqual([]);
  });
});

describe("config/gateway.schema.json", () => {
  it("is what the code produces (regenerate: node dist/src/build/write-schema.js)", () => {
    expect(readFileSync(join(repo, "config/gateway.schema.json"), "utf8")).toBe(renderGatewayJsonSchema());
  });

  it("describes every key, with defaults an editor can show", () => {
    const schema = JSON.parse(renderGatewayJsonSchema()) as {
      properties: Record<string, { properties?: Record<string, { default?: unknown; description?: string }> }>;
      additionalProperties: boolean;
    };
    expect(schema.additionalProperties).toBe(false);
    const limits = schema.properties.limits!.properties!;
    expect(limits.maxNodesPerRead).toMatchObject({ default: 10000, minimum: 1, maximum: 100000, type: "integer" });
    expect(limits.minSessionTimeout?.default).toBe("10s");
    for (const section of ["server", "security", "limits", "transport"]) {
      for (const [key, prop] of Object.entries(schema.properties[section]!.properties!)) {
        expect(prop.description, `${section}.${key}`).toBeTruthy();
      }
    }
  });
});
