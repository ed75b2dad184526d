// The attackers of the hostile scenario (hostile.ts), run in the load process: chunk flooders
// that open a secure channel and send intermediate MSG chunks ('C') of one request without ever
// sending its final chunk, and slow readers that open a session, send Reads of many nodes and
// never read their socket. Both come back (a new connection) whenever the server closes them, so
// the pressure lasts the whole attack; at the end every attacker socket is destroyed at once
// ("the attackers leave"). The server's replies are only looked at for ERR codes: which
// StatusCode it closed a connection with, or refused one with.
import { BinaryWriter } from "../../src/ua/binary-writer.js";
import { encodeNodeId } from "../../src/ua/builtin-codec.js";
import { numericNodeId } from "../../src/ua/builtins.js";
import { TimestampsToReturn } from "../../src/ua/generated/enums.js";
import { AttributeIds, ObjectIds, VariableIds } from "../../src/ua/generated/node-ids.js";
import { statusCodeName } from "../../src/ua/generated/status-codes.js";
import { encodeReadRequest } from "../../src/ua/generated/types.js";
import { LoadClientError, UaClientChannel, type MessageHandler } from "../client/channel.js";
import { Histogram, type HistogramSnapshot } from "../client/histogram.js";
import { FrameKind, MSG_BODY_OFFSET } from "../client/ua-tcp.js";
import { openSession, type SessionTarget } from "./service-load.js";

export interface HostileAttackParams extends SessionTarget {
  /** Connections flooding intermediate chunks. */
  flooders: number;
  /** Sessions sending Reads of `readNodes` nodes without reading. */
  slowReaders: number;
  readNodes: number;
  /** How long the attack lasts, s. */
  durationSeconds: number;
}

export interface AttackerCounts {
  /** Connections opened (including refused ones). */
  connections: number;
  /** How the server ended them: ERR StatusCode names, "closed" without ERR, "refused: ..." at set-up. */
  endings: Record<string, number>;
  /** Bytes written to the server. */
  bytesSent: number;
}

export interface HostileAttackResult {
  flood: AttackerCounts;
  slow: AttackerCounts & {
    /** Read requests written in full. */
    requests: number;
    /** From the first write the server did not take at once (it stopped reading) to the close, µs. */
    closeAfterStallMicros: HistogramSnapshot;
    /** Slow readers the server had not closed when the attack ended. */
    openAtEnd: number;
  };
  durationSeconds: number;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

function count(rec: Record<string, number>, key: string): void {
  rec[key] = (rec[key] ?? 0) + 1;
}

function endingOf(err: Error | null): string {
  if (err instanceof LoadClientError && err.statusCode !== undefined) return statusCodeName(err.statusCode);
  return "closed";
}

/** Watches an attacker's channel for its end (ERR or close) once the attack owns the socket. */
class EndWatch implements MessageHandler {
  error: Error | null = null;
  ended = false;
  private wake: (() => void) | null = null;

  static on(channel: UaClientChannel): EndWatch {
    const watch = new EndWatch();
    channel.loadHandler = watch;
    channel.socket.once("close", () => watch.end());
    return watch;
  }

  beginBatch(): void {}
  onMessage(): void {}
  endBatch(): void {}
  onChannelError(err: Error): void {
    this.error = err;
    this.end();
  }

  end(): void {
    this.ended = true;
    this.wake?.();
    this.wake = null;
  }

  /** Resolves on the end, on 'drain' (if asked), or after `ms`. */
  wait(ms: number, drainOf?: UaClientChannel): Promise<void> {
    if (this.ended) return Promise.resolve();
    return new Promise((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        drainOf?.socket.off("drain", done);
        this.wake = null;
        resolve();
      };
      const timer = setTimeout(done, ms);
      drainOf?.socket.once("drain", done);
      this.wake = done;
    });
  }
}

/** One MSG chunk of request `requestId` with `part` as its body, on the channel's next sequence number. */
function chunkFrame(channel: UaClientChannel, kind: FrameKind.MSGC | FrameKind.MSGF, requestId: number, part: Buffer): Buffer {
  const f = Buffer.allocUnsafe(MSG_BODY_OFFSET + part.length);
  f.writeUInt32LE(kind, 0);
  f.writeUInt32LE(f.length, 4);
  f.writeUInt32LE(channel.channelId, 8);
  f.writeUInt32LE(channel.tokenId, 12);
  f.writeUInt32LE(++channel.sequenceNumber, 16);
  f.writeUInt32LE(requestId, 20);
  part.copy(f, MSG_BODY_OFFSET);
  return f;
}

/** Frames of one MSG message body split into chunks of at most `chunkSize` bytes ('C' ... 'F'). */
function messageChunks(channel: UaClientChannel, body: Buffer, chunkSize: number): Buffer[] {
  const room = chunkSize - MSG_BODY_OFFSET;
  const requestId = ++channel.requestId;
  const frames: Buffer[] = [];
  for (let at = 0; at < body.length; at += room) {
    const last = at + room >= body.length;
    frames.push(chunkFrame(channel, last ? FrameKind.MSGF : FrameKind.MSGC, requestId, body.subarray(at, Math.min(body.length, at + room))));
  }
  return frames;
}

function readRequestBody(channel: UaClientChannel, nodes: number): Buffer {
  const w = new BinaryWriter(Buffer.allocUnsafe(nodes * 16 + 256), 1 << 30);
  encodeNodeId(w, numericNodeId(ObjectIds.ReadRequest_Encoding_DefaultBinary));
  const node = { nodeId: numericNodeId(VariableIds.Server_ServerStatus_CurrentTime), attributeId: AttributeIds.Value, indexRange: undefined, dataEncoding: { namespaceIndex: 0, name: "" } };
  encodeReadRequest(w, {
    requestHeader: channel.requestHeader(60_000),
    maxAge: 0,
    timestampsToReturn: TimestampsToReturn.Both,
    nodesToRead: Array.from({ length: nodes }, () => node),
  });
  return Buffer.from(w.view());
}

export async function runHostileAttack(params: HostileAttackParams): Promise<HostileAttackResult> {
  const end = performance.now() + params.durationSeconds * 1000;
  const live = new Set<UaClientChannel>();
  const flood: AttackerCounts = { connections: 0, endings: {}, bytesSent: 0 };
  const slow = { connections: 0, endings: {} as Record<string, number>, bytesSent: 0, requests: 0, openAtEnd: 0 };
  const closeAfterStall = new Histogram();

  const flooder = async (): Promise<void> => {
    while (performance.now() < end) {
      flood.connections++;
      let channel: UaClientChannel | undefined;
      try {
        channel = await UaClientChannel.open({ host: params.host, port: params.port, endpointUrl: params.endpointUrl, callTimeoutMs: 5000 });
        await channel.openSecureChannel();
        live.add(channel);
      } catch (err) {
        channel?.destroy();
        count(flood.endings, `refused: ${endingOf(err as Error)}`);
        await sleep(100);
        continue;
      }
      const watch = EndWatch.on(channel);
      const chunkSize = Math.min(channel.serverLimits?.receiveBufferSize ?? 65536, 65536);
      const body = Buffer.alloc(chunkSize - MSG_BODY_OFFSET, 0x41);
      const requestId = ++channel.requestId;
      // Intermediate chunks of one request, as fast as the server takes them; never a final one.
      while (!watch.ended && performance.now() < end) {
        flood.bytesSent += chunkSize;
        if (!channel.socket.write(chunkFrame(channel, FrameKind.MSGC, requestId, body))) await watch.wait(Math.max(1, end - performance.now()), channel);
      }
      live.delete(channel);
      if (watch.ended) count(flood.endings, endingOf(watch.error));
      channel.destroy();
      await sleep(50);
    }
  };

  const slowReader = async (k: number): Promise<void> => {
    while (performance.now() < end) {
      slow.connections++;
      let channel: UaClientChannel;
      try {
        channel = await openSession(params, `bench-slow-reader-${k}`);
        live.add(channel);
      } catch (err) {
        count(slow.endings, `refused: ${endingOf(err as Error)}`);
        await sleep(100);
        continue;
      }
      const watch = EndWatch.on(channel);
      // Never read again: the server's answers pile up in its socket, then in its memory.
      channel.socket.pause();
      const chunkSize = Math.min(channel.serverLimits?.receiveBufferSize ?? 65536, 65536);
      const body = readRequestBody(channel, params.readNodes);
      let stalledAt = 0;
      while (!watch.ended && performance.now() < end) {
        let ok = true;
        for (const f of messageChunks(channel, body, chunkSize)) {
          ok = channel.socket.write(f);
          slow.bytesSent += f.length;
        }
        slow.requests++;
        if (!ok) {
          if (stalledAt === 0) stalledAt = performance.now();
          await watch.wait(Math.max(1, end - performance.now()), channel);
        }
      }
      live.delete(channel);
      if (watch.ended) {
        count(slow.endings, endingOf(watch.error));
        if (stalledAt !== 0) closeAfterStall.record((performance.now() - stalledAt) * 1000);
      } else {
        slow.openAtEnd++;
      }
      channel.destroy();
      await sleep(50);
    }
  };

  await Promise.all([
    ...Array.from({ length: params.flooders }, () => flooder()),
    ...Array.from({ length: params.slowReaders }, (_, k) => slowReader(k)),
  ]);
  for (const c of live) c.destroy();
  return {
    flood,
    slow: { ...slow, closeAfterStallMicros: closeAfterStall.snapshot() },
    durationSeconds: params.durationSeconds,
  };
}
