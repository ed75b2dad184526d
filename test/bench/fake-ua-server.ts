// A tiny UA-TCP responder for testing the load client without the real server: Hello, OPN,
// CreateSession, ActivateSession, Read, CloseSession and CLO, with SecurityPolicy None, encoded
// by the generated codec. It can answer every Nth Read with a ServiceFault and write its
// responses in two pieces, to test error counting and frame reassembly.
import { createServer, type AddressInfo, type Server, type Socket } from "node:net";
import { BinaryReader } from "../../src/ua/binary-reader.js";
import { BinaryWriter } from "../../src/ua/binary-writer.js";
import { decodeNodeId, encodeNodeId } from "../../src/ua/builtin-codec.js";
import { BuiltinType, IdType, NULL_NODE_ID, numericNodeId, scalar, type ExtensionObject } from "../../src/ua/builtins.js";
import { ApplicationType, MessageSecurityMode, UserTokenType } from "../../src/ua/generated/enums.js";
import { ObjectIds } from "../../src/ua/generated/node-ids.js";
import { StatusCodes } from "../../src/ua/generated/status-codes.js";
import {
  decodeActivateSessionRequest,
  decodeReadRequest,
  decodeRequestHeader,
  encodeActivateSessionResponse,
  encodeCloseSessionResponse,
  encodeCreateSessionResponse,
  encodeOpenSecureChannelResponse,
  encodeReadResponse,
  encodeServiceFault,
  type ResponseHeader,
} from "../../src/ua/generated/types.js";
import { FrameKind, FrameSplitter, HEADER_SIZE, SECURITY_POLICY_NONE, beginFrame, beginMessageFrame, beginOpenFrame, finishFrame, skipAsymmetricHeader } from "../../bench/client/ua-tcp.js";

export interface FakeServerOptions {
  /** Answer every Nth Read with a ServiceFault (0: never). */
  faultEvery?: number;
  /** Write each response in two socket writes split at this byte (0: one write). */
  splitAt?: number;
  /** The anonymous policyId offered in CreateSession's endpoints. */
  anonymousPolicyId?: string;
}

export interface FakeServer {
  port: number;
  reads: number;
  /** policyIds the clients activated with. */
  activatedPolicies: string[];
  closedSessions: number;
  closedChannels: number;
  close(): Promise<void>;
}

const NO_HEADER: ExtensionObject = { typeId: NULL_NODE_ID, body: null };
const AUTH_TOKEN = { namespace: 0, idType: IdType.Opaque, value: Buffer.from("fake-session-token") } as const;

function responseHeader(requestHandle: number, serviceResult: number = StatusCodes.Good): ResponseHeader {
  return { timestamp: Date.now(), requestHandle, serviceResult, serviceDiagnostics: {}, stringTable: undefined, additionalHeader: NO_HEADER };
}

export async function startFakeServer(options: FakeServerOptions = {}): Promise<FakeServer> {
  const state: FakeServer = { port: 0, reads: 0, activatedPolicies: [], closedSessions: 0, closedChannels: 0, close: async () => {} };
  const policyId = options.anonymousPolicyId ?? "anonymous";
  const sockets = new Set<Socket>();

  const server: Server = createServer((socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
    socket.on("error", () => socket.destroy());
    const w = new BinaryWriter(Buffer.allocUnsafe(4096));
    const r = new BinaryReader();
    let seq = 0;
    const send = (): void => {
      const bytes = Buffer.from(w.view());
      const cut = options.splitAt ?? 0;
      if (cut > 0 && cut < bytes.length) {
        socket.write(bytes.subarray(0, cut));
        socket.write(bytes.subarray(cut));
      } else socket.write(bytes);
    };
    const beginReply = (requestId: number, typeId: number): number => {
      const start = beginMessageFrame(w.reset(), FrameKind.MSGF, 7, 1, ++seq, requestId);
      encodeNodeId(w, numericNodeId(typeId));
      return start;
    };
    const splitter = new FrameSplitter(
      {
        onFrame(buffer, start, end) {
          const kind = buffer.readUInt32LE(start);
          if (kind === FrameKind.HELF) {
            const at = beginFrame(w.reset(), FrameKind.ACKF);
            for (const v of [0, 65536, 65536, 0, 0]) w.writeUInt32(v);
            finishFrame(w, at);
            send();
          } else if (kind === FrameKind.OPNF) {
            r.setBuffer(buffer, start + HEADER_SIZE, end);
            skipAsymmetricHeader(r);
            r.readUInt32();
            const requestId = r.readUInt32();
            decodeNodeId(r);
            const header = decodeRequestHeader(r);
            const at = beginOpenFrame(w.reset(), 7, ++seq, requestId);
            // beginOpenFrame wrote our policy as the client would; a server answers with the same header.
            encodeNodeId(w, numericNodeId(ObjectIds.OpenSecureChannelResponse_Encoding_DefaultBinary));
            encodeOpenSecureChannelResponse(w, {
              responseHeader: responseHeader(header.requestHandle),
              serverProtocolVersion: 0,
              securityToken: { channelId: 7, tokenId: 1, createdAt: Date.now(), revisedLifetime: 3_600_000 },
              serverNonce: undefined,
            });
            finishFrame(w, at);
            send();
          } else if (kind === FrameKind.CLOF) {
            state.closedChannels++;
            socket.end();
          } else if (kind === FrameKind.MSGF) {
            r.setBuffer(buffer, start + 24, end);
            const requestId = buffer.readUInt32LE(start + 20);
            const typeId = decodeNodeId(r).value as number;
            if (typeId === ObjectIds.ReadRequest_Encoding_DefaultBinary) {
              const req = decodeReadRequest(r);
              state.reads++;
              const handle = req.requestHeader.requestHandle;
              if (options.faultEvery && state.reads % options.faultEvery === 0) {
                const at = beginReply(requestId, ObjectIds.ServiceFault_Encoding_DefaultBinary);
                encodeServiceFault(w, { responseHeader: responseHeader(handle, StatusCodes.BadTooManyOperations) });
                finishFrame(w, at);
              } else {
                const at = beginReply(requestId, ObjectIds.ReadResponse_Encoding_DefaultBinary);
                encodeReadResponse(w, {
                  responseHeader: responseHeader(handle),
                  results: (req.nodesToRead ?? []).map(() => ({ value: scalar(BuiltinType.DateTime, Date.now()), serverTimestamp: Date.now() })),
                  diagnosticInfos: undefined,
                });
                finishFrame(w, at);
              }
              send();
            } else if (typeId === ObjectIds.CreateSessionRequest_Encoding_DefaultBinary) {
              const header = decodeRequestHeader(r);
              const at = beginReply(requestId, ObjectIds.CreateSessionResponse_Encoding_DefaultBinary);
              encodeCreateSessionResponse(w, {
                responseHeader: responseHeader(header.requestHandle),
                sessionId: numericNodeId(1, 1),
                authenticationToken: AUTH_TOKEN,
                revisedSessionTimeout: 60_000,
                serverNonce: undefined,
                serverCertificate: undefined,
                serverEndpoints: [
                  {
                    endpointUrl: "opc.tcp://127.0.0.1",
                    server: {
                      applicationUri: "urn:fake",
                      productUri: "urn:fake",
                      applicationName: { text: "fake" },
                      applicationType: ApplicationType.Server,
                      gatewayServerUri: undefined,
                      discoveryProfileUri: undefined,
                      discoveryUrls: undefined,
                    },
                    serverCertificate: undefined,
                    securityMode: MessageSecurityMode.None,
                    securityPolicyUri: SECURITY_POLICY_NONE,
                    userIdentityTokens: [{ policyId, tokenType: UserTokenType.Anonymous, issuedTokenType: undefined, issuerEndpointUrl: undefined, securityPolicyUri: undefined }],
                    transportProfileUri: "http://opcfoundation.org/UA-Profile/Transport/uatcp-uasc-uabinary",
                    securityLevel: 0,
                  },
                ],
                serverSoftwareCertificates: undefined,
                serverSignature: { algorithm: undefined, signature: undefined },
                maxRequestMessageSize: 0,
              });
              finishFrame(w, at);
              send();
            } else if (typeId === ObjectIds.ActivateSessionRequest_Encoding_DefaultBinary) {
              const req = decodeActivateSessionRequest(r);
              const token = req.userIdentityToken?.body as { policyId?: string } | undefined;
              state.activatedPolicies.push(token?.policyId ?? "");
              const at = beginReply(requestId, ObjectIds.ActivateSessionResponse_Encoding_DefaultBinary);
              encodeActivateSessionResponse(w, { responseHeader: responseHeader(req.requestHeader.requestHandle), serverNonce: undefined, results: undefined, diagnosticInfos: undefined });
              finishFrame(w, at);
              send();
            } else if (typeId === ObjectIds.CloseSessionRequest_Encoding_DefaultBinary) {
              const header = decodeRequestHeader(r);
              state.closedSessions++;
              const at = beginReply(requestId, ObjectIds.CloseSessionResponse_Encoding_DefaultBinary);
              encodeCloseSessionResponse(w, { responseHeader: responseHeader(header.requestHandle) });
              finishFrame(w, at);
              send();
            }
          }
        },
        onFramingError() {
          socket.destroy();
        },
      },
      65536,
    );
    socket.on("data", (chunk: Buffer) => splitter.feed(chunk));
  });

  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  state.port = (server.address() as AddressInfo).port;
  state.close = () =>
    new Promise<void>((resolve) => {
      for (const s of sockets) s.destroy();
      server.close(() => resolve());
    });
  return state;
}
