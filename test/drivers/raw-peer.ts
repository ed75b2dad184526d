// A raw Modbus peer on 127.0.0.1 for the driver tests: it cuts requests out of the bytes (Modbus
// TCP or RTU framing over TCP) and leaves every answer to the test, byte by byte: split frames,
// stale or wrong transaction ids, other unit ids and function codes, bad CRCs.
import net from "node:net";
import { crc16 } from "../../drivers/modbus/pdu.js";

export type Kind = "tcp" | "rtu-over-tcp";

export interface Request {
  tid: number;
  unit: number;
  fc: number;
  address: number;
  count: number;
}

export interface Peer {
  port: number;
  connections: number;
  requests: Request[];
  /** Most requests the peer ever held unanswered at once. */
  maxOutstanding: number;
  close(): Promise<void>;
}

export type Handler = (req: Request, reply: (...frames: Buffer[]) => void, sock: net.Socket) => void;

/** A raw Modbus peer: parses requests, leaves the answers to the test's handler. */
export async function startRawPeer(kind: Kind, handler: Handler, onConnection?: (sock: net.Socket) => boolean): Promise<Peer> {
  const sockets = new Set<net.Socket>();
  const peer: Peer = { port: 0, connections: 0, requests: [], maxOutstanding: 0, close: async () => {} };
  let outstanding = 0;
  const server = net.createServer((sock) => {
    peer.connections++;
    sockets.add(sock);
    sock.setNoDelay(true);
    sock.on("close", () => sockets.delete(sock));
    sock.on("error", () => {});
    if (onConnection !== undefined && !onConnection(sock)) return;
    let buf = Buffer.alloc(0);
    sock.on("data", (d: Buffer) => {
      buf = Buffer.concat([buf, d]);
      for (;;) {
        let req: Request;
        let size: number;
        if (kind === "tcp") {
          if (buf.length < 7) break;
          size = 6 + buf.readUInt16BE(4);
          if (buf.length < size) break;
          req = { tid: buf.readUInt16BE(0), unit: buf[6]!, fc: buf[7]!, address: buf.readUInt16BE(8), count: buf.readUInt16BE(10) };
        } else {
          if (buf.length < 8) break;
          size = buf[1]! === 15 || buf[1]! === 16 ? 9 + buf[6]! : 8;
          if (buf.length < size) break;
          req = { tid: 0, unit: buf[0]!, fc: buf[1]!, address: buf.readUInt16BE(2), count: buf.readUInt16BE(4) };
        }
        buf = buf.subarray(size);
        peer.requests.push(req);
        outstanding++;
        peer.maxOutstanding = Math.max(peer.maxOutstanding, outstanding);
        let answered = false;
        handler(req, (...frames) => {
          if (!answered) outstanding--;
          answered = true;
          for (const f of frames) sock.write(f);
        }, sock);
      }
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  peer.port = (server.address() as net.AddressInfo).port;
  peer.close = () =>
    new Promise<void>((resolve) => {
      for (const s of sockets) s.destroy();
      server.close(() => resolve());
    });
  return peer;
}

/** The PDU of a normal FC3/FC4 answer carrying `values`. */
export function registersPdu(fc: number, values: number[]): Buffer {
  const b = Buffer.alloc(2 + 2 * values.length);
  b[0] = fc;
  b[1] = 2 * values.length;
  values.forEach((v, i) => b.writeUInt16BE(v, 2 + 2 * i));
  return b;
}
export function mbap(tid: number, unit: number, pdu: Buffer): Buffer {
  const h = Buffer.alloc(7);
  h.writeUInt16BE(tid, 0);
  h.writeUInt16BE(pdu.length + 1, 4);
  h[6] = unit;
  return Buffer.concat([h, pdu]);
}
export function rtu(unit: number, pdu: Buffer): Buffer {
  const b = Buffer.alloc(pdu.length + 3);
  b[0] = unit;
  pdu.copy(b, 1);
  b.writeUInt16LE(crc16(b, 0, pdu.length + 1), pdu.length + 1);
  return b;
}
/** The normal answer to a read of holding/input registers: value = 100*unit + address + i. */
export function answer(kind: Kind, req: Request, tid = req.tid): Buffer {
  const pdu = registersPdu(req.fc, Array.from({ length: req.count }, (_, i) => 100 * req.unit + req.address + i));
  return kind === "tcp" ? mbap(tid, req.unit, pdu) : rtu(req.unit, pdu);
}

