// A bus of M-Bus meters for the driver's tests, written here and sharing no code with
// drivers/mbus: it cuts the master's requests out of the bytes itself and answers as meters do
// (EN 13757-2/-3): SND_NKE with E5h (and a restart of the meter's telegrams), REQ_UD2 with the
// meter's recorded telegrams in turn (the same FCB as the last answered request: the last
// telegram again), a selection by secondary address (SND_UD to 253, CI 52h, wildcards F/FFFF/FF)
// with E5h from each meter it names. Meters that answer at once collide as on the wire: their
// bytes are ANDed (an M-Bus slave answers by drawing current). A meter can be silent, send
// corrupt frames, or noise before its answers. It serves one end of a socat pty pair or TCP.
import { readFileSync } from "node:fs";
import net from "node:net";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { SerialPort } from "serialport";

export interface RecordedTelegram {
  readonly ci: number;
  readonly data: Buffer;
}

/** A meter of the simulated bus. */
export class SimMeter {
  silent = false;
  /** The next this many answers go out with a wrong checksum. */
  corrupt = 0;
  /** Sent before each answer. */
  noise: Buffer | undefined;
  /** Kinds of request ("SND_NKE", "REQ_UD2", "SELECT") it ignores once each: requests lost on the way. */
  lose: string[] = [];
  /** Requests it was sent, in words ("SND_NKE", "REQ_UD2 FCB1", "SELECT"). */
  readonly heard: string[] = [];
  private next = 0;
  private lastFcb: boolean | undefined;
  private last: Buffer | undefined;
  selected = false;

  constructor(
    public primary: number,
    public telegrams: RecordedTelegram[],
  ) {}

  /** The secondary address from its first telegram's header (CI 72h): ID, manufacturer, version, medium. */
  get secondary(): Buffer {
    return this.telegrams[0]!.data.subarray(0, 8);
  }

  reset(): void {
    this.next = 0;
    this.lastFcb = undefined;
    this.last = undefined;
  }

  answer(fcb: boolean): Buffer {
    if (this.last !== undefined && this.lastFcb === fcb) return this.last;
    const t = this.telegrams[this.next % this.telegrams.length]!;
    this.next++;
    this.lastFcb = fcb;
    this.last = frame(0x08, this.primary, t.ci, t.data);
    return this.last;
  }

  /** Whether this meter does not answer this request of `kind`. */
  mute(kind: string): boolean {
    if (this.silent) return true;
    const i = this.lose.indexOf(kind);
    if (i >= 0) this.lose.splice(i, 1);
    return i >= 0;
  }

  dress(answer: Buffer): Buffer {
    let out = answer;
    if (this.corrupt > 0 && out.length > 1) {
      this.corrupt--;
      out = Buffer.from(out);
      out[out.length - 2] = (out[out.length - 2]! + 1) & 0xff;
    }
    return this.noise === undefined ? out : Buffer.concat([this.noise, out]);
  }
}

export function frame(c: number, a: number, ci: number, data: Uint8Array): Buffer {
  const body = Buffer.concat([Buffer.from([c, a, ci]), data]);
  let cs = 0;
  for (const b of body) cs = (cs + b) & 0xff;
  return Buffer.concat([Buffer.from([0x68, body.length, body.length, 0x68]), body, Buffer.from([cs, 0x16])]);
}

/** The telegram of a libmbus capture (hex pairs): its CI and data. */
export function telegramOfHex(hexText: string): RecordedTelegram {
  const b = Buffer.from(hexText.trim().split(/\s+/).map((w) => parseInt(w, 16)));
  return { ci: b[6]!, data: b.subarray(7, b.length - 2) };
}

const FRAMES = join(dirname(fileURLToPath(import.meta.url)), "mbus-frames", "test-frames");

/** A telegram libmbus keeps in its test data (test/drivers/mbus-frames/test-frames/NAME.hex). */
export function capture(name: string): RecordedTelegram {
  return telegramOfHex(readFileSync(join(FRAMES, `${name}.hex`), "latin1"));
}

/** A second telegram of the Elvaco CMa10, whose first ends in DIF 1Fh: its header and two records. */
export function elvacoSecond(): RecordedTelegram {
  const first = capture("ELV-Elvaco-CMa10");
  // 04 13: volume 10^-3 m³, 32-bit: 1234; 02 5A: flow temperature 10^-1 °C: 456.
  return { ci: 0x72, data: Buffer.concat([first.data.subarray(0, 12), Buffer.from([0x04, 0x13, 0xd2, 0x04, 0x00, 0x00, 0x02, 0x5a, 0xc8, 0x01])]) };
}

/** Each byte the AND of the answers' bytes at its place: several slaves answering at once. */
function collide(answers: Buffer[]): Buffer {
  const out = Buffer.from(answers[0]!);
  const longest = Math.max(...answers.map((a) => a.length));
  const all = Buffer.alloc(longest, 0xff);
  out.copy(all);
  for (const a of answers.slice(1)) for (let i = 0; i < longest; i++) all[i] = all[i]! & (i < a.length ? a[i]! : 0xff);
  return all;
}

function selects(mask: Buffer, id: Buffer): boolean {
  for (let i = 0; i < 4; i++) {
    for (const shift of [0, 4]) {
      const m = (mask[i]! >> shift) & 15;
      if (m !== 15 && m !== ((id[i]! >> shift) & 15)) return false;
    }
  }
  const man = mask.readUInt16LE(4);
  return (man === 0xffff || man === id.readUInt16LE(4)) && (mask[6] === 0xff || mask[6] === id[6]) && (mask[7] === 0xff || mask[7] === id[7]);
}

export class SimBus {
  readonly meters: SimMeter[] = [];
  /** Every request, in words ("SND_NKE 5", "REQ_UD2 253 FCB0", "SELECT 78563412FFFFFFFF"). */
  readonly log: string[] = [];
  private rx = Buffer.alloc(0);
  private closers: (() => Promise<void>)[] = [];

  add(primary: number, telegrams: RecordedTelegram[]): SimMeter {
    const m = new SimMeter(primary, telegrams);
    this.meters.push(m);
    return m;
  }

  /** The answer to the bytes received so far (undefined: none). */
  feed(bytes: Buffer): Buffer | undefined {
    this.rx = Buffer.concat([this.rx, bytes]);
    const out: Buffer[] = [];
    while (this.rx.length > 0) {
      if (this.rx[0] !== 0x10 && this.rx[0] !== 0x68) {
        this.rx = this.rx.subarray(1);
        continue;
      }
      if (this.rx[0] === 0x10) {
        if (this.rx.length < 5) break;
        const [c, a] = [this.rx[1]!, this.rx[2]!];
        this.rx = this.rx.subarray(5);
        const answer = this.short(c, a);
        if (answer !== undefined) out.push(answer);
        continue;
      }
      if (this.rx.length < 4) break;
      const total = this.rx[1]! + 6;
      if (this.rx.length < total) break;
      const f = this.rx.subarray(0, total);
      this.rx = this.rx.subarray(total);
      const answer = this.long(f[4]!, f[5]!, f[6]!, f.subarray(7, total - 2));
      if (answer !== undefined) out.push(answer);
    }
    return out.length === 0 ? undefined : Buffer.concat(out);
  }

  private addressed(a: number): SimMeter[] {
    return a === 0xfd ? this.meters.filter((m) => m.selected) : this.meters.filter((m) => m.primary === a);
  }

  private short(c: number, a: number): Buffer | undefined {
    const meters = this.addressed(a);
    if (c === 0x40) {
      this.log.push(`SND_NKE ${a}`);
      const answering: Buffer[] = [];
      for (const m of meters) {
        m.heard.push("SND_NKE");
        if (m.mute("SND_NKE")) continue;
        m.reset();
        if (a === 0xfd) m.selected = false;
        answering.push(m.dress(Buffer.from([0xe5])));
      }
      return answering.length === 0 ? undefined : collide(answering);
    }
    if ((c & 0xdf) === 0x5b) {
      const fcb = (c & 0x20) !== 0;
      this.log.push(`REQ_UD2 ${a} FCB${fcb ? 1 : 0}`);
      const answering: Buffer[] = [];
      for (const m of meters) {
        m.heard.push(`REQ_UD2 FCB${fcb ? 1 : 0}`);
        if (m.mute("REQ_UD2")) continue;
        answering.push(m.dress(m.answer(fcb)));
      }
      return answering.length === 0 ? undefined : collide(answering);
    }
    this.log.push(`C ${c.toString(16)} ${a}`);
    return undefined;
  }

  private long(c: number, a: number, ci: number, data: Buffer): Buffer | undefined {
    if ((c & 0xdf) === 0x53 && a === 0xfd && ci === 0x52 && data.length === 8) {
      const mask = Buffer.from(data);
      this.log.push(`SELECT ${Buffer.from(mask.subarray(0, 4)).reverse().toString("hex").toUpperCase()}${mask.readUInt16LE(4).toString(16).toUpperCase().padStart(4, "0")}${mask.subarray(6, 8).toString("hex").toUpperCase()}`);
      const answering: Buffer[] = [];
      for (const m of this.meters) {
        m.selected = selects(mask, m.secondary);
        if (!m.selected) continue;
        m.heard.push("SELECT");
        if (m.mute("SELECT")) continue;
        answering.push(m.dress(Buffer.from([0xe5])));
      }
      return answering.length === 0 ? undefined : collide(answering);
    }
    this.log.push(`LONG ${c.toString(16)} ${a} CI ${ci.toString(16)}`);
    return undefined;
  }

  private reply(write: (b: Buffer) => void, bytes: Buffer): void {
    const answer = this.feed(bytes);
    // A slave answers 11 bit times or more after the request: never in the same breath.
    if (answer !== undefined) setTimeout(() => write(answer), 2).unref();
  }

  /** Serves one end of a pty pair. */
  async serveSerial(path: string): Promise<void> {
    const port = new SerialPort({ path, baudRate: 9600, autoOpen: false });
    await new Promise<void>((resolve, reject) => port.open((err) => (err ? reject(err) : resolve())));
    port.on("data", (d: Buffer) => this.reply((b) => port.write(b), d));
    port.on("error", () => undefined);
    this.closers.push(() => new Promise<void>((resolve) => (port.isOpen ? port.close(() => resolve()) : resolve())));
  }

  /** Serves as an M-Bus to TCP converter on 127.0.0.1; resolves with its port. */
  async serveTcp(): Promise<number> {
    const sockets = new Set<net.Socket>();
    const server = net.createServer((s) => {
      sockets.add(s);
      s.on("close", () => sockets.delete(s));
      s.on("error", () => undefined);
      s.on("data", (d: Buffer) => this.reply((b) => s.write(b), d));
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    this.closers.push(
      () =>
        new Promise<void>((resolve) => {
          for (const s of sockets) s.destroy();
          server.close(() => resolve());
        }),
    );
    return (server.address() as net.AddressInfo).port;
  }

  async close(): Promise<void> {
    for (const c of this.closers.splice(0)) await c();
  }
}
