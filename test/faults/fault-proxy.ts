// A fault-injecting proxy in front of a Modbus TCP slave we did not write (modbus-serial's
// ServerTCP). The gateway's driver talks to the proxy, either Modbus TCP (MBAP) or RTU framing
// over TCP (a serial gateway's framing, with CRCs); the proxy forwards each request to the
// slave and passes the answer back, or breaks it the way field devices and links do.
import net from "node:net";

export type FaultMode =
  | "ok"
  /** Answers after `slowMs` (past the driver's timeout). */
  | "slow"
  /** Reads requests and never answers. */
  | "silent"
  /** RTU: the answer's CRC is wrong. */
  | "badCrc"
  /** The answer names another unit id. */
  | "wrongUnit"
  /** The answer carries another function code. */
  | "wrongFc"
  /** A whole frame whose PDU is shorter than its byte count says. */
  | "short"
  /** Half of the answer, then the connection closes. */
  | "closeMidFrame"
  /** The device is gone: the listener closes, connections drop, new ones are refused. */
  | "vanish";

/** Modbus CRC-16 (poly 0xA001, init 0xFFFF), low byte first on the wire. */
export function crc16(b: Buffer, end = b.length): number {
  let crc = 0xffff;
  for (let i = 0; i < end; i++) {
    crc ^= b[i];
    for (let k = 0; k < 8; k++) crc = crc & 1 ? (crc >>> 1) ^ 0xa001 : crc >>> 1;
  }
  return crc;
}

export class FaultProxy {
  mode: FaultMode = "ok";
  slowMs = 400;
  /** Answers sent unbroken, and broken (for the test to see that the fault really happened). */
  passed = 0;
  broken = 0;
  private server: net.Server | undefined;
  private readonly sockets = new Set<net.Socket>();
  port = 0;

  constructor(
    readonly upstreamPort: number,
    readonly framing: "tcp" | "rtu",
  ) {}

  async listen(port = 0): Promise<void> {
    const server = net.createServer((s) => this.accept(s));
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(port, "127.0.0.1", () => resolve());
    });
    this.server = server;
    this.port = (server.address() as net.AddressInfo).port;
  }

  /** Switches the fault; "vanish" closes the port, leaving it reopens on the same port. */
  async set(mode: FaultMode): Promise<void> {
    const was = this.mode;
    this.mode = mode;
    if (mode === "vanish" && was !== "vanish") await this.closeAll();
    if (mode !== "vanish" && was === "vanish") await this.listen(this.port);
  }

  async close(): Promise<void> {
    await this.closeAll();
  }

  private async closeAll(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    this.sockets.clear();
    const server = this.server;
    this.server = undefined;
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  private accept(client: net.Socket): void {
    const upstream = net.connect({ host: "127.0.0.1", port: this.upstreamPort });
    this.sockets.add(client).add(upstream);
    let acc = Buffer.alloc(0);
    let up = Buffer.alloc(0);
    // One request at a time (the driver keeps one outstanding per link).
    const pending: { tid: number; unit: number }[] = [];
    let tid = 1;
    const end = (): void => {
      client.destroy();
      upstream.destroy();
      this.sockets.delete(client);
      this.sockets.delete(upstream);
    };
    client.on("error", end).on("close", end);
    upstream.on("error", end).on("close", end);
    client.on("data", (d: Buffer) => {
      acc = Buffer.concat([acc, d]);
      for (;;) {
        const n = this.requestLength(acc);
        if (n === 0 || acc.length < n) break;
        const req = acc.subarray(0, n);
        acc = acc.subarray(n);
        if (this.mode === "silent") continue;
        if (this.framing === "tcp") {
          pending.push({ tid: req.readUInt16BE(0), unit: req[6] });
          upstream.write(req);
        } else {
          // RTU request -> MBAP for the slave.
          const pdu = req.subarray(1, n - 2);
          const head = Buffer.alloc(7);
          head.writeUInt16BE(tid, 0);
          head.writeUInt16BE(0, 2);
          head.writeUInt16BE(pdu.length + 1, 4);
          head[6] = req[0];
          pending.push({ tid, unit: req[0] });
          tid = (tid + 1) & 0xffff;
          upstream.write(Buffer.concat([head, pdu]));
        }
      }
    });
    upstream.on("data", (d: Buffer) => {
      up = Buffer.concat([up, d]);
      while (up.length >= 7 && up.length >= 6 + up.readUInt16BE(4)) {
        const n = 6 + up.readUInt16BE(4);
        const answer = Buffer.from(up.subarray(0, n));
        up = up.subarray(n);
        const p = pending.shift();
        if (!p) continue;
        let out: Buffer;
        if (this.framing === "tcp") {
          out = answer;
        } else {
          const pdu = answer.subarray(7);
          out = Buffer.alloc(1 + pdu.length + 2);
          out[0] = p.unit;
          pdu.copy(out, 1);
          out.writeUInt16LE(crc16(out, out.length - 2), out.length - 2);
        }
        this.send(client, out);
      }
    });
  }

  /** Bytes of the request at the start of `b`, or 0 when not known yet. */
  private requestLength(b: Buffer): number {
    if (this.framing === "tcp") return b.length >= 6 ? 6 + b.readUInt16BE(4) : 0;
    if (b.length < 2) return 0;
    const fc = b[1];
    if (fc >= 1 && fc <= 6) return 8;
    if ((fc === 15 || fc === 16) && b.length >= 7) return 9 + b[6];
    return 0;
  }

  private send(client: net.Socket, out: Buffer): void {
    const unitAt = this.framing === "tcp" ? 6 : 0;
    const fcAt = unitAt + 1;
    const fixCrc = (b: Buffer): void => {
      if (this.framing === "rtu") b.writeUInt16LE(crc16(b, b.length - 2), b.length - 2);
    };
    switch (this.mode) {
      case "ok":
        this.passed++;
        client.write(out);
        return;
      case "slow":
        this.broken++;
        setTimeout(() => client.writable && client.write(out), this.slowMs);
        return;
      case "silent":
      case "vanish":
        return;
      case "badCrc":
        this.broken++;
        out[out.length - 1] ^= 0x5a;
        client.write(out);
        return;
      case "wrongUnit":
        this.broken++;
        out[unitAt] = (out[unitAt] + 7) & 0xff;
        fixCrc(out);
        client.write(out);
        return;
      case "wrongFc":
        this.broken++;
        out[fcAt] = out[fcAt] === 3 ? 4 : 3;
        fixCrc(out);
        client.write(out);
        return;
      case "short": {
        this.broken++;
        // Drop the last two data bytes, keep the byte count: a whole frame that lies about its PDU.
        const pduEnd = this.framing === "tcp" ? out.length : out.length - 2;
        const cut = Buffer.concat([out.subarray(0, pduEnd - 2), this.framing === "rtu" ? Buffer.alloc(2) : Buffer.alloc(0)]);
        if (this.framing === "tcp") cut.writeUInt16BE(cut.length - 6, 4);
        fixCrc(cut);
        client.write(cut);
        return;
      }
      case "closeMidFrame":
        this.broken++;
        client.end(out.subarray(0, Math.max(1, out.length >> 1)));
        return;
    }
  }
}
