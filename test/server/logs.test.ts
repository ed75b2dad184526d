// Logs that say what happened (issue 15): levels with the journal's PRIORITY prefixes, one line
// when a device goes failing, demoted and back (with the cause and how long it was gone, seen
// with Debian's pymodbus as the device, stopped and started again), a refused client certificate
// with its subject, thumbprint and the `fieldgate cert trust` command that lets it in (run here,
// after which node-opcua-client connects), and EADDRINUSE with the way to choose another port.
import { spawn, spawnSync } from "node:child_process";
import { closeSync, fstatSync, mkdtempSync, openSync, rmSync, writeFileSync } from "node:fs";
import net from "node:net";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { MessageSecurityMode, SecurityPolicy } from "node-opcua-client";
import { loadGatewayConfig } from "../../src/config/load.js";
import { journalStdout, Logger, type LogLevel } from "../../src/log.js";
import { humanDuration } from "../../src/server/device-log.js";
import { FieldgateServer } from "../../src/server/server.js";
import { HAVE_PYMODBUS, PYMODBUS_MISSING, startPymodbus, type PythonPeer } from "../drivers/peers.js";
import { makeCert } from "../security/certs.js";
import { secureClient } from "../security/client.js";
import { ServiceClient } from "./service-client.js";

const cli = resolve(__dirname, "../../dist/src/cli.js");
const dir = mkdtempSync(join(tmpdir(), "fieldgate-logs-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** In CI a missing peer fails the test instead of skipping it. */
const skipPymodbus = !HAVE_PYMODBUS && process.env.CI !== "true";

function capture(level: LogLevel = "debug"): { log: Logger; lines: { level: LogLevel; line: string }[] } {
  const lines: { level: LogLevel; line: string }[] = [];
  return { lines, log: new Logger({ level, journal: false, write: (line, l) => lines.push({ level: l, line }) }) };
}

async function until<T>(what: string, f: () => T | undefined, ms = 15_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = f();
    if (v !== undefined && v !== false) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

describe("the logger", () => {
  it("writes journal priorities as <N> prefixes, one per line, and plain lines elsewhere", () => {
    const out: string[] = [];
    const j = new Logger({ journal: true, level: "debug", write: (l) => out.push(l) });
    j.error("e");
    j.warn("w");
    j.notice("n");
    j.info("two\nlines");
    j.debug("d");
    expect(out).toEqual(["<3>e\n", "<4>w\n", "<5>n\n", "<6>two\n<6>lines\n", "<7>d\n"]);
    const plain: string[] = [];
    const p = new Logger({ journal: false, write: (l) => plain.push(l) });
    p.warn("careful");
    p.info("fine");
    p.debug("not shown at info");
    expect(plain).toEqual(["fieldgate: warning: careful\n", "fieldgate: fine\n"]);
  });

  it("knows the journal's stream by $JOURNAL_STREAM (device:inode of stdout)", () => {
    const file = join(dir, "stream");
    writeFileSync(file, "");
    const fd = openSync(file, "r");
    try {
      const st = fstatSync(fd, { bigint: true });
      expect(journalStdout({ JOURNAL_STREAM: `${st.dev}:${st.ino}` }, fd)).toBe(true);
      expect(journalStdout({ JOURNAL_STREAM: `${st.dev}:${st.ino + 1n}` }, fd)).toBe(false);
      expect(journalStdout({}, fd)).toBe(false);
    } finally {
      closeSync(fd);
    }
  });

  it("keeps the last lines for the status page, by sequence number", () => {
    const l = new Logger({ keep: 3, journal: false, write: () => undefined });
    for (let i = 1; i <= 5; i++) l.info(`line ${i}`);
    expect(l.recent().map((r) => r.message)).toEqual(["line 3", "line 4", "line 5"]);
    expect(l.recent(4).map((r) => r.message)).toEqual(["line 5"]);
    expect(l.lastSeq).toBe(5);
  });

  it("says durations the way people do", () => {
    expect([850, 12_340, 250_000, 7_500_000, 270_000_000].map(humanDuration)).toEqual(["850 ms", "12 s", "4 min 10 s", "2 h 5 min", "3 d 3 h"]);
    expect(humanDuration(4_200)).toBe("4.2 s");
  });
});

describe.skipIf(skipPymodbus)(`a device that drops off and comes back${HAVE_PYMODBUS ? "" : ` (${PYMODBUS_MISSING})`}`, () => {
  it("logs one line failing, one demoted and one back with the cause and the outage's length", async () => {
    let peer: PythonPeer | undefined = await startPymodbus("tcp");
    const port = peer.port;
    const root = mkdtempSync(join(dir, "device-"));
    writeFileSync(
      join(root, "devices.yaml"),
      `devices:\n  - name: plc\n    driver: modbus-tcp\n    host: 127.0.0.1\n    port: ${port}\n    rate: 100ms\n    timeout: 200ms\n    retryBackoff: 50ms\n    maxBackoff: 200ms\n    demoteAfter: 3\n    tags:\n      - { name: r0, address: holding:0 }\n`,
    );
    writeFileSync(join(root, "gateway.yaml"), "server:\n  host: 127.0.0.1\n  port: 0\ndataDir: ./data\ndevices: ./devices.yaml\nsecurity:\n  securityPolicies: [None]\n");
    const { log, lines } = capture();
    const server = new FieldgateServer(loadGatewayConfig(join(root, "gateway.yaml")), log);
    await server.start();
    try {
      await until("the first answer", () => lines.some((l) => l.line.includes("device plc: answering")));
      const downAt = Date.now();
      await peer.stop();
      peer = undefined;
      const failing = await until("the failing line", () => lines.find((l) => /device plc failing/.test(l.line)));
      expect(failing.level).toBe("warning");
      expect(failing.line).toMatch(/^fieldgate: warning: device plc failing: .*(ECONNREFUSED|ECONNRESET|closed|lost|timeout|refused).*; its values are Bad \(last value kept\), retrying every 50 ms, doubling up to 200 ms\n$/);
      const demoted = await until("the demoted line", () => lines.find((l) => /device plc demoted/.test(l.line)));
      expect(demoted.line).toMatch(/^fieldgate: warning: device plc demoted after 3 failed cycles, down for \d+ ms: .+; retried at most 200 ms apart\n$/);
      await new Promise((r) => setTimeout(r, 1500));
      peer = await startPymodbus("tcp", String(port));
      const back = await until("the back line", () => lines.find((l) => /device plc back/.test(l.line)));
      const downFor = Date.now() - downAt;
      expect(back.level).toBe("notice");
      const m = /^fieldgate: device plc back after ([\d.]+) s \((\d+) failed cycles, demoted; last error: (.+)\)\n$/.exec(back.line);
      expect(m, back.line).not.toBeNull();
      // The outage as logged: from the first failed poll to the first answer.
      expect(Number(m![1])).toBeGreaterThanOrEqual(1.4);
      expect(Number(m![1]) * 1000).toBeLessThanOrEqual(downFor + 100);
      expect(Number(m![2])).toBeGreaterThanOrEqual(3);
      // One line each: no repeats while it stays down.
      expect(lines.filter((l) => /device plc (failing|demoted|back)/.test(l.line)).map((l) => /device plc (\w+)/.exec(l.line)![1])).toEqual(["failing", "demoted", "back"]);
      expect(server.deviceRuntime.poller("plc")!.state).toBe("ok");
    } finally {
      await server.stop();
      await peer?.stop();
    }
  }, 40_000);
});

describe("a refused client certificate", () => {
  it("is logged with its subject, thumbprint and the command that trusts it; the command works", async () => {
    const root = mkdtempSync(join(dir, "cert-"));
    const configFile = join(root, "gateway.yaml");
    writeFileSync(configFile, "server:\n  host: 127.0.0.1\n  port: 0\ndataDir: ./data\nsecurity:\n  securityPolicies: [None, Basic256Sha256]\n");
    const { log, lines } = capture();
    const server = new FieldgateServer(loadGatewayConfig(configFile), log, { configFile });
    await server.start();
    const cert = await makeCert({ commonName: "line-3-hmi" });
    const url = `opc.tcp://127.0.0.1:${server.port}`;
    try {
      const refused = secureClient({ dir: root, cert, policy: SecurityPolicy.Basic256Sha256, mode: MessageSecurityMode.SignAndEncrypt });
      await expect(refused.connect(url)).rejects.toThrow();
      await refused.disconnect();
      const line = await until("the refusal", () => lines.find((l) => l.line.includes("certificate refused"))?.line);
      const tp = server.pki!.list().rejected[0]!.thumbprint;
      expect(line).toBe(
        `fieldgate: warning: certificate refused (BadCertificateUntrusted): CN=line-3-hmi, O=fieldgate tests, thumbprint ${tp}, urn:fieldgate:test-client: ` +
          `not trusted; saved in ${join(root, "data", "pki", "rejected", "certs")}. If it is yours, trust it with: fieldgate cert trust --config ${configFile} ${tp}\n`,
      );
      // A client that keeps retrying is not logged again at once.
      const again = secureClient({ dir: root, cert, policy: SecurityPolicy.Basic256Sha256, mode: MessageSecurityMode.SignAndEncrypt });
      await expect(again.connect(url)).rejects.toThrow();
      await again.disconnect();
      expect(lines.filter((l) => l.line.includes("certificate refused"))).toHaveLength(1);
      // The command as logged.
      const args = /fieldgate (cert trust --config \S+ [0-9a-f]{40})/.exec(line)![1]!.split(" ");
      const trust = spawnSync(process.execPath, [cli, ...args], { encoding: "utf8", timeout: 20_000 });
      expect(trust.stderr).toBe("");
      expect(trust.status).toBe(0);
      const client = secureClient({ dir: root, cert, policy: SecurityPolicy.Basic256Sha256, mode: MessageSecurityMode.SignAndEncrypt });
      await client.connect(url);
      const session = await client.createSession();
      await session.close();
      await client.disconnect();
    } finally {
      await server.stop();
    }
  }, 60_000);
});

describe("a port in use", () => {
  function occupy(): Promise<net.Server> {
    return new Promise((r) => {
      const s = net.createServer();
      s.listen(0, "127.0.0.1", () => r(s));
    });
  }

  function runCli(config: string): Promise<{ code: number | null; stderr: string }> {
    return new Promise((r) => {
      const child = spawn(process.execPath, [cli, "run", "--config", config], { stdio: ["ignore", "pipe", "pipe"] });
      let stderr = "";
      child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
      const t = setTimeout(() => child.kill("SIGKILL"), 20_000);
      child.on("exit", (code) => {
        clearTimeout(t);
        r({ code, stderr });
      });
    });
  }

  it("names the port, the setting and --port, and exits 1 (opc.tcp)", async () => {
    const taken = await occupy();
    const port = (taken.address() as net.AddressInfo).port;
    const root = mkdtempSync(join(dir, "port-"));
    const config = join(root, "gateway.yaml");
    writeFileSync(config, `server:\n  host: 127.0.0.1\n  port: ${port}\ndataDir: ./data\nsecurity:\n  securityPolicies: [None]\n`);
    try {
      const r = await runCli(config);
      expect(r.code).toBe(1);
      expect(r.stderr).toContain(
        `fieldgate: error: opc.tcp: port ${port} on 127.0.0.1 is already in use by another program (another fieldgate?); \`ss -ltnp 'sport = :${port}'\` shows which. Choose another port with server.port in ${config}, or run with --port N (0: any free port)`,
      );
    } finally {
      taken.close();
    }
  }, 30_000);

  it("and for the status page, web.port: logged, and the gateway runs on without its page", async () => {
    const taken = await occupy();
    const port = (taken.address() as net.AddressInfo).port;
    const root = mkdtempSync(join(dir, "webport-"));
    const config = join(root, "gateway.yaml");
    writeFileSync(config, `server:\n  host: 127.0.0.1\n  port: 0\ndataDir: ./data\nsecurity:\n  securityPolicies: [None]\nweb:\n  enabled: true\n  tls: false\n  port: ${port}\n`);
    const child = spawn(process.execPath, [cli, "run", "--config", config], { stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    child.stdout!.on("data", (d: Buffer) => (out += d.toString()));
    child.stderr!.on("data", (d: Buffer) => (out += d.toString()));
    const exited = new Promise<number | null>((r) => child.once("exit", (code) => r(code)));
    try {
      for (let i = 0; i < 400 && !/The gateway runs without its status page/.test(out) && child.exitCode === null; i++) await new Promise((r) => setTimeout(r, 50));
      expect(out).toContain(`status page: port ${port} on 127.0.0.1 is already in use by another program`);
      expect(out).toContain(`Choose another port with web.port in ${config} (0: any free port), or web.enabled: false`);
      expect(child.exitCode).toBeNull();
      // OPC UA is served all the same.
      const m = /listening on opc\.tcp:\/\/[^:]+:(\d+)/.exec(out);
      expect(m).not.toBeNull();
      const c = await ServiceClient.open(Number(m![1]));
      try {
        expect("sessionId" in (await c.createSession())).toBe(true);
      } finally {
        c.close();
      }
    } finally {
      child.kill("SIGTERM");
      taken.close();
    }
    expect(await exited).toBe(0);
  }, 30_000);
});
