// The command line as systemd and operators use it: `run` prints its URL, SIGTERM and SIGINT end
// it with status 0 after closing sessions; `validate` names file:line:column of a bad config.
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CLI as cli, missingBuild, requirePeers, skipWithout } from "../helpers/built.js";
import { AttributeIds, OPCUAClient } from "node-opcua-client";

const unbuilt = missingBuild("src/cli.js");
const dir = mkdtempSync(join(tmpdir(), "fieldgate-cli-"));
const good = join(dir, "gateway.yaml");
writeFileSync(good, "server:\n  host: 127.0.0.1\n  port: 0\n");

afterAll(() => rmSync(dir, { recursive: true, force: true }));

function startCli(): Promise<{ child: ReturnType<typeof spawn>; url: string; output: () => string }> {
  const child = spawn(process.execPath, [cli, "run", "--config", good], { stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  child.stderr!.on("data", (d: Buffer) => (out += d.toString()));
  return new Promise((resolveStart, reject) => {
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`no listening line: ${out}`));
    }, 15_000);
    child.stdout!.on("data", (d: Buffer) => {
      out += d.toString();
      const m = /listening on (opc\.tcp:\/\/\S+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        const port = /:(\d+)$/.exec(m[1])![1];
        resolveStart({ child, url: `opc.tcp://127.0.0.1:${port}`, output: () => out });
      }
    });
    child.once("exit", (code) => reject(new Error(`exited ${code}: ${out}`)));
  });
}

function exitOf(child: ReturnType<typeof spawn>): Promise<number | null> {
  return new Promise((r) => child.once("exit", (code) => r(code)));
}

describe.skipIf(skipWithout(unbuilt))("fieldgate CLI", () => {
  beforeAll(() => requirePeers(unbuilt));
  it.each(["SIGTERM", "SIGINT"] as const)("closes sessions and exits 0 on %s", async (signal) => {
    const { child, url, output } = await startCli();
    const client = OPCUAClient.create({ endpointMustExist: false, connectionStrategy: { maxRetry: 0 } });
    await client.connect(url);
    const session = await client.createSession();
    const dv = await session.read({ nodeId: "i=2259", attributeId: AttributeIds.Value });
    expect(dv.value.value).toBe(0); // ServerState Running
    const exited = exitOf(child);
    child.kill(signal);
    expect(await exited).toBe(0);
    expect(output()).toMatch(new RegExp(`${signal}, closing channels and sessions`));
    await client.disconnect();
  }, 30_000);

  it("validates a good and a bad config", () => {
    const ok = spawnSync(process.execPath, [cli, "validate", "--config", good], { encoding: "utf8" });
    expect(ok.status).toBe(0);
    const bad = join(dir, "bad.yaml");
    writeFileSync(bad, "server:\n  port: seventy\n");
    const res = spawnSync(process.execPath, [cli, "validate", "--config", bad], { encoding: "utf8" });
    expect(res.status).toBe(1);
    expect(res.stderr).toMatch(/bad\.yaml:2:9: server\.port: expected an integer/);
  });

  it("refuses to run on a bad config, naming the place", () => {
    const bad = join(dir, "bad2.yaml");
    writeFileSync(bad, "limits:\n  maxNodesPerRead: -3\n");
    const res = spawnSync(process.execPath, [cli, "run", "--config", bad], { encoding: "utf8", timeout: 15_000 });
    expect(res.status).toBe(1);
    expect(res.stderr).toMatch(/bad2\.yaml:2:20: limits\.maxNodesPerRead/);
  });
});
