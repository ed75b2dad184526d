// network.yaml changed through the settings API as on the appliance, end to end: `fieldgate run`
// (its network back end handed over by gateway-run.ts) takes the change and leaves a request in
// its data folder; the test does what root's fieldgate-network-request.path does on the
// appliance and runs `fieldgate network serve --root DIR` (the appliance's folders under a temp
// folder: the port files are rendered there, nothing running is told, no network changes); the
// API, the CLI and the page show the change on trial; a confirmation makes it network.yaml and a
// version of it; a change nobody confirms is undone by `fieldgate network revert`, the command
// systemd's timer runs, and the files rendered are the confirmed settings' again.
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { hashPassword } from "../../src/sessions/users.js";
import { CLI, missingBuild, requirePeers, skipWithout } from "../helpers/built.js";
import { runCli, waitFor } from "../helpers/child-output.js";
import { basic, fetchPage, PASSWORDS, type Reply, type WebGateway } from "../web/helpers.js";

const unbuilt = missingBuild("src/cli.js");
const DHCP = "# as shipped: every port on DHCP\nports: []\n";
const STATIC = "hostname: line3\nports:\n  - name: eth0\n    addresses: [192.168.10.20/24]\n    gateway: 192.168.10.1\n";
const OTHER = STATIC.replace("192.168.10.20/24", "192.168.10.21/24");

const cli = (...args: string[]) => runCli(CLI, args, 30_000);

describe.skipIf(skipWithout(unbuilt))("network settings from the API to the root unit, as on the appliance", () => {
  const root = mkdtempSync(join(tmpdir(), "fieldgate-network-gateway-"));
  const etc = join(root, "etc/fieldgate");
  const data = join(root, "var/lib/fieldgate");
  const requests = join(data, "network-request");
  const portFiles = join(root, "run/systemd/network");
  let gateway: ChildProcess | undefined;
  let output = "";
  let g: Pick<WebGateway, "url" | "certPem">;
  /** The root unit's part: each request that appears is carried out, as the path unit starts it. */
  let serving = true;
  let served = 0;
  let unit: Promise<void> | undefined;

  beforeAll(async () => {
    requirePeers(unbuilt);
    mkdirSync(etc, { recursive: true });
    mkdirSync(requests, { recursive: true });
    writeFileSync(join(etc, "network.yaml"), DHCP);
    const [admin, viewer] = await Promise.all([hashPassword(PASSWORDS.admin), hashPassword(PASSWORDS.viewer)]);
    writeFileSync(
      join(etc, "gateway.yaml"),
      `server:\n  host: 127.0.0.1\n  port: 0\ndataDir: ${data}\n` +
        `users:\n  admin:\n    role: admin\n    password: "${admin}"\n  viewer:\n    role: viewer\n    password: "${viewer}"\n` +
        "web:\n  enabled: true\n  host: 127.0.0.1\n  port: 0\n  tls: false\n",
    );
    gateway = spawn(process.execPath, [CLI, "run", "--config", join(etc, "gateway.yaml")], { stdio: ["ignore", "pipe", "pipe"] });
    gateway.stdout!.on("data", (d: Buffer) => (output += d.toString()));
    gateway.stderr!.on("data", (d: Buffer) => (output += d.toString()));
    const m = await waitFor(gateway, () => output, /status page on (http:\/\/\S+)/, "the status page");
    g = { url: m[1]!.endsWith("/") ? m[1]! : `${m[1]}/`, certPem: "" };
    unit = (async () => {
      while (serving) {
        if (existsSync(join(requests, "request.json"))) {
          const r = await cli("network", "serve", "--root", root);
          expect(r.status, r.out).toBe(0);
          served++;
        }
        await new Promise((r) => setTimeout(r, 50));
      }
    })();
  }, 60_000);

  afterAll(async () => {
    serving = false;
    await unit;
    if (gateway !== undefined && gateway.exitCode === null) {
      const exited = new Promise((r) => gateway!.once("exit", r));
      gateway.kill("SIGTERM");
      await exited;
    }
    rmSync(root, { recursive: true, force: true });
  });

  const as = (user: keyof typeof PASSWORDS, path: string, method = "GET", body?: string): Promise<Reply> =>
    fetchPage(g as WebGateway, path, { method, headers: { authorization: basic(user), "content-type": "text/yaml" }, ...(body === undefined ? {} : { body }) });
  const status = async () => JSON.parse((await as("admin", "/api/config/network/status")).body);
  const rendered = () => readdirSync(portFiles).map((f) => readFileSync(join(portFiles, f), "utf8")).join("\n");

  it("is offered: gateway-run hands the page the appliance's back end where the request folder is", async () => {
    const list = JSON.parse((await as("viewer", "/api/config")).body);
    expect(list.find((k: { kind: string }) => k.kind === "network")).toEqual({ kind: "network", unavailable: null });
    expect((await as("viewer", "/api/config/network")).body).toBe(DHCP);
    // A viewer sees, never changes; a file with a mistake changes nothing and asks root for nothing.
    expect((await as("viewer", "/api/config/network", "POST", STATIC)).status).toBe(403);
    const bad = await as("admin", "/api/config/network", "POST", STATIC.replace("192.168.10.20/24", "192.168.10.20"));
    expect(bad.status).toBe(422);
    expect(JSON.parse(bad.body).issues[0]).toMatchObject({ line: 4, path: "ports[0].addresses[0]" });
    expect(served).toBe(0);
  });

  it("a change goes to the root unit and is on trial: the API, the page and `network status` say until when", async () => {
    const r = await as("admin", "/api/config/network", "POST", STATIC);
    expect(r.status, r.body).toBe(200);
    const body = JSON.parse(r.body);
    expect(body.message).toMatch(/^network settings applied on trial until \d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2} UTC: open the page at the new address and confirm there/);
    expect(body.pending.timeoutSeconds).toBe(120);
    expect(served).toBe(1);
    // Root's side rendered the change (here under DIR/run/systemd/network); network.yaml stays until confirmed.
    expect(rendered()).toContain("Address=192.168.10.20/24");
    expect(readFileSync(join(etc, "network.yaml"), "utf8")).toBe(DHCP);
    const s = await status();
    expect(s.pending).toMatchObject({ by: "admin", timeoutSeconds: 120, deadline: body.pending.deadline });
    const page = await fetchPage(g as WebGateway, "/", { headers: { authorization: basic("viewer") } });
    expect(page.body).toMatch(/<section id="network-trial" class="wide"><h2>Network settings on trial<\/h2><p>admin changed the network settings\. They are undone at [^<]+ unless confirmed by an admin\.<\/p><\/section>/);
    const cliStatus = await cli("network", "status", "--root", root);
    expect(cliStatus.out).toMatch(/a change by admin is on trial since .*: reverted at .* unless confirmed/);
  });

  it("confirmed: it becomes network.yaml (the old one kept) and a version, the first being the file as it was", async () => {
    const r = await as("admin", "/api/config/network/confirm", "POST");
    expect(r.status, r.body).toBe(200);
    expect(JSON.parse(r.body)).toMatchObject({ message: "network settings confirmed: they stay", version: { user: "admin" } });
    expect(served).toBe(2);
    expect(readFileSync(join(etc, "network.yaml"), "utf8")).toBe(STATIC);
    expect(readFileSync(join(etc, "network.yaml.previous"), "utf8")).toBe(DHCP);
    const s = await status();
    expect(s.pending).toBeUndefined();
    expect(s.last).toMatchObject({ result: "confirmed", reason: "confirmed by admin", by: "admin" });
    const versions = JSON.parse((await as("viewer", "/api/config/network/versions")).body);
    expect(versions.map((v: { user: string }) => v.user)).toEqual(["admin", "on disk"]);
    expect((await as("viewer", `/api/config/network/versions/${versions[1].id}`)).body).toBe(DHCP);
  });

  it("not confirmed: what the revert timer runs puts the confirmed settings back, and everything says so", async () => {
    // A script chooses how long the change stays on trial (as `fieldgate network try --timeout`).
    expect((await as("admin", "/api/config/network?timeout=5", "POST", OTHER)).body).toBe('{"error":"timeout: expected whole seconds from 10 to 3600, got \\"5\\""}');
    const r = await as("admin", "/api/config/network?timeout=20", "POST", OTHER);
    expect(r.status, r.body).toBe(200);
    expect(JSON.parse(r.body).pending.timeoutSeconds).toBe(20);
    expect((await status()).pending.timeoutSeconds).toBe(20);
    expect(rendered()).toContain("Address=192.168.10.21/24");
    // systemd's timer runs `fieldgate network revert --reason "not confirmed within 20 s"`.
    const revert = await cli("network", "revert", "--root", root, "--reason", "not confirmed within 20 s");
    expect(revert.status, revert.out).toBe(0);
    expect(rendered()).toContain("Address=192.168.10.20/24");
    expect(rendered()).not.toContain("192.168.10.21");
    expect(readFileSync(join(etc, "network.yaml"), "utf8")).toBe(STATIC);
    const s = await status();
    expect(s.pending).toBeUndefined();
    expect(s.last).toMatchObject({ result: "reverted", reason: "not confirmed within 20 s", by: "admin" });
    expect((await fetchPage(g as WebGateway, "/", { headers: { authorization: basic("admin") } })).body).not.toContain("network-trial");
    // A confirmation after the revert finds nothing, and says when it went.
    const late = await as("admin", "/api/config/network/confirm", "POST");
    expect(late.status).toBe(409);
    expect(JSON.parse(late.body).error).toMatch(/^no network change is on trial \(the last one was reverted at .*: not confirmed within 20 s\)$/);
    // Only the confirmed change became a version.
    expect(JSON.parse((await as("viewer", "/api/config/network/versions")).body)).toHaveLength(2);
    expect(output).toMatch(/status page: admin applied network settings on trial until/);
  });
});
