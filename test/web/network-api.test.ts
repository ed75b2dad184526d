// network.yaml through the settings API and the page (src/server/network-settings.ts): a change
// applied on trial through the appliance's root unit, the page at any address offering to keep
// it, a confirmation that makes it a version, refusals that change nothing, and a unit that does
// not answer said so. The root unit here is a stand-in with the appliance's request protocol
// (one request at a time; try refused while another is on trial; confirm installs the text as
// network.yaml, the old one kept): the renderer and networkd are the image test's.
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse } from "yaml";
import type { ConfigIssue } from "../../src/config/errors.js";
import { NetworkRequests, type NetworkBackend, type PendingChange } from "../../src/server/network-settings.js";
import { fetchPage, login, startWebGateway, type WebGateway } from "./helpers.js";

/** The root unit's side, in memory: answers each request on a later turn, as the path unit does. */
class RootUnit implements NetworkBackend {
  answering = true;
  file = "";
  private requests = new Map<string, Parameters<NetworkBackend["submit"]>[0]>();
  private answers = new Map<string, ReturnType<NetworkBackend["response"]>>();
  private n = 0;
  pending: PendingChange | undefined;
  private candidate = "";
  last: { result: string; at: string; reason: string; by: string } | undefined;

  submit(r: Parameters<NetworkBackend["submit"]>[0]): { ok: true; id: string } | { ok: false; message: string } {
    if (this.requests.size > 0) return { ok: false, message: "another network request is waiting to be carried out" };
    const id = `r${++this.n}`;
    this.requests.set(id, r);
    if (this.answering) setTimeout(() => this.serve(id), 20);
    return { ok: true, id };
  }

  response(id: string) {
    return this.answers.get(id);
  }

  trialStatus() {
    return { ...(this.pending ? { pending: this.pending } : {}), ...(this.last ? { last: this.last } : {}) };
  }

  validate(text: string, file: string): { ok: boolean; issues: ConfigIssue[]; value?: unknown } {
    const v = (parse(text) ?? { ports: [] }) as { ports?: { addresses?: string[] }[] };
    const issues: ConfigIssue[] = [];
    (v.ports ?? []).forEach((p, i) =>
      (p.addresses ?? []).forEach((a, k) => {
        if (!a.includes("/")) issues.push({ file, line: 3, column: 17, path: `ports[${i}].addresses[${k}]`, message: `add the prefix length, e.g. "${a}/24"` });
      }),
    );
    return issues.length > 0 ? { ok: false, issues } : { ok: true, issues, value: v };
  }

  private serve(id: string): void {
    const r = this.requests.get(id)!;
    this.requests.delete(id);
    const at = new Date().toISOString();
    if (r.action === "try") {
      if (this.pending) {
        this.answers.set(id, { ok: false, issues: [{ file: "network.yaml", line: 0, column: 0, path: "", message: `a network change by ${this.pending.by} is on trial: confirm or revert it first` }] });
        return;
      }
      this.pending = { started: at, deadline: new Date(Date.now() + r.timeoutSeconds! * 1000).toISOString(), timeoutSeconds: r.timeoutSeconds!, by: r.by };
      this.candidate = r.text!;
      this.answers.set(id, { ok: true, pending: this.pending });
    } else if (r.action === "confirm") {
      if (!this.pending) {
        this.answers.set(id, { ok: false, message: "no network change is on trial" });
        return;
      }
      if (existsSync(this.file)) writeFileSync(`${this.file}.previous`, readFileSync(this.file));
      writeFileSync(this.file, this.candidate);
      this.last = { result: "confirmed", at, reason: `confirmed by ${r.by}`, by: this.pending.by };
      this.pending = undefined;
      this.answers.set(id, { ok: true });
    }
  }
}

describe("network settings from the page", () => {
  const dir = mkdtempSync(join(tmpdir(), "fieldgate-network-api-"));
  const root = new RootUnit();
  let g: WebGateway;
  let cookie: string;
  let csrf: string;
  const STATIC = "ports:\n  - name: eth0\n    addresses: [192.168.10.20/24]\n    gateway: 192.168.10.1\n";

  beforeAll(async () => {
    root.file = join(dir, "network.yaml");
    mkdirSync(join(dir, "data", "network-request"), { recursive: true });
    g = await startWebGateway({ dir, server: { networkBackend: root } });
    cookie = await login(g, "admin");
    csrf = JSON.parse((await fetchPage(g, "/api/me", { headers: { cookie } })).body).csrf;
  }, 60_000);
  afterAll(async () => {
    await g?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  const post = (path: string, body = "") => fetchPage(g, path, { method: "POST", headers: { cookie, "x-fieldgate-csrf": csrf, "content-type": "text/yaml" }, body });

  it("is offered where the appliance's request folder is, and reads an absent network.yaml as empty", async () => {
    const list = JSON.parse((await fetchPage(g, "/api/config", { headers: { cookie } })).body);
    expect(list.find((k: { kind: string }) => k.kind === "network")).toEqual({ kind: "network", unavailable: null });
    expect((await fetchPage(g, "/api/config/network", { headers: { cookie } })).body).toBe("");
  });

  it("refuses a file with mistakes, changing nothing", async () => {
    const r = await post("/api/config/network", STATIC.replace("192.168.10.20/24", "192.168.10.20"));
    expect(r.status).toBe(422);
    expect(JSON.parse(r.body).issues[0]).toMatchObject({ path: "ports[0].addresses[0]", line: 3 });
    expect(root.pending).toBeUndefined();
  });

  it("applies on trial, shows the page wherever it is opened a button to keep it, and a confirmation makes it a version", async () => {
    const r = await post("/api/config/network", STATIC);
    expect(r.status).toBe(200);
    const body = JSON.parse(r.body);
    expect(body.pending).toEqual({ deadline: root.pending!.deadline, timeoutSeconds: 120 });
    expect(body.message).toMatch(/^network settings applied on trial until \d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2} UTC: open the page at the new address and confirm there/);
    expect(body.version).toBeUndefined();
    // Another change while one is on trial is refused by the unit, and said so.
    const busy = await post("/api/config/network", STATIC.replace("eth0", "eth1"));
    expect(busy.status).toBe(422);
    expect(JSON.parse(busy.body).error).toMatch(/on trial: confirm or revert it first/);

    const page = (await fetchPage(g, "/", { headers: { cookie } })).body;
    expect(page).toMatch(/<section id="network-trial" class="wide"><h2>Network settings on trial<\/h2><p>admin changed the network settings\. They are undone at \d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2} unless confirmed\.<\/p><button [^>]*id="confirm-network">/);
    const status = JSON.parse((await fetchPage(g, "/api/config/network/status", { headers: { cookie } })).body);
    expect(status.pending.by).toBe("admin");

    const ok = await post("/api/config/network/confirm");
    expect(ok.status).toBe(200);
    expect(JSON.parse(ok.body)).toMatchObject({ message: "network settings confirmed: they stay", version: { id: 1, user: "admin" } });
    expect(readFileSync(root.file, "utf8")).toBe(STATIC);
    expect((await fetchPage(g, "/api/config/network/versions/1", { headers: { cookie } })).body).toBe(STATIC);
    expect((await fetchPage(g, "/", { headers: { cookie } })).body).not.toContain("network-trial");
    const after = JSON.parse((await fetchPage(g, "/api/config/network/status", { headers: { cookie } })).body);
    expect(after).toMatchObject({ last: { result: "confirmed" }, current: { ports: [{ name: "eth0" }] } });
    // Nothing left to confirm.
    const again = await post("/api/config/network/confirm");
    expect(again.status).toBe(409);
    expect(JSON.parse(again.body).error).toBe("no network change is on trial");
  });

  it("says when the root unit does not answer", async () => {
    const quiet = new RootUnit();
    quiet.answering = false;
    const n = new NetworkRequests({ file: join(dir, "quiet.yaml"), requestDir: join(dir, "data", "network-request"), backend: quiet, answerTimeout: 200, pollInterval: 20, log: { notice: () => undefined, warn: () => undefined } });
    const r = await n.tryChange(STATIC, "admin");
    expect(r).toMatchObject({ ok: false, status: 503, message: expect.stringMatching(/no answer from the gateway's network unit/) });
  });
});
