// A UaTcpServer on 127.0.0.1:0 with a small handler: every request asks (UInt32 after its
// encoding NodeId) for a response body of N bytes, filled with i & 0xff.
import type { BinaryWriter } from "../../src/ua/binary-writer.js";
import { UaStatusError } from "../../src/ua/errors.js";
import { StatusCodes } from "../../src/ua/generated/status-codes.js";
import type { ChannelHandler, SecureChannel } from "../../src/security/secure-channel.js";
import type { BufferPool } from "../../src/transport/buffer-pool.js";
import type { TransportLimits } from "../../src/transport/limits.js";
import { UaTcpServer } from "../../src/server/listener.js";
import { TEST_RESPONSE_ENCODING } from "./raw-client.js";
import { testSlicer } from "../helpers/slicer.js";
import { systemClock } from "../../src/sampling/clock.js";

const PATTERN = Buffer.from(Array.from({ length: 256 }, (_, i) => i));

/** n bytes of i & 0xff, through writeBytes: a response may run over many chunks. */
export function writeFiller(w: BinaryWriter, n: number): void {
  for (let i = 0; i < n; i += 256) w.writeBytes(n - i >= 256 ? PATTERN : PATTERN.subarray(0, n - i));
}

export interface HeldRequest {
  channel: SecureChannel;
  requestId: number;
  responseSize: number;
}

export class TestHandler implements ChannelHandler {
  /** "sync": answer inside onRequest; "hold": keep requests in `held` until `answerHeld()`. */
  mode: "sync" | "hold" = "sync";
  readonly held: HeldRequest[] = [];
  requests = 0;
  closedChannels = 0;
  tooLarge = 0;

  onRequest(channel: SecureChannel, requestId: number, body: Buffer, start: number, end: number): void {
    this.requests++;
    if (end - start < 8 || body[start] !== 0x01) throw new UaStatusError(StatusCodes.BadDecodingError, "test request expected");
    const responseSize = body.readUInt32LE(start + 4);
    if (this.mode === "hold") this.held.push({ channel, requestId, responseSize });
    else answer(this, channel, requestId, responseSize);
  }

  onChannelClosed(): void {
    this.closedChannels++;
  }

  answerHeld(): void {
    for (const h of this.held.splice(0)) answer(this, h.channel, h.requestId, h.responseSize);
  }
}

function answer(handler: TestHandler, channel: SecureChannel, requestId: number, responseSize: number): void {
  try {
    channel.sendResponse(requestId, TEST_RESPONSE_ENCODING, writeFiller, responseSize);
  } catch (err) {
    if (!(err instanceof UaStatusError) || err.statusCode !== StatusCodes.BadResponseTooLarge) throw err;
    // What the service layer does: a small fault instead (here, an empty body).
    handler.tooLarge++;
    channel.sendResponse(requestId, TEST_RESPONSE_ENCODING, writeFiller, 0);
  }
}

export async function startServer(limits: Partial<TransportLimits> = {}, pool?: BufferPool): Promise<{ server: UaTcpServer; handler: TestHandler }> {
  const handler = new TestHandler();
  const server = new UaTcpServer({ host: "127.0.0.1", port: 0, limits: { closeLingerMs: 500, ...limits }, handler, pool, pacer: testSlicer(systemClock) });
  await server.listen();
  return { server, handler };
}

export function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
