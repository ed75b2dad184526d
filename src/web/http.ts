// What the status page's handlers share of HTTP: an error that becomes a JSON answer with its
// status, request bodies read up to a bound (413 past it, the rest drained so the answer
// arrives), and the answers themselves.
import type { IncomingMessage, ServerResponse } from "node:http";

/** Thrown by handlers: becomes a JSON error with this HTTP status (and `extra` beside the message). */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly extra?: Readonly<Record<string, unknown>>,
  ) {
    super(message);
  }
}

/** The body as UTF-8 text; HttpError 413 past `max` bytes. */
export function readBody(req: IncomingMessage, max: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const declared = Number(req.headers["content-length"]);
    if (declared > max) {
      req.resume();
      reject(new HttpError(413, `request too large: at most ${max} bytes`));
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (c: Buffer): void => {
      size += c.length;
      if (size > max) {
        // Answered at once; the rest is read and dropped, so that the answer reaches the client.
        req.off("data", onData);
        req.resume();
        reject(new HttpError(413, `request too large: at most ${max} bytes`));
        return;
      }
      chunks.push(c);
    };
    req.on("data", onData);
    req.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
    req.on("error", reject);
  });
}

/** The body as JSON (an object); HttpError 400 otherwise. */
export async function readJson(req: IncomingMessage, max: number, expected: string): Promise<Record<string, unknown>> {
  const text = await readBody(req, max);
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    throw new HttpError(400, `expected JSON ${expected}`);
  }
  if (typeof body !== "object" || body === null || Array.isArray(body)) throw new HttpError(400, `expected JSON ${expected}`);
  return body as Record<string, unknown>;
}

export function send(res: ServerResponse, status: number, type: string, body: string | Buffer, headers: Readonly<Record<string, string>> = {}): void {
  res.writeHead(status, { "content-type": type, "cache-control": "no-store", ...headers });
  res.end(body);
}

export function json(res: ServerResponse, status: number, value: unknown): void {
  send(res, status, "application/json; charset=utf-8", JSON.stringify(value));
}

export function headerValue(h: string | string[] | undefined): string | undefined {
  return Array.isArray(h) ? h[0] : h;
}
