// Open status pages for the web scenario: each logs in as a page does (POST /login, GET
// /api/me) and keeps /api/events open on one device, reading every update as the browser's
// EventSource would. The gateway cannot tell them from a browser: the same requests, the same
// stream. They run in the harness process, which otherwise sleeps through the window.
import { request, type RequestOptions } from "node:https";
import { request as httpRequest, type IncomingMessage } from "node:http";

export interface PageStats {
  /** Update messages received (`data:` events, tag events included). */
  messages: number;
  bytes: number;
  /** Pages whose stream ended or failed before they were closed. */
  failures: number;
}

export interface OpenPages {
  readonly stats: PageStats;
  close(): void;
}

export function send(url: URL, options: RequestOptions, body?: string): Promise<IncomingMessage> {
  const tls = url.protocol === "https:";
  return new Promise((resolve, reject) => {
    // The gateway's self-signed certificate: the bench measures, it does not check who answers.
    const req = (tls ? request : httpRequest)(url, { ...options, ...(tls ? { rejectUnauthorized: false } : {}) }, resolve);
    req.on("error", reject);
    req.end(body);
  });
}

export async function drain(res: IncomingMessage): Promise<string> {
  let text = "";
  for await (const chunk of res) text += String(chunk);
  return text;
}

/** Logs in through the form as a page does; returns the Cookie header value. */
export async function loginCookie(base: string, user: string, password: string): Promise<string> {
  const login = await send(new URL("/login", base), { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" } }, new URLSearchParams({ user, password }).toString());
  await drain(login);
  const cookie = login.headers["set-cookie"]?.[0]?.split(";")[0];
  if (login.statusCode !== 303 || cookie === undefined) throw new Error(`login refused (${login.statusCode})`);
  return cookie;
}

/** Opens `count` pages on `base` (https://host:port/) watching `device`, logged in as user/password. */
export async function openPages(base: string, count: number, device: string, user: string, password: string): Promise<OpenPages> {
  const stats: PageStats = { messages: 0, bytes: 0, failures: 0 };
  const open: IncomingMessage[] = [];
  let closing = false;
  for (let i = 0; i < count; i++) {
    const cookie = await loginCookie(base, user, password).catch((err: Error) => {
      throw new Error(`page ${i}: ${err.message}`);
    });
    const me = await send(new URL("/api/me", base), { headers: { cookie } });
    await drain(me);
    const events = await send(new URL(`/api/events?device=${encodeURIComponent(device)}`, base), { headers: { cookie, accept: "text/event-stream" } });
    if (events.statusCode !== 200) throw new Error(`page ${i}: /api/events answered ${events.statusCode}`);
    events.setEncoding("utf8");
    // An event ends with a blank line; one may straddle two chunks.
    let carry = "";
    events.on("data", (chunk: string) => {
      stats.bytes += chunk.length;
      const text = carry + chunk;
      for (let at = text.indexOf("\n\n"); at >= 0; at = text.indexOf("\n\n", at + 2)) stats.messages++;
      carry = text.endsWith("\n") && !text.endsWith("\n\n") ? "\n" : "";
    });
    const failed = (): void => {
      if (!closing) stats.failures++;
    };
    events.on("end", failed);
    events.on("error", failed);
    open.push(events);
  }
  return {
    stats,
    close() {
      closing = true;
      for (const res of open) res.destroy();
    },
  };
}
