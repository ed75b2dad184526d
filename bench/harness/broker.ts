// Debian's mosquitto as the MQTT broker of a bench case (the northbound's peer), on a port of its
// own on loopback, pinned like a load; and a free port for it (or for a server the bench starts).
import { spawn, type ChildProcess } from "node:child_process";
import { writeFileSync } from "node:fs";
import net from "node:net";
import { join } from "node:path";
import { pinnedCommand } from "./proc.js";
import { sleep } from "./scenario.js";

export const MOSQUITTO = "/usr/sbin/mosquitto";

/** A port free on 127.0.0.1 a moment ago. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const port = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(port));
    });
  });
}

export class Broker {
  private child: ChildProcess | undefined;
  constructor(
    readonly port: number,
    private readonly conf: string,
    private readonly cpu: number | undefined,
  ) {}

  /** A broker on a free port of 127.0.0.1, anonymous, nothing persisted; its config in `dir`. */
  static async inDir(dir: string, cpu: number | undefined): Promise<Broker> {
    const port = await freePort();
    const conf = join(dir, "mosquitto.conf");
    writeFileSync(conf, `listener ${port} 127.0.0.1\nallow_anonymous true\npersistence false\nmax_queued_messages 1000000\nmax_inflight_messages 0\n`);
    return new Broker(port, conf, cpu);
  }

  get url(): string {
    return `mqtt://127.0.0.1:${this.port}`;
  }

  async start(): Promise<void> {
    const { command, args } = pinnedCommand(this.cpu, MOSQUITTO, ["-c", this.conf]);
    this.child = spawn(command, args, { stdio: "ignore" });
    const until = Date.now() + 10_000;
    for (;;) {
      const ok = await new Promise<boolean>((resolve) => {
        const s = net.connect(this.port, "127.0.0.1");
        s.once("connect", () => (s.destroy(), resolve(true)));
        s.once("error", () => (s.destroy(), resolve(false)));
      });
      if (ok) return;
      if (Date.now() > until) throw new Error("mosquitto did not start");
      await sleep(50);
    }
  }

  stop(): Promise<void> {
    const c = this.child;
    this.child = undefined;
    if (c === undefined || c.exitCode !== null) return Promise.resolve();
    return new Promise((resolve) => {
      c.once("exit", () => resolve());
      c.kill("SIGTERM");
    });
  }
}
