// Peers for the Modbus driver tests that nobody here wrote: modbus-serial's ServerTCP, Debian's
// python3-pymodbus (a script under peers/ that uses its server classes), and socat pty pairs.
import { spawn, spawnSync } from "node:child_process";
import type { ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import net from "node:net";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { ServerTCP } from "modbus-serial";
import type { IServiceVector } from "modbus-serial";

const here = dirname(fileURLToPath(import.meta.url));

/** Debian's python3-pymodbus lives in /usr/bin/python3's dist-packages, not in a pyenv one. */
export const PYTHON = "/usr/bin/python3";
export const HAVE_PYMODBUS =
  existsSync(PYTHON) && spawnSync(PYTHON, ["-c", "import pymodbus, serial_asyncio"], { stdio: "ignore" }).status === 0;
export const HAVE_SOCAT = spawnSync("socat", ["-V"], { stdio: "ignore" }).status === 0;
export const PYMODBUS_MISSING = "needs Debian's python3-pymodbus (apt-get install python3-pymodbus)";
export const SOCAT_MISSING = "needs socat (apt-get install socat)";
export { IN_CI, requirePeers, skipWithout } from "../helpers/ci.js";

/** A free loopback port (modbus-serial's ServerTCP treats port 0 as 502, so it needs a real one). */
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

export type ServerVector = IServiceVector;

/** modbus-serial's ServerTCP on 127.0.0.1, answering every unit id. */
export async function startModbusSerialServer(vector: ServerVector, port?: number): Promise<{ port: number; close(): Promise<void> }> {
  const p = port ?? (await freePort());
  const server = new ServerTCP(vector, { host: "127.0.0.1", port: p, unitID: 255 });
  await new Promise<void>((resolve, reject) => {
    server.once("initialized", resolve);
    server.once("serverError", reject);
  });
  return {
    port: p,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

export interface PythonPeer {
  port: number;
  /** Sends a command (`mute 2`, `unmute 2`) and waits for its acknowledgement. */
  command(line: string): Promise<void>;
  stop(): Promise<void>;
}

/** Starts peers/pymodbus_peer.py (`tcp [port]` or `rtu PATH`) and waits until it serves. */
export async function startPymodbus(...args: string[]): Promise<PythonPeer> {
  const child = spawn(PYTHON, [join(here, "peers", "pymodbus_peer.py"), ...args], { stdio: ["pipe", "pipe", "pipe"] });
  let stderr = "";
  child.stderr!.on("data", (d: Buffer) => (stderr += d.toString()));
  const lines = createInterface({ input: child.stdout! });
  const waiting: ((line: string) => void)[] = [];
  lines.on("line", (line) => waiting.shift()?.(line));
  const nextLine = (what: string) =>
    new Promise<string>((resolve, reject) => {
      const t = setTimeout(() => reject(new Error(`pymodbus peer: no ${what} within 10 s; stderr: ${stderr}`)), 10_000);
      const onExit = () => reject(new Error(`pymodbus peer exited before ${what}; stderr: ${stderr}`));
      child.once("exit", onExit);
      waiting.push((line) => {
        clearTimeout(t);
        child.removeListener("exit", onExit);
        resolve(line);
      });
    });
  const ready = JSON.parse(await nextLine("ready line")) as { port: number };
  return {
    port: ready.port,
    async command(line) {
      const ack = nextLine(`ack of ${line}`);
      child.stdin!.write(line + "\n");
      await ack;
    },
    stop: () => stopChild(child),
  };
}

function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    child.once("exit", () => resolve());
    child.kill("SIGKILL");
  });
}

export interface PtyPair {
  /** The two ends: bytes written to one are read from the other. */
  a: string;
  b: string;
  stop(): Promise<void>;
}

/**
 * A socat pseudo-terminal pair in raw mode, as the issue prescribes. `dir` reuses the link paths
 * of an earlier pair (a bus that comes back); stop() removes the folder only when it made it.
 */
export async function ptyPair(dir?: string): Promise<PtyPair & { dir: string }> {
  const own = dir === undefined;
  if (dir === undefined) dir = mkdtempSync(join(tmpdir(), "fieldgate-pty-"));
  const a = join(dir, "a");
  const b = join(dir, "b");
  const child = spawn("socat", ["-d", "-d", `pty,raw,echo=0,link=${a}`, `pty,raw,echo=0,link=${b}`], { stdio: ["ignore", "ignore", "pipe"] });
  let stderr = "";
  child.stderr!.on("data", (d: Buffer) => (stderr += d.toString()));
  // socat logs "starting data transfer loop" once both ptys exist.
  await new Promise<void>((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`socat did not start: ${stderr}`)), 5000);
    const check = () => {
      if (stderr.includes("starting data transfer loop") && existsSync(a) && existsSync(b)) {
        clearTimeout(t);
        child.stderr!.removeListener("data", check);
        resolve();
      }
    };
    child.stderr!.on("data", check);
    child.once("exit", () => reject(new Error(`socat exited: ${stderr}`)));
  });
  return {
    a,
    b,
    dir,
    async stop() {
      await stopChild(child);
      if (own) rmSync(dir, { recursive: true, force: true });
    },
  };
}
