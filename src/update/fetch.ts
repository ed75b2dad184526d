// Bundles from an https URL (update.url, or `fieldgate update https://...`): the first 64 KiB are
// asked for first (a Range request), enough for the signed manifest, so that a gateway that
// already runs that version downloads nothing more; a newer one is downloaded to the data
// partition and verified there like any other file. https only, with the system's CAs or those
// of update.ca; at most 5 redirects, each to https.
import { createWriteStream, readFileSync, renameSync, rmSync, statfsSync } from "node:fs";
import { request, type RequestOptions } from "node:https";
import type { IncomingMessage } from "node:http";
import { pipeline } from "node:stream/promises";
import { HEADER_SIZE, MAX_MANIFEST, UpdateRefused, parseHead, type BundleHead } from "./bundle-format.js";

/** Enough for the header, the largest manifest and the signature. */
const HEAD_BYTES = HEADER_SIZE + MAX_MANIFEST + 64;

export interface FetchOptions {
  /** PEM file of the CAs to trust instead of the system's. */
  readonly ca?: string;
  readonly timeoutMs?: number;
}

function get(url: string, opts: FetchOptions, headers: Record<string, string>, redirects = 0): Promise<IncomingMessage> {
  const u = new URL(url);
  if (u.protocol !== "https:") return Promise.reject(new UpdateRefused("source", `${url}: only https URLs are used for updates`));
  const options: RequestOptions = { method: "GET", headers, timeout: opts.timeoutMs ?? 60_000, ...(opts.ca ? { ca: readFileSync(opts.ca) } : {}) };
  return new Promise((resolve, reject) => {
    const req = request(u, options, (res) => {
      const status = res.statusCode ?? 0;
      if (status >= 300 && status < 400 && res.headers.location) {
        res.resume();
        if (redirects >= 5) return reject(new UpdateRefused("source", `${url}: more than 5 redirects`));
        resolve(get(new URL(res.headers.location, u).toString(), opts, headers, redirects + 1));
        return;
      }
      if (status !== 200 && status !== 206) {
        res.resume();
        reject(new UpdateRefused("source", `${url}: the server answered ${status} ${res.statusMessage ?? ""}`.trim()));
        return;
      }
      resolve(res);
    });
    req.on("timeout", () => req.destroy(new Error(`${url}: no answer within ${(opts.timeoutMs ?? 60_000) / 1000} s`)));
    req.on("error", (e) => reject(new UpdateRefused("source", `${url}: ${e.message}`)));
    req.end();
  });
}

/** The head of the bundle at `url` (unverified) and the bundle's size, from one small Range request. */
export async function fetchHead(url: string, opts: FetchOptions = {}): Promise<{ head: BundleHead; size: number | undefined }> {
  const res = await get(url, opts, { range: `bytes=0-${HEAD_BYTES - 1}` });
  const chunks: Buffer[] = [];
  let n = 0;
  for await (const c of res) {
    chunks.push(c as Buffer);
    n += (c as Buffer).length;
    if (n >= HEAD_BYTES) break;
  }
  res.destroy();
  const bytes = Buffer.concat(chunks);
  // 206: Content-Range: bytes 0-65535/SIZE; 200 (no range support): Content-Length is the size.
  const range = /\/(\d+)$/.exec(String(res.headers["content-range"] ?? ""));
  const size = res.statusCode === 206 ? (range ? Number(range[1]) : undefined) : Number(res.headers["content-length"] ?? NaN);
  return { head: parseHead(bytes, url), size: Number.isFinite(size) ? size : undefined };
}

/** Downloads the whole bundle to `dest` (through dest.part), refusing when the data partition has no room for it. */
export async function download(url: string, dest: string, size: number, opts: FetchOptions = {}, log: (line: string) => void = () => {}): Promise<void> {
  const fs = statfsSync(dest.slice(0, dest.lastIndexOf("/")) || "/");
  const free = fs.bavail * fs.bsize;
  // Room for the bundle and 64 MiB to spare for the history.
  if (size + (64 << 20) > free) {
    throw new UpdateRefused("size", `${url}: the bundle (${(size / 1048576).toFixed(0)} MiB) does not fit on the data partition (${(free / 1048576).toFixed(0)} MiB free, 64 MiB kept for history)`);
  }
  const part = `${dest}.part`;
  const t0 = Date.now();
  try {
    const res = await get(url, opts, {});
    await pipeline(res, createWriteStream(part, { mode: 0o600 }));
    renameSync(part, dest);
  } catch (err) {
    rmSync(part, { force: true });
    throw err;
  }
  log(`downloaded ${url} (${(size / 1048576).toFixed(1)} MiB) in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
}
