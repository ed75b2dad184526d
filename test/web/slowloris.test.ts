// The status page's port under slowloris: an attacker on 127.0.0.2 holding 200 connections that
// never finish a request (TLS connections sending a header line now and then, and TCP connections
// that never start their TLS handshake), while a real visitor on 127.0.0.1 asks for the page on a
// connection of its own. The visitor is answered while the attack's sockets are still open.
// Then the bounds one at a time: a connection that never completes its first request is closed
// (web.headersTimeout, counted from the accept, the TLS handshake included), more connections
// from one address than web.maxConnectionsPerAddress are closed as they come, and the keys are
// checked by the config's validator.
import net from "node:net";
import tls from "node:tls";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { Slowloris } from "../../bench/client/slowloris.js";
import { formatIssue } from "../../src/config/errors.js";
import { gatewaySchema } from "../../src/config/gateway-config.js";
import { validateYaml } from "../../src/config/load.js";
import { fetchPage, login, startWebGateway, type WebGateway } from "./helpers.js";

const ATTACKER = "127.0.0.2";

/** Waits until `pred` holds, checking every 20 ms (bounded by the test's timeout). */
async function until(pred: () => boolean): Promise<void> {
  while (!pred()) await new Promise((r) => setTimeout(r, 20));
}

function closed(socket: net.Socket): Promise<void> {
  return new Promise((resolve) => (socket.destroyed ? resolve() : socket.once("close", () => resolve())));
}

describe("the status page under slowloris (defaults)", { timeout: 60_000 }, () => {
  let g: WebGateway;
  let attack: Slowloris | undefined;
  beforeAll(async () => {
    g = await startWebGateway();
  }, 30_000);
  afterEach(() => attack?.stop());
  afterAll(() => g?.stop());

  it("answers a page request from 127.0.0.1 while 200 connections from 127.0.0.2 hold requests open", async () => {
    const cookie = await login(g, "viewer");
    attack = new Slowloris({ host: "127.0.0.1", port: g.web.port, tls: true, localAddress: ATTACKER, connections: 200, silent: 50, intervalMs: 500 });
    attack.start();
    // Every one of the 200 has come up or been turned away once: the attack is in place.
    await until(() => attack!.settled >= 200);
    const page = await fetchPage(g, "/", { headers: { cookie }, fresh: true });
    const openAtAnswer = attack.open;
    expect(page.status).toBe(200);
    expect(page.body).toContain('<script src="/app.js" defer></script>');
    // Answered while the attack was still holding connections.
    expect(openAtAnswer).toBeGreaterThan(0);
    expect(g.log.recent().some((l) => l.message.includes(`${ATTACKER}`) && l.message.includes("web.maxConnectionsPerAddress"))).toBe(true);
  });

  it("closes the connections of one address beyond maxConnectionsPerAddress as they come, and serves the others", async () => {
    // Another address than the attack's above, whose connections may not all be gone yet.
    const from = "127.0.0.3";
    const port = g.web.port;
    const held: net.Socket[] = [];
    try {
      for (let i = 0; i < 16; i++) {
        const s = net.connect({ host: "127.0.0.1", port, localAddress: from });
        held.push(s);
        await new Promise((r) => s.once("connect", r));
      }
      const extra = net.connect({ host: "127.0.0.1", port, localAddress: from });
      held.push(extra);
      extra.on("error", () => undefined);
      await closed(extra);
      // Not web.headersTimeout: it would have closed the first 16 before the 17th.
      expect(held.slice(0, 16).every((s) => !s.destroyed)).toBe(true);
      expect((await fetchPage(g, "/login", { fresh: true })).status).toBe(200);
      expect(held.slice(0, 16).every((s) => !s.destroyed)).toBe(true);
    } finally {
      for (const s of held) s.destroy();
    }
  });
});

describe("the page's connection bounds", { timeout: 60_000 }, () => {
  let g: WebGateway;
  const sockets: net.Socket[] = [];
  beforeAll(async () => {
    g = await startWebGateway({ web: "  headersTimeout: 1s\n  requestTimeout: 2s\n" });
  }, 30_000);
  afterEach(() => {
    for (const s of sockets.splice(0)) s.destroy();
  });
  afterAll(() => g?.stop());

  it("closes connections that send no complete request: no TLS handshake, a handshake and nothing, headers never ended", async () => {
    const port = g.web.port;
    const silent = net.connect({ host: "127.0.0.1", port, localAddress: ATTACKER });
    const tlsFrom = (onUp?: () => void) => tls.connect({ socket: net.connect({ host: "127.0.0.1", port, localAddress: ATTACKER }).on("error", () => undefined), rejectUnauthorized: false }, onUp);
    const idle = tlsFrom();
    const slow = tlsFrom(() => slow.write("GET / HTTP/1.1\r\nHost: x\r\n"));
    sockets.push(silent, idle, slow);
    for (const s of sockets) s.on("error", () => undefined);
    const drip = setInterval(() => slow.writable && slow.write("X-Drip: 1\r\n"), 100);
    try {
      await Promise.all(sockets.map(closed));
    } finally {
      clearInterval(drip);
    }
    expect(g.log.recent().some((l) => l.message.includes("web.headersTimeout"))).toBe(true);
    // Meanwhile and after, a real request is answered.
    expect((await fetchPage(g, "/login", { fresh: true })).status).toBe(200);
  });

  it("the keys are checked by the validator, naming file:line:column and the key", () => {
    const issues = (yaml: string) => {
      const r = validateYaml(gatewaySchema, yaml, "gateway.yaml");
      return r.ok ? [] : r.issues.map(formatIssue);
    };
    expect(issues("web:\n  headersTimeout: 20s\n  requestTimeout: 10s\n")).toEqual(["gateway.yaml:2:19: web.headersTimeout: expected at most requestTimeout (10s), got 20s"]);
    expect(issues("web:\n  maxConnectionsPerAddress: 0\n")).toEqual(["gateway.yaml:2:29: web.maxConnectionsPerAddress: expected an integer between 1 and 10000, got 0"]);
    const good = validateYaml(gatewaySchema, "web:\n  enabled: true\n", "gateway.yaml");
    expect(good.ok && good.value.web).toMatchObject({ headersTimeout: 10_000, requestTimeout: 15_000, maxConnectionsPerAddress: 16 });
  });
});
