// Scenario `secure` (issue 6): Read throughput with SignAndEncrypt relative to None in the same
// run (same server process, same client code, one phase after the other), and OpenSecureChannel
// handshakes per second with the server pinned to one core. The gateway runs from a generated
// gateway.yaml (all policies, the handshake limiter opened wide so that it measures RSA and not
// the limiter); the load's client certificate is put into the server's trusted/ folder, which
// the server re-reads without a restart.
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { createOwnCertificate } from "../../src/security/certificates.js";
import { POLICY_ALGORITHMS, SECURE_POLICY_NAMES, type SecurePolicyName } from "../../src/security/policies.js";
import { SECURITY_POLICY_NONE_URI } from "../../src/security/security-policy.js";
import { MessageSecurityMode } from "../../src/ua/generated/enums.js";
import { Histogram } from "../client/histogram.js";
import { IDLE_SETTLE_MS } from "../harness/case.js";
import { runModuleLoad } from "../harness/load-process.js";
import { memoryOf } from "../harness/proc.js";
import type { CaseResult, Figures } from "../harness/report.js";
import { COMMON_OPTIONS, COMMON_USAGE, commonFrom, positive, type CommonOptions, type Scenario } from "../harness/scenario.js";
import { fieldgateCli } from "../targets/fieldgate.js";
import type { PhaseFigures, SecureLoadParams, SecureLoadResult } from "./secure-load.js";

export interface SecureScenarioOptions extends CommonOptions {
  policy: SecurePolicyName;
  connections: number;
  outstanding: number;
  handshakeParallel: number;
  warmupSeconds: number;
  durationSeconds: number;
}

const USAGE = `npm run bench -- secure [options]
  --policy NAME       ${SECURE_POLICY_NAMES.join(" | ")} (default Basic256Sha256)
  --connections N     connections of each Read phase (default 4)
  --outstanding N     Reads in flight per connection (default 16)
  --parallel N        handshakes under way at once (default 4; 0 skips the handshake phase)
  --warmup S          seconds before each window (default 1)
  --duration S        seconds of each window (default 5)
${COMMON_USAGE}`;

export function parseSecureOptions(argv: readonly string[]): SecureScenarioOptions | null {
  const { values } = parseArgs({
    args: [...argv],
    strict: true,
    allowPositionals: false,
    options: {
      ...COMMON_OPTIONS,
      policy: { type: "string" },
      connections: { type: "string" },
      outstanding: { type: "string" },
      parallel: { type: "string" },
      warmup: { type: "string" },
      duration: { type: "string" },
    },
  });
  if (values.help) return null;
  const policy = (values.policy ?? "Basic256Sha256") as SecurePolicyName;
  if (!SECURE_POLICY_NAMES.includes(policy)) throw new Error(`--policy: expected one of ${SECURE_POLICY_NAMES.join(", ")}, got "${values.policy}"`);
  return {
    ...commonFrom(values),
    policy,
    connections: positive("connections", values.connections, 4),
    outstanding: positive("outstanding", values.outstanding, 16),
    handshakeParallel: values.parallel === "0" ? 0 : positive("parallel", values.parallel, 4),
    warmupSeconds: values.warmup === "0" ? 0 : positive("warmup", values.warmup, 1, false),
    durationSeconds: positive("duration", values.duration, 5, false),
  };
}

function figures(p: PhaseFigures, startMs: number, idleRss: number, endRss: number, peakRss: number): Figures {
  const empty = new Histogram();
  return {
    requests: p.requests,
    windowSeconds: p.windowSeconds,
    requestsPerSecond: p.perSecond,
    latencyMicros: { p50: NaN, p90: NaN, p99: NaN, p999: NaN, max: NaN, mean: empty.mean() },
    serverCpuMicrosPerRequest: p.serverCpuMicrosPer,
    serverCpuShare: p.serverCpuShare,
    loadCpuShare: p.loadCpuShare,
    serverRssIdleBytes: idleRss,
    serverRssEndBytes: endRss,
    serverPeakRssBytes: peakRss,
    serverHeapIdleBytes: NaN,
    serverHeapUsedEndBytes: NaN,
    serverHeapTotalEndBytes: NaN,
    gcPauseMs: NaN,
    gcCount: NaN,
    gcPausePerSecondMs: NaN,
    startToListeningMs: startMs,
    errors: p.errors,
    errorsTotal: p.errors,
    channelFaults: 0,
    lostInFlight: 0,
    verifiedResponses: 0,
  };
}

function gatewayYaml(dataDir: string): string {
  return [
    "server:",
    "  host: 127.0.0.1",
    "  port: 0",
    "  testNamespace: false",
    `dataDir: ${JSON.stringify(dataDir)}`,
    "security:",
    "  securityPolicies: [None, Basic256Sha256, Aes128_Sha256_RsaOaep, Aes256_Sha256_RsaPss]",
    "  handshakes:",
    "    maxQueued: 10000",
    "    ratePerAddress: 10000",
    "    burstPerAddress: 10000",
    "limits:",
    "  maxChannels: 1000",
    "",
  ].join("\n");
}

export const secureScenario: Scenario<SecureScenarioOptions> = {
  name: "secure",
  summary: "Read in SignAndEncrypt vs None (same run), OpenSecureChannel handshakes/s on one core",
  usage: USAGE,
  parse: parseSecureOptions,
  smokeArgs: ["--connections", "1", "--outstanding", "2", "--parallel", "1", "--duration", "1", "--warmup", "0"],
  async run(ctx, options) {
    const results: CaseResult[] = [];
    for (const target of ctx.targets) {
      if (target.name !== "fieldgate") {
        ctx.log(`secure: skipped for ${target.name} (fieldgate only: the peer has no PKI set-up here)`);
        continue;
      }
      const dir = mkdtempSync(join(tmpdir(), "fieldgate-bench-secure-"));
      try {
        const config = join(dir, "gateway.yaml");
        writeFileSync(config, gatewayYaml(join(dir, "data")));
        // The certificate made beforehand, as on any start but the first: creating it loads
        // node-opcua-crypto (about 20 MB of RSS until the next start), which idle RSS would show.
        execFileSync(process.execPath, [fieldgateCli(ctx.root), "cert", "thumbprint", "--config", config], { stdio: "ignore", timeout: 60_000 });
        const server = await target.start({ cpu: ctx.serverCpu, config });
        try {
          await new Promise((r) => setTimeout(r, IDLE_SETTLE_MS));
          const idleRss = memoryOf(server.pid).rss;
          const pki = join(dir, "data", "pki");
          const serverCertificate = readFileSync(join(pki, "own", "certs", "fieldgate.der"));
          const client = await createOwnCertificate({ applicationUri: "urn:fieldgate:bench:secure-client", applicationName: "bench client", validityDays: 2 });
          writeFileSync(join(pki, "trusted", "certs", "bench-client.der"), client.certificate);
          const policyUri = POLICY_ALGORITHMS[options.policy].uri;
          const params: SecureLoadParams = {
            host: server.host,
            port: server.port,
            endpointUrl: server.endpointUrl,
            serverCertificate: serverCertificate.toString("base64"),
            certificate: client.certificate.toString("base64"),
            keyPem: client.privateKey.export({ type: "pkcs8", format: "pem" }).toString(),
            reads: [
              { policyUri: SECURITY_POLICY_NONE_URI, mode: MessageSecurityMode.None },
              { policyUri, mode: MessageSecurityMode.SignAndEncrypt },
            ],
            connections: options.connections,
            outstanding: options.outstanding,
            warmupSeconds: options.warmupSeconds,
            durationSeconds: options.durationSeconds,
            handshakePolicyUri: policyUri,
            handshakeParallel: options.handshakeParallel,
            serverPid: server.pid,
          };
          ctx.log(`secure: ${options.policy}, ${options.connections} x ${options.outstanding} Reads, ${options.handshakeParallel} parallel handshakes`);
          const { result, pinnedCpu } = await runModuleLoad<SecureLoadParams, SecureLoadResult>(
            new URL("./secure-load.js", import.meta.url).href,
            "runSecureLoad",
            params,
            ctx.load,
          );
          const conditions = {
            connections: options.connections,
            outstanding: options.outstanding,
            warmupSeconds: options.warmupSeconds,
            durationSeconds: options.durationSeconds,
            serverCpu: server.pinnedCpu ?? null,
            loadCpu: pinnedCpu ?? null,
            loadInline: ctx.load.inline ?? false,
            idleRssAfterMs: IDLE_SETTLE_MS,
          };
          const mem = memoryOf(server.pid);
          const none = result.reads[0];
          for (const r of result.reads) {
            const name = r.mode === MessageSecurityMode.None ? "None" : `${options.policy} SignAndEncrypt`;
            results.push({
              scenario: "secure",
              case: `Read ${name}, ${options.connections}x${options.outstanding}`,
              target: target.name,
              figures: figures(r, server.startToListeningMs, idleRss, mem.rss, mem.peakRss),
              conditions,
              errorKinds: r.errors ? { read: r.errors } : {},
              notes:
                r === none
                  ? ["the same client code as the signed phase (bench/client/secure-channel.ts), not the optimized None pipeline of `read`"]
                  : [`${((100 * r.perSecond) / none.perSecond).toFixed(0)} % of None's Reads/s in the same run; server CPU per Read ${(r.serverCpuMicrosPer / none.serverCpuMicrosPer).toFixed(2)}x None's`],
            });
          }
          if (result.handshakes !== null) {
            const h = result.handshakes;
            results.push({
              scenario: "secure",
              case: `OpenSecureChannel ${options.policy} SignAndEncrypt, ${options.handshakeParallel} parallel`,
              target: target.name,
              unit: "handshakes/s",
              figures: figures(h, server.startToListeningMs, idleRss, mem.rss, mem.peakRss),
              conditions: { ...conditions, connections: options.handshakeParallel, outstanding: 1 },
              errorKinds: h.errors ? { handshake: h.errors } : {},
              notes: ["connect, HEL/ACK, OPN Issue (RSA 2048 both ends: client certificate checked against trusted/), CLO; server CPU per handshake is the RSA cost on one core"],
            });
          }
        } finally {
          await server.stop();
        }
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    }
    return results;
  },
};
