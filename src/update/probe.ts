// Does the gateway's OPC UA endpoint answer? The trial check asks it the way a client starts:
// Hello/Acknowledge (Part 6 §7.1.2), OpenSecureChannel with SecurityPolicy None (Part 6 §6.7,
// Part 4 §5.5.2) and GetEndpoints (Part 4 §5.4.4), which a server answers on None whatever its
// security settings. One request at a time, so frames are read whole without a pool.
import { connect } from "node:net";
import { BinaryReader } from "../ua/binary-reader.js";
import { BinaryWriter } from "../ua/binary-writer.js";
import { decodeNodeId, encodeNodeId } from "../ua/builtin-codec.js";
import { NULL_NODE_ID, numericNodeId, type ExtensionObject } from "../ua/builtins.js";
import { MessageSecurityMode, SecurityTokenRequestType } from "../ua/generated/enums.js";
import { ObjectIds } from "../ua/generated/node-ids.js";
import { StatusCodes, statusCodeName } from "../ua/generated/status-codes.js";
import {
  decodeGetEndpointsResponse,
  decodeOpenSecureChannelResponse,
  decodeResponseHeader,
  encodeGetEndpointsRequest,
  encodeOpenSecureChannelRequest,
  type RequestHeader,
} from "../ua/generated/types.js";

const NONE = "http://opcfoundation.org/UA/SecurityPolicy#None";
const NO_HEADER: ExtensionObject = { typeId: NULL_NODE_ID, body: null };
const BUFFER = 1 << 16;

/** The endpoints' security policies (their URIs' fragments), or a thrown Error saying what failed. */
export async function probeEndpoints(host: string, port: number, timeoutMs = 10_000): Promise<string[]> {
  const url = `opc.tcp://${host}:${port}`;
  const socket = connect({ host, port });
  let received = Buffer.alloc(0);
  let waiter: (() => void) | undefined;
  let failure: Error | undefined;
  const timer = setTimeout(() => fail(new Error(`no answer from ${url} within ${timeoutMs} ms`)), timeoutMs);
  function fail(err: Error): void {
    failure ??= err;
    socket.destroy();
    waiter?.();
  }
  socket.on("data", (d: Buffer) => {
    received = Buffer.concat([received, d]);
    waiter?.();
  });
  socket.on("error", (e) => fail(new Error(`${url}: ${e.message}`)));
  socket.on("close", () => fail(new Error(`${url}: connection closed`)));

  /** The next frame: its 4-byte type and chunk letter, and its bytes after the 8-byte header. */
  async function frame(): Promise<{ type: string; body: Buffer }> {
    for (;;) {
      if (failure) throw failure;
      if (received.length >= 8) {
        const size = received.readUInt32LE(4);
        if (size < 8 || size > 16 * BUFFER) throw new Error(`${url}: frame of ${size} bytes`);
        if (received.length >= size) {
          const f = { type: received.toString("latin1", 0, 4), body: received.subarray(8, size) };
          received = received.subarray(size);
          if (f.type === "ERRF") {
            const r = new BinaryReader(f.body);
            const code = r.readUInt32();
            throw new Error(`${url} answered Error ${statusCodeName(code)}: ${r.readString() ?? ""}`);
          }
          return f;
        }
      }
      await new Promise<void>((resolve) => (waiter = resolve));
      waiter = undefined;
    }
  }

  const w = new BinaryWriter(Buffer.allocUnsafe(8192));
  const send = (type: string, write: () => void): void => {
    w.reset();
    w.writeBytes(Buffer.from(type, "latin1"));
    w.writeUInt32(0);
    write();
    w.buffer.writeUInt32LE(w.pos, 4);
    socket.write(Buffer.from(w.view()));
  };
  const header = (handle: number): RequestHeader => ({
    authenticationToken: NULL_NODE_ID,
    timestamp: Date.now(),
    requestHandle: handle,
    returnDiagnostics: 0,
    auditEntryId: undefined,
    timeoutHint: timeoutMs,
    additionalHeader: NO_HEADER,
  });

  try {
    await new Promise<void>((resolve, reject) => {
      socket.once("connect", resolve);
      socket.once("error", reject);
    });
    send("HELF", () => {
      w.writeUInt32(0); // ProtocolVersion
      w.writeUInt32(BUFFER); // ReceiveBufferSize
      w.writeUInt32(BUFFER); // SendBufferSize
      w.writeUInt32(0); // MaxMessageSize: no limit
      w.writeUInt32(0); // MaxChunkCount: no limit
      w.writeString(url);
    });
    if ((await frame()).type !== "ACKF") throw new Error(`${url}: no Acknowledge to Hello`);

    send("OPNF", () => {
      w.writeUInt32(0); // SecureChannelId: none yet
      w.writeString(NONE);
      w.writeByteString(null);
      w.writeByteString(null);
      w.writeUInt32(1); // SequenceNumber
      w.writeUInt32(1); // RequestId
      encodeNodeId(w, numericNodeId(ObjectIds.OpenSecureChannelRequest_Encoding_DefaultBinary));
      encodeOpenSecureChannelRequest(w, {
        requestHeader: header(1),
        clientProtocolVersion: 0,
        requestType: SecurityTokenRequestType.Issue,
        securityMode: MessageSecurityMode.None,
        clientNonce: undefined,
        requestedLifetime: 60_000,
      });
    });
    const opn = await frame();
    if (opn.type !== "OPNF") throw new Error(`${url}: ${opn.type} instead of the OpenSecureChannel response`);
    const r = new BinaryReader(opn.body);
    r.readUInt32(); // SecureChannelId
    r.readString(); // SecurityPolicyUri
    r.readByteStringView(); // SenderCertificate
    r.readByteStringView(); // ReceiverCertificateThumbprint
    r.readUInt32(); // SequenceNumber
    r.readUInt32(); // RequestId
    const opnType = decodeNodeId(r);
    if (opnType.value !== ObjectIds.OpenSecureChannelResponse_Encoding_DefaultBinary) throw new Error(`${url}: OpenSecureChannel answered with a ServiceFault`);
    const token = decodeOpenSecureChannelResponse(r).securityToken;

    send("MSGF", () => {
      w.writeUInt32(token.channelId);
      w.writeUInt32(token.tokenId);
      w.writeUInt32(2); // SequenceNumber
      w.writeUInt32(2); // RequestId
      encodeNodeId(w, numericNodeId(ObjectIds.GetEndpointsRequest_Encoding_DefaultBinary));
      encodeGetEndpointsRequest(w, { requestHeader: header(2), endpointUrl: url, localeIds: undefined, profileUris: undefined });
    });
    // A large answer comes in chunks (MSGC ... MSGF): their bodies, after the 16 bytes of
    // SecureChannelId, TokenId, SequenceNumber and RequestId, make the message.
    const parts: Buffer[] = [];
    for (;;) {
      const f = await frame();
      if (!f.type.startsWith("MSG")) throw new Error(`${url}: ${f.type} instead of the GetEndpoints response`);
      if (f.type === "MSGA") throw new Error(`${url}: the GetEndpoints response was aborted`);
      parts.push(f.body.subarray(16));
      if (f.type === "MSGF") break;
    }
    const msg = new BinaryReader(Buffer.concat(parts));
    const type = decodeNodeId(msg);
    if (type.value !== ObjectIds.GetEndpointsResponse_Encoding_DefaultBinary) {
      const fault = decodeResponseHeader(msg);
      throw new Error(`${url}: GetEndpoints answered ${statusCodeName(fault.serviceResult)}`);
    }
    const res = decodeGetEndpointsResponse(msg);
    if (res.responseHeader.serviceResult !== StatusCodes.Good) throw new Error(`${url}: GetEndpoints answered ${statusCodeName(res.responseHeader.serviceResult)}`);
    const endpoints = res.endpoints ?? [];
    if (endpoints.length === 0) throw new Error(`${url}: GetEndpoints answered with no endpoint`);
    return endpoints.map((e) => (e.securityPolicyUri ?? "").split("#")[1] ?? "?");
  } finally {
    clearTimeout(timer);
    failure ??= new Error("done");
    socket.destroy();
  }
}
