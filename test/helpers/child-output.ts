// The built CLI as a child process: waiting on what it writes (its stdout and stderr as one
// text), run to its end, and a running gateway with a client session on it.
import { spawn, type ChildProcess } from "node:child_process";
import { OPCUAClient, type ClientSession } from "node-opcua-client";

/** Resolves with the first match of `pattern` in `output()`; rejects after 15 s or when the child exits first. */
export function waitFor(child: ChildProcess, output: () => string, pattern: RegExp, what: string): Promise<RegExpExecArray> {
  return new Promise((resolveMatch, reject) => {
    const timer = setTimeout(() => done(new Error(`no ${what} within 15 s: ${output()}`)), 15_000);
    const check = () => {
      const m = pattern.exec(output());
      if (m) done(undefined, m);
    };
    const onExit = () => done(new Error(`exited before ${what}: ${output()}`));
    function done(err?: Error, m?: RegExpExecArray) {
      clearTimeout(timer);
      child.stdout!.off("data", check);
      child.stderr!.off("data", check);
      child.off("exit", onExit);
      if (err) reject(err);
      else resolveMatch(m!);
    }
    child.stdout!.on("data", check);
    child.stderr!.on("data", check);
    child.once("exit", onExit);
    check();
  });
}

/** What a CLI run to its end wrote: stdout, stderr, and the two as they came. */
export interface CliRun {
  readonly status: number | null;
  readonly stdout: string;
  readonly stderr: string;
  readonly out: string;
}

/**
 * Runs `node cli ...args` to its end without holding the event loop (peers served from this
 * process answer meanwhile); killed after `killAfterMs`, so that a hung command ends the test.
 */
export function runCli(cli: string, args: readonly string[], killAfterMs = 60_000): Promise<CliRun> {
  return new Promise((done) => {
    const child = spawn(process.execPath, [cli, ...args], { stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    let out = "";
    child.stdout.on("data", (d: Buffer) => {
      stdout += d.toString();
      out += d.toString();
    });
    child.stderr.on("data", (d: Buffer) => {
      stderr += d.toString();
      out += d.toString();
    });
    const t = setTimeout(() => child.kill("SIGKILL"), killAfterMs);
    child.on("exit", (status) => {
      clearTimeout(t);
      done({ status, stdout, stderr, out });
    });
  });
}

/** `fieldgate run` as a child, listening, with a node-opcua-client session on it. */
export interface CliGateway {
  readonly child: ChildProcess;
  /** Its stdout and stderr so far. */
  output(): string;
  readonly session: ClientSession;
  /** Waits for `pattern` in its output (waitFor). */
  waitFor(pattern: RegExp, what: string): Promise<RegExpExecArray>;
  /** Closes the session, sends SIGTERM and resolves with the exit code. */
  stop(): Promise<number | null>;
}

/** Starts `node cli run --config configFile` and connects a client once it says it listens. */
export async function runCliGateway(cli: string, configFile: string): Promise<CliGateway> {
  const child = spawn(process.execPath, [cli, "run", "--config", configFile], { stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  child.stdout!.on("data", (d: Buffer) => (out += d.toString()));
  child.stderr!.on("data", (d: Buffer) => (out += d.toString()));
  const exited = new Promise<number | null>((r) => child.once("exit", (code) => r(code)));
  const output = () => out;
  const client = OPCUAClient.create({ endpointMustExist: false, connectionStrategy: { maxRetry: 0 } });
  let session: ClientSession | undefined;
  const stop = async (): Promise<number | null> => {
    await session?.close().catch(() => undefined);
    await client.disconnect().catch(() => undefined);
    child.kill("SIGTERM");
    return exited;
  };
  try {
    const port = (await waitFor(child, output, /listening on opc\.tcp:\/\/\S+:(\d+)/, "listening line"))[1];
    await client.connect(`opc.tcp://127.0.0.1:${port}`);
    session = await client.createSession();
  } catch (err) {
    await stop();
    throw err;
  }
  return { child, output, session, waitFor: (pattern, what) => waitFor(child, output, pattern, what), stop };
}
