// The load side of the `secure` scenario (runs in the pinned load process): pipelined Reads on
// channels of one policy and mode, and back-to-back OpenSecureChannel handshakes. Both go
// through bench/client/secure-channel.ts, the same client for None and SignAndEncrypt, so the
// ratio compares the server's work and not two clients.
import { createPrivateKey } from "node:crypto";
import { performance } from "node:perf_hooks";
import { SecureClientChannel, type SecureClientOptions } from "../client/secure-channel.js";
import { cpuTimeMicros, procAvailable } from "../harness/proc.js";
import { numericNodeId } from "../../src/ua/builtins.js";
import { MessageSecurityMode, TimestampsToReturn } from "../../src/ua/generated/enums.js";
import { ObjectIds } from "../../src/ua/generated/node-ids.js";
import { StatusCodes } from "../../src/ua/generated/status-codes.js";
import { decodeReadResponse, encodeReadRequest, type ReadRequest } from "../../src/ua/generated/types.js";

export interface SecureLoadParams {
  host: string;
  port: number;
  endpointUrl: string;
  /** DER, base64. */
  serverCertificate: string;
  certificate: string;
  keyPem: string;
  /** Read phases: one per entry, in this order. */
  reads: { policyUri: string; mode: MessageSecurityMode }[];
  connections: number;
  outstanding: number;
  warmupSeconds: number;
  durationSeconds: number;
  /** Handshake phase: OPN Issue with this policy, `parallel` at a time; 0 skips it. */
  handshakePolicyUri: string;
  handshakeParallel: number;
  serverPid?: number;
}

export interface PhaseFigures {
  requests: number;
  windowSeconds: number;
  perSecond: number;
  /** Server CPU µs per request over the window (NaN without /proc). */
  serverCpuMicrosPer: number;
  serverCpuShare: number;
  loadCpuShare: number;
  errors: number;
}

export interface SecureLoadResult {
  reads: (PhaseFigures & { policyUri: string; mode: MessageSecurityMode })[];
  handshakes: PhaseFigures | null;
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

class Window {
  private t0 = 0;
  private cpu0 = 0;
  private load0 = 0;
  count = 0;
  errors = 0;
  open = false;
  constructor(private readonly pid: number | undefined) {}
  start(): void {
    this.count = 0;
    this.errors = 0;
    this.t0 = performance.now();
    this.cpu0 = this.serverCpu();
    this.load0 = loadCpu();
    this.open = true;
  }
  stop(): PhaseFigures {
    this.open = false;
    const seconds = (performance.now() - this.t0) / 1000;
    const cpu = this.serverCpu() - this.cpu0;
    return {
      requests: this.count,
      windowSeconds: seconds,
      perSecond: this.count / seconds,
      serverCpuMicrosPer: cpu / this.count,
      serverCpuShare: cpu / (seconds * 1e6),
      loadCpuShare: (loadCpu() - this.load0) / (seconds * 1e6),
      errors: this.errors,
    };
  }
  private serverCpu(): number {
    return this.pid !== undefined && procAvailable(this.pid) ? cpuTimeMicros(this.pid) : NaN;
  }
}

function loadCpu(): number {
  const u = process.cpuUsage();
  return u.user + u.system;
}

function options(p: SecureLoadParams, policyUri: string, mode: MessageSecurityMode): SecureClientOptions {
  return {
    host: p.host,
    port: p.port,
    endpointUrl: p.endpointUrl,
    policyUri,
    mode,
    certificate: Buffer.from(p.certificate, "base64"),
    privateKey: createPrivateKey(p.keyPem),
    serverCertificate: Buffer.from(p.serverCertificate, "base64"),
    applicationUri: "urn:fieldgate:bench:secure-client",
    timeoutMs: 30_000,
  };
}

async function readPhase(p: SecureLoadParams, policyUri: string, mode: MessageSecurityMode): Promise<PhaseFigures> {
  const channels: SecureClientChannel[] = [];
  for (let i = 0; i < p.connections; i++) {
    const c = await SecureClientChannel.open(options(p, policyUri, mode));
    await c.createSession();
    channels.push(c);
  }
  const w = new Window(p.serverPid);
  let running = true;
  const loops = channels.flatMap((c) =>
    Array.from({ length: p.outstanding }, async () => {
      const request: ReadRequest = {
        requestHeader: c.requestHeader(),
        maxAge: 0,
        timestampsToReturn: TimestampsToReturn.Both,
        nodesToRead: [{ nodeId: numericNodeId(2258), attributeId: 13, indexRange: undefined, dataEncoding: { namespaceIndex: 0, name: undefined as unknown as string } }],
      };
      while (running) {
        try {
          const r = await c.call(ObjectIds.ReadRequest_Encoding_DefaultBinary, encodeReadRequest, request, decodeReadResponse);
          if (w.open) {
            if (r.responseHeader.serviceResult === StatusCodes.Good) w.count++;
            else w.errors++;
          }
        } catch {
          if (w.open) w.errors++;
          return;
        }
      }
    }),
  );
  await sleep(p.warmupSeconds * 1000);
  w.start();
  await sleep(p.durationSeconds * 1000);
  const figures = w.stop();
  running = false;
  await Promise.all(loops);
  for (const c of channels) await c.close();
  return figures;
}

async function handshakePhase(p: SecureLoadParams): Promise<PhaseFigures> {
  const w = new Window(p.serverPid);
  let running = true;
  const o = options(p, p.handshakePolicyUri, MessageSecurityMode.SignAndEncrypt);
  const loops = Array.from({ length: p.handshakeParallel }, async () => {
    while (running) {
      try {
        const c = await SecureClientChannel.open(o);
        if (w.open) w.count++;
        await c.close();
      } catch {
        if (w.open) w.errors++;
        await sleep(10);
      }
    }
  });
  await sleep(p.warmupSeconds * 1000);
  w.start();
  await sleep(p.durationSeconds * 1000);
  const figures = w.stop();
  running = false;
  await Promise.all(loops);
  return figures;
}

export async function runSecureLoad(p: SecureLoadParams): Promise<SecureLoadResult> {
  const reads: SecureLoadResult["reads"] = [];
  for (const r of p.reads) reads.push({ ...(await readPhase(p, r.policyUri, r.mode)), policyUri: r.policyUri, mode: r.mode });
  const handshakes = p.handshakeParallel > 0 ? await handshakePhase(p) : null;
  return { reads, handshakes };
}
