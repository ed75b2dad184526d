// A small Modbus TCP slave (Modbus Application Protocol V1.1b3 and Messaging on TCP/IP V1.0b) for
// the simulator. The simulator runs inside the gateway on every default install, so it is ours:
// modbus-serial's ServerTCP cost ~17 MB of resident memory for what is ~150 lines here. The
// drivers' tests talk to modbus-serial's server and Debian's pymodbus, peers we did not write.
import net from "node:net";

/** What the slave serves; a thrown ModbusException becomes that exception response. */
export interface SlaveHandlers {
  readBits(area: "coil" | "discrete", unitId: number, start: number, count: number, out: Uint8Array): void;
  readRegisters(area: "holding" | "input", unitId: number, start: number, count: number, out: Uint16Array): void;
  writeBits(unitId: number, start: number, values: Uint8Array): void;
  writeRegisters(unitId: number, start: number, values: Uint16Array): void;
}

export class ModbusException extends Error {
  constructor(readonly code: number) {
    super(`Modbus exception ${code}`);
  }
}

export const ILLEGAL_FUNCTION = 0x01;
export const ILLEGAL_DATA_ADDRESS = 0x02;
export const ILLEGAL_DATA_VALUE = 0x03;

const MBAP = 7;
/** The largest ADU: MBAP + 253 bytes of PDU. */
const MAX_ADU = MBAP + 253;

/** Answers one request PDU (`pdu` starts at the function code); returns the response PDU. */
export function answer(handlers: SlaveHandlers, unitId: number, pdu: Buffer): Buffer {
  const fc = pdu[0];
  try {
    return respond(handlers, unitId, fc, pdu);
  } catch (err) {
    const code = err instanceof ModbusException ? err.code : 0x04; // 04: slave device failure
    return Buffer.from([fc | 0x80, code]);
  }
}

function respond(h: SlaveHandlers, unitId: number, fc: number, pdu: Buffer): Buffer {
  if (pdu.length < 5) throw new ModbusException(ILLEGAL_DATA_VALUE);
  const start = pdu.readUInt16BE(1);
  const count = pdu.readUInt16BE(3);
  switch (fc) {
    case 1:
    case 2: {
      if (count < 1 || count > 2000) throw new ModbusException(ILLEGAL_DATA_VALUE);
      const bits = new Uint8Array(count);
      h.readBits(fc === 1 ? "coil" : "discrete", unitId, start, count, bits);
      const bytes = Math.ceil(count / 8);
      const out = Buffer.alloc(2 + bytes);
      out[0] = fc;
      out[1] = bytes;
      for (let i = 0; i < count; i++) if (bits[i]) out[2 + (i >> 3)] |= 1 << (i & 7);
      return out;
    }
    case 3:
    case 4: {
      if (count < 1 || count > 125) throw new ModbusException(ILLEGAL_DATA_VALUE);
      const regs = new Uint16Array(count);
      h.readRegisters(fc === 3 ? "holding" : "input", unitId, start, count, regs);
      const out = Buffer.alloc(2 + 2 * count);
      out[0] = fc;
      out[1] = 2 * count;
      for (let i = 0; i < count; i++) out.writeUInt16BE(regs[i], 2 + 2 * i);
      return out;
    }
    case 5: {
      // `count` holds the value: 0xFF00 on, 0x0000 off, anything else is invalid.
      if (count !== 0xff00 && count !== 0) throw new ModbusException(ILLEGAL_DATA_VALUE);
      h.writeBits(unitId, start, Uint8Array.of(count === 0xff00 ? 1 : 0));
      return Buffer.from(pdu.subarray(0, 5));
    }
    case 6:
      h.writeRegisters(unitId, start, Uint16Array.of(count));
      return Buffer.from(pdu.subarray(0, 5));
    case 15: {
      const bytes = pdu[5];
      if (count < 1 || count > 1968 || bytes !== Math.ceil(count / 8) || pdu.length < 6 + bytes) {
        throw new ModbusException(ILLEGAL_DATA_VALUE);
      }
      const bits = new Uint8Array(count);
      for (let i = 0; i < count; i++) bits[i] = (pdu[6 + (i >> 3)] >> (i & 7)) & 1;
      h.writeBits(unitId, start, bits);
      return Buffer.from(pdu.subarray(0, 5));
    }
    case 16: {
      const bytes = pdu[5];
      if (count < 1 || count > 123 || bytes !== 2 * count || pdu.length < 6 + bytes) throw new ModbusException(ILLEGAL_DATA_VALUE);
      const regs = new Uint16Array(count);
      for (let i = 0; i < count; i++) regs[i] = pdu.readUInt16BE(6 + 2 * i);
      h.writeRegisters(unitId, start, regs);
      return Buffer.from(pdu.subarray(0, 5));
    }
    default:
      throw new ModbusException(ILLEGAL_FUNCTION);
  }
}

interface Conn {
  acc: Buffer;
  handlers: SlaveHandlers;
}

function onData(this: net.Socket & { fg?: Conn }, chunk: Buffer): void {
  const c = this.fg!;
  c.acc = c.acc.length === 0 ? chunk : Buffer.concat([c.acc, chunk]);
  while (c.acc.length >= MBAP) {
    const length = c.acc.readUInt16BE(4);
    // Messaging on TCP/IP §3.1.3: the length counts the unit id and the PDU.
    if (c.acc.readUInt16BE(2) !== 0 || length < 2 || MBAP - 1 + length > MAX_ADU) {
      this.destroy();
      return;
    }
    const size = MBAP - 1 + length;
    if (c.acc.length < size) return;
    const unitId = c.acc[6];
    const pdu = answer(c.handlers, unitId, c.acc.subarray(MBAP, size));
    const out = Buffer.allocUnsafe(MBAP + pdu.length);
    c.acc.copy(out, 0, 0, 4); // transaction and protocol ids echo the request
    out.writeUInt16BE(pdu.length + 1, 4);
    out[6] = unitId;
    pdu.copy(out, MBAP);
    this.write(out);
    c.acc = c.acc.subarray(size);
  }
}

function ignore(): void {
  // A client that resets its connection is not the simulator's problem.
}

export interface ModbusTcpSlave {
  readonly port: number;
  /** Stops listening and drops every connection. */
  close(): Promise<void>;
}

/** Listens on host:port (0 = any free port); resolves once it listens. */
export function listenModbusTcp(handlers: SlaveHandlers, host: string, port: number): Promise<ModbusTcpSlave> {
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket: net.Socket & { fg?: Conn }) => {
    socket.fg = { acc: Buffer.alloc(0), handlers };
    socket.setNoDelay(true);
    socket.on("data", onData);
    socket.on("error", ignore);
    sockets.add(socket);
    socket.once("close", () => sockets.delete(socket));
  });
  let closed: Promise<void> | undefined;
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => {
      server.off("error", reject);
      const address = server.address();
      resolve({
        port: typeof address === "object" && address !== null ? address.port : port,
        close: () =>
          (closed ??= new Promise<void>((done) => {
            server.close(() => done());
            for (const s of sockets) s.destroy();
          })),
      });
    });
  });
}
