// OpenSecureChannel floods: the limiter's token buckets and queue on a fake clock, and against
// the real server a burst of signed OPNs from one address while an established session keeps
// reading: the burst beyond the per-address allowance is refused (BadTcpNotEnoughResources)
// before any RSA work, and every Read of the established session is answered.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SecureClientChannel, SecureClientError } from "../../bench/client/secure-channel.js";
import { HandshakeLimiter, type HandshakeJob } from "../../src/security/handshake-limiter.js";
import { POLICY_ALGORITHMS } from "../../src/security/policies.js";
import { numericNodeId } from "../../src/ua/builtins.js";
import { MessageSecurityMode, SecurityTokenRequestType, TimestampsToReturn } from "../../src/ua/generated/enums.js";
import { ObjectIds } from "../../src/ua/generated/node-ids.js";
import { StatusCodes } from "../../src/ua/generated/status-codes.js";
import { decodeReadResponse, encodeReadRequest } from "../../src/ua/generated/types.js";
import { startGateway, type TestGateway } from "../helpers/gateway.js";
import { makeCert, type TestCert } from "./certs.js";

describe("HandshakeLimiter", () => {
  it("gives each address its burst, then its rate", () => {
    let now = 0;
    const l = new HandshakeLimiter({ ratePerAddress: 2, burstPerAddress: 3 }, () => now);
    expect([1, 2, 3, 4].map(() => l.admit("10.0.0.1"))).toEqual([true, true, true, false]);
    expect(l.admit("10.0.0.2")).toBe(true);
    now += 500; // one more token at 2/s
    expect([l.admit("10.0.0.1"), l.admit("10.0.0.1")]).toEqual([true, false]);
    now += 60_000; // never more than the burst
    expect([1, 2, 3, 4].map(() => l.admit("10.0.0.1"))).toEqual([true, true, true, false]);
    expect(l.refused).toBe(3);
  });

  it("runs at most maxConcurrent queued handshakes per turn and refuses past maxQueued", async () => {
    const l = new HandshakeLimiter({ maxConcurrent: 2, maxQueued: 3 });
    const turns: number[] = [];
    let turn = 0;
    const job: HandshakeJob = { runHandshake: () => turns.push(turn) };
    expect([1, 2, 3, 4].map(() => l.submit(job))).toEqual([true, true, true, false]);
    // Count event-loop turns while the queue drains.
    await new Promise<void>((resolve) => {
      const tick = (): void => {
        turn++;
        if (l.queued === 0) resolve();
        else setImmediate(tick);
      };
      setImmediate(tick);
    });
    expect(turns.length).toBe(3);
    expect(new Set(turns).size).toBe(2); // 2 in one turn, 1 in the next
    l.clear();
  });
});

describe("an OPN flood against the server", () => {
  let gw: TestGateway;
  let cert: TestCert;
  beforeAll(async () => {
    gw = await startGateway("security:\n  handshakes:\n    ratePerAddress: 1\n    burstPerAddress: 4\n    maxQueued: 8\n");
    cert = await makeCert({ commonName: "flooder" });
    writeFileSync(join(gw.server.pki!.root, "trusted", "certs", "c.der"), cert.der);
  }, 60_000);
  afterAll(async () => {
    await gw?.stop();
  });

  it("refuses handshakes past the address's allowance while an established session keeps being served", async () => {
    const options = {
      host: "127.0.0.1",
      port: gw.server.port,
      policyUri: POLICY_ALGORITHMS.Basic256Sha256.uri,
      mode: MessageSecurityMode.SignAndEncrypt,
      certificate: cert.der,
      privateKey: cert.key,
      serverCertificate: gw.server.pki!.ownCertificate,
      timeoutMs: 10_000,
    };
    const established = await SecureClientChannel.open(options);
    await established.createSession();
    const read = () =>
      established.call(
        ObjectIds.ReadRequest_Encoding_DefaultBinary,
        encodeReadRequest,
        {
          requestHeader: established.requestHeader(),
          maxAge: 0,
          timestampsToReturn: TimestampsToReturn.Both,
          nodesToRead: [{ nodeId: numericNodeId(2258), attributeId: 13, indexRange: undefined, dataEncoding: { namespaceIndex: 0, name: undefined as unknown as string } }],
        },
        decodeReadResponse,
      );

    const flood = await Promise.all(Array.from({ length: 20 }, () => SecureClientChannel.connect(options)));
    const outcomes = flood.map((c) =>
      c.openSecureChannel(SecurityTokenRequestType.Issue).then(
        () => StatusCodes.Good,
        (err: SecureClientError) => err.statusCode,
      ),
    );
    const reads = Array.from({ length: 20 }, () => read());
    const results = await Promise.all(outcomes);
    for (const r of await Promise.all(reads)) expect(r.responseHeader.serviceResult).toBe(StatusCodes.Good);
    // The first connection took one token of the burst of 4.
    expect(results.filter((s) => s === StatusCodes.Good).length).toBeLessThanOrEqual(4);
    expect(results.filter((s) => s === StatusCodes.BadTcpNotEnoughResources).length).toBeGreaterThanOrEqual(16);
    expect(gw.server.handshakes.refused).toBeGreaterThanOrEqual(16);
    for (const c of flood) c.destroy();
    await established.close();
  }, 30_000);
});
