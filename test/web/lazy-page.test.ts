// The status page's code is loaded by its first request, not at the gateway's start: an idle
// gateway whose page nobody opens holds only the listener (web-server.ts).
//
// - `fieldgate run` from the build, in a child process whose module loads are recorded by a
//   module hook (node:module register): before any request, and after a SIGHUP reload, none of
//   the bundle's files it loaded holds the page's code; /metrics as the first request is
//   answered (read by a Prometheus parser nobody here wrote) and the page's code is loaded then.
// - In this process, with the import made slow or failing: concurrent first requests wait for
//   one import and all get their answers; a failed import answers 500, is logged, and the next
//   request imports again.
import { spawn, type ChildProcess } from "node:child_process";
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { request } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import parsePrometheusTextFormat from "parse-prometheus-text-format";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { RoutesModule } from "../../src/web/web-server.js";
import { distFile, missingBuild, requirePeers, skipWithout, CLI } from "../helpers/built.js";
import { basic, fetchPage, login, startWebGateway, type WebGateway } from "./helpers.js";

const unbuilt = missingBuild("src/cli.js", "bundle/main.js");

/** What only the page's routes define (names kept by the bundle: src/build/bundle.ts does not rename). */
const PAGE_CODE = ["function pageHtml(", "function renderMetrics(", "LiveUpdates=class", "WebAuth=class", "StatusViews=class"];

// Runs in the hooks' thread: every module loaded is posted to the preload on the main thread.
const HOOKS = `let port;
export function initialize(data) { port = data.port; }
export async function load(url, context, next) { port.postMessage(url); return next(url, context); }
`;
// The child's side: collects the loaded modules and tells them over the IPC channel when asked.
const PRELOAD = `import { register } from "node:module";
import { MessageChannel } from "node:worker_threads";
const { port1, port2 } = new MessageChannel();
const loaded = [];
port1.on("message", (url) => loaded.push(url));
port1.unref();
register(new URL("./hooks.mjs", import.meta.url), { data: { port: port2 }, transferList: [port2] });
process.on("message", (m) => { if (m === "loaded") process.send(loaded); });
process.channel.unref();
`;

/** The bundle's files among `urls`, and which of them hold the page's code. */
function pageFiles(urls: readonly string[]): { bundle: string[]; page: string[] } {
  const bundle = urls.filter((u) => u.startsWith(pathToFileURL(distFile("bundle/")).href)).map((u) => fileURLToPath(u));
  const page = bundle.filter((f) => {
    const text = readFileSync(f, "utf8");
    return PAGE_CODE.some((m) => text.includes(m));
  });
  return { bundle, page };
}

describe.skipIf(skipWithout(unbuilt))("fieldgate run: the status page's code before and after its first request", () => {
  let dir: string;
  let child: ChildProcess;
  let out = "";
  let pageUrl = "";

  const loaded = (): Promise<string[]> =>
    new Promise((resolve) => {
      child.once("message", (m) => resolve(m as string[]));
      child.send("loaded");
    });
  const waitFor = async (re: RegExp, from = 0): Promise<RegExpExecArray> => {
    for (let i = 0; i < 400 && child.exitCode === null; i++) {
      const m = re.exec(out.slice(from));
      if (m !== null) return m;
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error(`no ${re} in the gateway's output:\n${out}`);
  };
  const get = (path: string): Promise<{ status: number; type: string; body: string }> =>
    new Promise((resolve, reject) => {
      const req = request(new URL(path, pageUrl), { agent: false }, (res) => {
        let body = "";
        res.setEncoding("utf8");
        res.on("data", (d: string) => (body += d));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, type: res.headers["content-type"] ?? "", body }));
      });
      req.on("error", reject);
      req.setTimeout(15_000, () => req.destroy(new Error(`no answer to ${path}`)));
      req.end();
    });

  beforeAll(async () => {
    requirePeers(unbuilt);
    dir = mkdtempSync(join(tmpdir(), "fieldgate-lazy-page-"));
    writeFileSync(join(dir, "hooks.mjs"), HOOKS);
    writeFileSync(join(dir, "preload.mjs"), PRELOAD);
    copyFileSync(fileURLToPath(new URL("../../config/devices.yaml", import.meta.url)), join(dir, "devices.yaml"));
    const config = join(dir, "gateway.yaml");
    writeFileSync(
      config,
      "server:\n  host: 127.0.0.1\n  port: 0\ndataDir: ./data\ndevices: ./devices.yaml\nsecurity:\n  securityPolicies: [None]\n" +
        "web:\n  enabled: true\n  host: 127.0.0.1\n  port: 0\n  tls: false\n",
    );
    child = spawn(process.execPath, ["--import", pathToFileURL(join(dir, "preload.mjs")).href, CLI, "run", "--config", config], {
      cwd: dir,
      stdio: ["ignore", "pipe", "pipe", "ipc"],
    });
    child.stdout!.on("data", (d: Buffer) => (out += d.toString()));
    child.stderr!.on("data", (d: Buffer) => (out += d.toString()));
    pageUrl = (await waitFor(/status page on (http:\/\/127\.0\.0\.1:\d+\/)/))[1]!;
  }, 30_000);

  afterAll(async () => {
    if (child !== undefined && child.exitCode === null) {
      const exited = new Promise((r) => child.once("exit", r));
      child.kill("SIGTERM");
      await exited;
    }
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  });

  it("has not loaded the page's code at the start, nor after a reload; loads it with /metrics as the first request", async () => {
    const atStart = pageFiles(await loaded());
    // The hook sees the bundle (so an empty list proves nothing), and none of the page's code in it.
    expect(atStart.bundle.some((f) => f.endsWith("/bundle/main.js"))).toBe(true);
    expect(atStart.page).toEqual([]);

    // A reload tells the page of changed users: not by loading it.
    const mark = out.length;
    child.kill("SIGHUP");
    await waitFor(/SIGHUP: reloading[^\n]*\n[^\n]*device map: 1 unchanged/, mark);
    expect(pageFiles(await loaded()).page).toEqual([]);

    const metrics = await get("/metrics");
    expect(metrics.status).toBe(200);
    expect(metrics.type).toBe("text/plain; version=0.0.4; charset=utf-8");
    const families = new Map((parsePrometheusTextFormat(metrics.body) as { name: string; metrics: { value?: string }[] }[]).map((f) => [f.name, f]));
    expect(families.get("fieldgate_build_info")?.metrics[0]?.value).toBe("1");
    expect(families.has("process_cpu_seconds_total")).toBe(true);
    expect(pageFiles(await loaded()).page.length).toBeGreaterThan(0);

    const page = await get("/");
    expect(page.status).toBe(200);
    expect(page.body).toContain("simulator");
    expect(out).not.toMatch(/could not be loaded/);
  }, 30_000);
});

/** A stand-in import that waits for `release()`, then gives the routes' module or fails. */
function gatedImport(fail: (n: number) => boolean): { loadRoutes: () => Promise<RoutesModule>; release: () => void; count: () => number } {
  let n = 0;
  let release!: () => void;
  let gate = new Promise<void>((r) => (release = r));
  return {
    loadRoutes: async () => {
      const mine = ++n;
      await gate;
      if (fail(mine)) throw new Error("EMFILE: too many open files, open '.../web-routes.js'");
      return import("../../src/web/web-routes.js");
    },
    release: () => {
      release();
      gate = Promise.resolve();
    },
    count: () => n,
  };
}

/** Until the page's first request has started the import (each request is waiting for it then). */
async function importStarted(imports: { count: () => number }): Promise<void> {
  for (let i = 0; i < 300 && imports.count() === 0; i++) await new Promise((r) => setTimeout(r, 10));
  expect(imports.count()).toBe(1);
  // The other requests reach the listener (and wait) meanwhile; one that came after the release would be answered all the same.
  await new Promise((r) => setTimeout(r, 200));
}

describe("the first requests of a page whose code is still loading", () => {
  let g: WebGateway | undefined;
  afterEach(async () => {
    await g?.stop();
    g = undefined;
  });

  it("all wait for one import and get their answers, /metrics with Basic credentials among them", async () => {
    const imports = gatedImport(() => false);
    g = await startWebGateway({ loadRoutes: imports.loadRoutes });
    // A reload of the users before anyone opened the page loads nothing.
    g.web.usersChanged();
    expect(imports.count()).toBe(0);
    expect(g.web.loaded).toBe(false);

    const viewer = { authorization: basic("viewer") };
    const all = Promise.all([
      login(g, "admin"),
      fetchPage(g, "/metrics", { fresh: true, headers: viewer }),
      fetchPage(g, "/app.js", { fresh: true, headers: viewer }),
      fetchPage(g, "/app.css", { fresh: true }),
      fetchPage(g, "/login", { fresh: true }),
      fetchPage(g, "/api/state", { fresh: true, headers: viewer }),
      fetchPage(g, "/", { fresh: true }),
    ]);
    await importStarted(imports);
    expect(g.web.loaded).toBe(false);
    imports.release();
    const [cookie, metrics, appJs, appCss, loginForm, state, anonymous] = await all;
    expect(imports.count()).toBe(1);
    expect(g.web.loaded).toBe(true);
    expect(metrics.status).toBe(200);
    expect(metrics.body).toMatch(/^fieldgate_build_info\{version="[^"]+"\} 1$/m);
    expect(appJs.status).toBe(200);
    expect(appJs.headers["content-type"]).toBe("text/javascript; charset=utf-8");
    expect(appJs.body.length).toBeGreaterThan(1000);
    expect(appCss.status).toBe(200);
    expect(appCss.headers["content-type"]).toBe("text/css; charset=utf-8");
    expect(loginForm.status).toBe(200);
    expect(loginForm.body).toContain('name="password"');
    expect(state.status).toBe(200);
    expect(JSON.parse(state.body)).toHaveProperty("gateway");
    expect(anonymous.status).toBe(303);
    expect(anonymous.headers.location).toBe("/login");
    // The security headers come from the listener, on answers given while it loaded too.
    for (const r of [metrics, appJs, loginForm, anonymous]) {
      expect(r.headers["x-content-type-options"]).toBe("nosniff");
      expect(r.headers["strict-transport-security"]).toBe("max-age=31536000");
    }
    // The session made while the page loaded is the loaded page's.
    const page = await fetchPage(g, "/", { headers: { cookie } });
    expect(page.status).toBe(200);
    expect(page.body).toContain('<script src="/app.js"');
    expect(imports.count()).toBe(1);
  }, 30_000);

  it("a failed import answers 500 to every request that waited for it and is logged; the next request imports again", async () => {
    const imports = gatedImport((n) => n === 1);
    g = await startWebGateway({ users: false, tls: false, loadRoutes: imports.loadRoutes });
    const failing = Promise.all([fetchPage(g, "/metrics", { fresh: true }), fetchPage(g, "/api/state", { fresh: true })]);
    await importStarted(imports);
    imports.release();
    for (const r of await failing) {
      expect(r.status).toBe(500);
      expect(r.headers["content-type"]).toBe("application/json; charset=utf-8");
      expect(JSON.parse(r.body)).toEqual({ error: "the status page could not be loaded (the gateway's log says why); try again" });
    }
    expect(imports.count()).toBe(1);
    expect(g.web.loaded).toBe(false);
    const warned = g.log.recent(0).filter((l) => l.message.includes("could not be loaded"));
    expect(warned.map((l) => l.message)).toEqual(["status page: its code could not be loaded, the next request tries again: EMFILE: too many open files, open '.../web-routes.js'"]);

    const again = await fetchPage(g, "/metrics", { fresh: true });
    expect(again.status).toBe(200);
    expect(again.body).toMatch(/^fieldgate_build_info\{version="[^"]+"\} 1$/m);
    expect(imports.count()).toBe(2);
    expect(g.web.loaded).toBe(true);
  }, 30_000);
});
