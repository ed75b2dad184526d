// A device for the store-and-forward tests: modbus-serial's ServerTCP whose input register 0 the
// test counts up, so that every value the gateway sees is known, and whose holding register 0
// keeps (and lists) what is written to it; and the values of a tag as a host application
// received them.
import { startModbusSerialServer } from "../drivers/peers.js";
import { metricNamed, num, type Received } from "./peers.js";

export interface Counter {
  readonly port: number;
  value: number;
  /** Every value written to holding register 0, in the order the device got them. */
  readonly writes: number[];
  start(periodMs: number): void;
  halt(): void;
  close(): Promise<void>;
}

export async function startCounter(): Promise<Counter> {
  const c = {
    port: 0,
    value: 0,
    writes: [] as number[],
    timer: undefined as NodeJS.Timeout | undefined,
    start(periodMs: number) {
      this.timer = setInterval(() => this.value++, periodMs);
    },
    halt() {
      if (this.timer) clearInterval(this.timer);
      this.timer = undefined;
    },
    close: async () => undefined,
  };
  const server = await startModbusSerialServer({
    getInputRegister: (addr: number) => (addr === 0 ? c.value & 0xffff : addr),
    getHoldingRegister: (addr: number) => (addr === 0 ? (c.writes.at(-1) ?? 0) : 0),
    getCoil: () => false,
    getDiscreteInput: () => false,
    setRegister: (addr: number, value: number) => {
      if (addr === 0) c.writes.push(value);
    },
    setCoil: () => undefined,
  });
  (c as { port: number }).port = server.port;
  c.close = async () => {
    c.halt();
    await server.close();
  };
  return c;
}

/** The counter as a device of the map; `writable` adds the holding register as `setpoint`, written by the operator role. */
export function counterDevices(port: number, name = "meter", writable = false): string {
  return `devices:
  - name: ${name}
    driver: modbus-tcp
    host: 127.0.0.1
    port: ${port}
    rate: 100ms
${writable ? "    writeRoles: [operator]\n" : ""}    tags:
      - { name: count, address: "input:0", type: uint16 }
      - { name: fixed, address: "input:5", type: uint16 }
${writable ? '      - { name: setpoint, address: "holding:0", type: uint16, access: readwrite }\n' : ""}`;
}

/** The values of `tag` of `device` in DDATA (live and historical) in arrival order, by the aliases of each session's DBIRTH. */
export function dataValues(received: readonly Received[], device: string, tag: string): { value: number; historical: boolean; time: number }[] {
  let alias = -1;
  const out: { value: number; historical: boolean; time: number }[] = [];
  for (const r of received) {
    if (r.device !== device) continue;
    if (r.type === "DBIRTH") alias = num(metricNamed(r.payload, tag)?.alias);
    if (r.type !== "DDATA") continue;
    for (const m of r.payload.metrics ?? []) {
      if (num(m.alias) !== alias) continue;
      out.push({ value: num(m.value), historical: m.isHistorical === true, time: num(m.timestamp) });
    }
  }
  return out;
}

