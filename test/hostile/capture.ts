// Captures the frames a real client (node-opcua-client, which nobody here wrote) sends to the
// gateway, through a tiny TCP proxy on loopback: the seeds of the message-path fuzzer.
import net from "node:net";
import {
  AttributeIds,
  DataType,
  MessageSecurityMode,
  OPCUAClient,
  SecurityPolicy,
  TimestampsToReturn,
  makeBrowsePath,
} from "node-opcua-client";

export interface CapturedFrame {
  type: string;
  chunkType: string;
  /** The whole frame, header included. */
  bytes: Buffer;
}

/** Splits a byte stream into UA-TCP frames (8-byte header with the frame size). */
export function splitFrames(stream: Buffer): CapturedFrame[] {
  const out: CapturedFrame[] = [];
  let p = 0;
  while (p + 8 <= stream.length) {
    const size = stream.readUInt32LE(p + 4);
    if (size < 8 || p + size > stream.length) break;
    out.push({ type: stream.toString("latin1", p, p + 3), chunkType: stream.toString("latin1", p + 3, p + 4), bytes: Buffer.from(stream.subarray(p, p + size)) });
    p += size;
  }
  return out;
}

/** A proxy to `targetPort` that records what clients send; `frames()` splits each connection's bytes. */
export async function startRecordingProxy(targetPort: number): Promise<{ port: number; frames(): CapturedFrame[]; close(): Promise<void> }> {
  const streams: Buffer[][] = [];
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const sent: Buffer[] = [];
    streams.push(sent);
    const upstream = net.connect({ host: "127.0.0.1", port: targetPort });
    sockets.add(client).add(upstream);
    client.on("data", (d: Buffer) => {
      sent.push(Buffer.from(d));
      upstream.write(d);
    });
    upstream.on("data", (d: Buffer) => client.write(d));
    const end = (): void => {
      client.destroy();
      upstream.destroy();
    };
    client.on("close", end).on("error", end);
    upstream.on("close", end).on("error", end);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    port: (server.address() as net.AddressInfo).port,
    frames: () => streams.flatMap((s) => splitFrames(Buffer.concat(s))),
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/**
 * Runs a node-opcua-client session through the proxy: endpoints, session, Browse, Read, Write,
 * TranslateBrowsePath, BrowseNext, a subscription with a monitored item and Publish, HistoryRead,
 * CloseSession. Failures of single services do not matter: the frames are what counts.
 */
export async function captureClientSession(proxyPort: number, nodeToWrite?: string): Promise<void> {
  const client = OPCUAClient.create({
    applicationName: "fieldgate-capture",
    endpointMustExist: false,
    securityMode: MessageSecurityMode.None,
    securityPolicy: SecurityPolicy.None,
    connectionStrategy: { maxRetry: 0, initialDelay: 100, maxDelay: 200 },
    requestedSessionTimeout: 60_000,
  });
  const url = `opc.tcp://127.0.0.1:${proxyPort}`;
  await client.connect(url);
  try {
    await client.getEndpoints().catch(() => undefined);
    const session = await client.createSession();
    const quiet = <T>(p: Promise<T>): Promise<T | undefined> => p.catch(() => undefined);
    await quiet(session.browse("i=85"));
    await quiet(session.read([{ nodeId: "i=2258", attributeId: AttributeIds.Value }, { nodeId: "i=2256", attributeId: AttributeIds.Value }]));
    if (nodeToWrite) await quiet(session.write({ nodeId: nodeToWrite, attributeId: AttributeIds.Value, value: { value: { dataType: DataType.Double, value: 1.5 } } }));
    await quiet(session.translateBrowsePath(makeBrowsePath("i=84", "/Objects/Server.ServerStatus")));
    const browsed = await quiet(session.browse({ nodeId: "i=58", browseDirection: 2, resultMask: 63, nodeClassMask: 0, includeSubtypes: true, referenceTypeId: "i=31" }));
    if (browsed?.continuationPoint) await quiet(session.browseNext(browsed.continuationPoint, false));
    const sub = await quiet(
      session.createSubscription2({ requestedPublishingInterval: 100, requestedLifetimeCount: 100, requestedMaxKeepAliveCount: 5, maxNotificationsPerPublish: 100, publishingEnabled: true, priority: 1 }),
    );
    if (sub) {
      await quiet(sub.monitor({ nodeId: "i=2258", attributeId: AttributeIds.Value }, { samplingInterval: 100, queueSize: 2, discardOldest: true }, TimestampsToReturn.Both));
      await new Promise((r) => setTimeout(r, 350));
      await quiet(sub.terminate());
    }
    await quiet(session.readHistoryValue("i=2258", new Date(0), new Date()));
    await session.close();
  } finally {
    await client.disconnect();
  }
}
