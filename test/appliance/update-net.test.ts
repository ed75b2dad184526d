// The network parts of updates, on 127.0.0.1: the trial check's OPC UA probe against our server
// and against node-opcua-server (a server nobody here wrote), and bundles pulled from an https
// server with a certificate of its own CA (Debian's openssl makes it): the signed head first
// (a Range request), the rest only when it is newer.
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { createServer as createHttps, type Server } from "node:https";
import { createServer as createTcp } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { OPCUACertificateManager } from "node-opcua-certificate-manager";
import { nodesets } from "node-opcua-nodesets";
import { OPCUAServer } from "node-opcua-server";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { checkUrl } from "../../src/update/check.js";
import type { UpdateContext } from "../../src/update/flow.js";
import { Layout } from "../../src/update/layout.js";
import { probeEndpoints } from "../../src/update/probe.js";
import { UpdateStore } from "../../src/update/state.js";
import { startGateway } from "../helpers/gateway.js";
import { fieldgateUpdate, fieldgateUpdateAsync, makeFixture, type Fixture } from "./update-fixture.js";

const work = mkdtempSync(join(tmpdir(), "fieldgate-update-net-"));
afterAll(() => rmSync(work, { recursive: true, force: true }));

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createTcp().listen(0, "127.0.0.1", () => {
      const p = (s.address() as { port: number }).port;
      s.close(() => resolve(p));
    });
  });
}

describe("probeEndpoints", () => {
  it("gets the endpoints of a fieldgate server", async () => {
    const gw = await startGateway();
    try {
      const policies = await probeEndpoints("127.0.0.1", gw.server.port);
      expect(policies).toContain("None");
      expect(policies).toContain("Basic256Sha256");
    } finally {
      await gw.stop();
    }
  });

  it("gets the endpoints of node-opcua-server", async () => {
    const port = await freePort();
    const server = new OPCUAServer({
      port,
      hostname: "127.0.0.1",
      nodeset_filename: [nodesets.standard],
      serverCertificateManager: new OPCUACertificateManager({ rootFolder: join(work, "node-opcua-pki"), automaticallyAcceptUnknownCertificate: true }),
    });
    await server.initialize();
    await server.start();
    try {
      const policies = await probeEndpoints("127.0.0.1", port);
      expect(policies.length).toBeGreaterThan(0);
      expect(policies).toContain("None");
    } finally {
      await server.shutdown(0);
    }
  }, 60_000);

  it("says why when nothing, or something else, answers", async () => {
    const port = await freePort();
    await expect(probeEndpoints("127.0.0.1", port, 3000)).rejects.toThrow(/ECONNREFUSED/);
    const junk = createTcp((s) => s.end("HTTP/1.1 400 Bad Request\r\n\r\n")).listen(0, "127.0.0.1");
    await new Promise((r) => junk.once("listening", r));
    try {
      await expect(probeEndpoints("127.0.0.1", (junk.address() as { port: number }).port, 3000)).rejects.toThrow(/frame of|no Acknowledge|closed/);
    } finally {
      junk.close();
    }
  });
});

const haveOpenssl = spawnSync("sh", ["-c", "command -v openssl"]).status === 0;
if (!haveOpenssl && process.env.CI === "true") throw new Error("openssl is missing (Debian: apt-get install openssl): the https tests need it in CI");

describe.skipIf(!haveOpenssl)("bundles from an https URL", () => {
  let https: Server;
  let port = 0;
  let ca = "";
  let served: { range: string | undefined; bytes: number }[] = [];
  const files = new Map<string, string>();

  beforeAll(async () => {
    const d = join(work, "tls");
    mkdirSync(d);
    const ossl = (args: string[]) => {
      // Without OPENSSL_CONF: a library loaded by the probe tests sets it to "undefined".
      const { OPENSSL_CONF: _, ...env } = process.env;
      const r = spawnSync("openssl", args, { cwd: d, encoding: "utf8", env });
      if (r.status !== 0) throw new Error(`openssl ${args.join(" ")}: ${r.stderr}`);
    };
    ossl(["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", "ca.key", "-out", "ca.pem", "-days", "2", "-subj", "/CN=fieldgate test update CA"]);
    ossl(["req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", "server.key", "-out", "server.csr", "-subj", "/CN=127.0.0.1"]);
    writeFileSync(join(d, "san.ext"), "subjectAltName=IP:127.0.0.1\n");
    ossl(["x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial", "-out", "server.pem", "-days", "2", "-extfile", "san.ext"]);
    ca = join(d, "ca.pem");
    https = createHttps({ key: readFileSync(join(d, "server.key")), cert: readFileSync(join(d, "server.pem")) }, (req, res) => {
      const file = files.get(req.url ?? "");
      if (!file) return void res.writeHead(404).end();
      const size = statSync(file).size;
      const m = /^bytes=(\d+)-(\d+)$/.exec(req.headers.range ?? "");
      const [start, end] = m ? [Number(m[1]), Math.min(Number(m[2]), size - 1)] : [0, size - 1];
      const body = readFileSync(file).subarray(start, end + 1);
      served.push({ range: req.headers.range, bytes: body.length });
      res.writeHead(m ? 206 : 200, { "content-length": body.length, ...(m ? { "content-range": `bytes ${start}-${end}/${size}` } : {}) }).end(body);
    });
    await new Promise<void>((r) => https.listen(0, "127.0.0.1", r));
    port = (https.address() as { port: number }).port;
  });
  afterAll(() => new Promise<void>((r) => https.close(() => r())));

  function context(f: Fixture, lines: string[]): UpdateContext {
    const layout = new Layout(f.root);
    return { layout, store: new UpdateStore(layout.stateDir), reboot: "manual", window: "03:00-05:00", log: (l) => lines.push(l) };
  }

  it("downloads and installs a newer version; reads only the head of one that is not newer; waits for checkInterval", async () => {
    const f = makeFixture("1.0");
    try {
      files.set("/same.fgu", f.bundle({ version: "1.0" }));
      files.set("/new.fgu", f.bundle({ version: "1.1", size: 4 << 20 }));
      const lines: string[] = [];
      const ctx = context(f, lines);
      served = [];
      const before = f.written();
      expect(await checkUrl(ctx, { url: `https://127.0.0.1:${port}/same.fgu`, fetch: { ca }, checkInterval: 3600_000 })).toBeUndefined();
      expect(served).toHaveLength(1);
      expect(served[0].range).toMatch(/^bytes=0-/);
      expect(served[0].bytes).toBeLessThanOrEqual(70_000);
      expect(lines.join("\n")).toMatch(/fieldgate 1\.0, not newer than the running 1\.0/);
      expect(f.written()).toBe(before);
      // Within checkInterval: not even asked.
      expect(await checkUrl(ctx, { url: `https://127.0.0.1:${port}/new.fgu`, fetch: { ca }, checkInterval: 3600_000 })).toBeUndefined();
      expect(served).toHaveLength(1);
      // Due again (an hour later): head, then the whole bundle, then installed into slot B.
      const installed = await checkUrl(ctx, { url: `https://127.0.0.1:${port}/new.fgu`, fetch: { ca }, checkInterval: 3600_000 }, Date.now() + 3601_000);
      expect(installed).toMatchObject({ version: "1.1", slot: "B" });
      expect(served.map((s) => s.range === undefined)).toEqual([false, false, true]);
      expect(readdirSync(join(f.root, "efi/loader/entries")).sort()).toEqual(["fieldgate-a.conf", "fieldgate-b+1.conf"]);
      // The download is gone from the data partition.
      expect(readdirSync(join(f.root, "data/update")).filter((n) => n.startsWith("download"))).toEqual([]);
      expect(new UpdateStore(join(f.root, "data/update")).read().url?.lastVersion).toBe("1.1");
    } finally {
      f.cleanup();
    }
  });

  it("trusts only the configured CA, and http not at all", async () => {
    const f = makeFixture("1.0");
    try {
      files.set("/new2.fgu", f.bundle({ version: "1.1" }));
      const lines: string[] = [];
      const before = f.written();
      expect(await checkUrl(context(f, lines), { url: `https://127.0.0.1:${port}/new2.fgu`, checkInterval: 3600_000 })).toBeUndefined();
      expect(lines.join("\n")).toMatch(/self-signed certificate|unable to (get|verify)|certificate/i);
      const r = fieldgateUpdate(f, [`http://127.0.0.1:${port}/new2.fgu`]);
      expect(r.status).toBe(1);
      expect(r.out).toMatch(/only https URLs are used for updates/);
      expect(f.written()).toBe(before);
    } finally {
      f.cleanup();
    }
  });

  it("fieldgate update https://... --ca FILE installs from the URL", async () => {
    const f = makeFixture("1.0");
    try {
      files.set("/cli.fgu", f.bundle({ version: "1.2" }));
      const r = await fieldgateUpdateAsync(f, [`https://127.0.0.1:${port}/cli.fgu`, "--ca", ca, "--reboot", "manual"]);
      expect(r.out).toMatch(/downloaded https:\/\/127\.0\.0\.1:\d+\/cli\.fgu/);
      expect(r.status, r.out).toBe(0);
      expect(readFileSync(join(f.root, "efi/loader/entries/fieldgate-b+1.conf"), "utf8")).toMatch(/fieldgate 1\.2 \(B\)/);
    } finally {
      f.cleanup();
    }
  });
});
