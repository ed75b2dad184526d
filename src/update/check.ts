// `fieldgate update check`, run by fieldgate-update.service when a bundle lands in the inbox
// (fieldgate-update.path) and now and then (fieldgate-update.timer): installs the inbox's
// bundles, then looks at update.url when checkInterval has passed since the last look.
import { readdirSync, renameSync, rmSync, statSync } from "node:fs";
import { join } from "node:path";
import { UpdateRefused, bundleSize } from "./bundle-format.js";
import { download, fetchHead, type FetchOptions } from "./fetch.js";
import { installBundle, startNewVersion, type UpdateContext } from "./flow.js";
import type { Installed } from "./install.js";
import { checkHead, debianArch } from "./verify.js";
import { compareVersions, runningVersion } from "./version.js";
import { entryOf, espRoomFor } from "./boot-entries.js";
import { otherSlot } from "./layout.js";

export interface CheckOptions {
  readonly url?: string;
  readonly fetch?: FetchOptions;
  readonly checkInterval: number;
  /** How long a file must keep its size before it counts as completely copied. */
  readonly settleMs?: number;
  readonly sleep?: (ms: number) => Promise<void>;
}

const sleeper = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Waits until the file's size and time stop changing (a copy in progress), at most 10 minutes. */
async function settled(file: string, settleMs: number, sleep: (ms: number) => Promise<void>): Promise<boolean> {
  let before = statSync(file);
  for (let waited = 0; waited < 600_000; waited += settleMs) {
    await sleep(settleMs);
    const now = statSync(file);
    if (now.size === before.size && now.mtimeMs === before.mtimeMs) return true;
    before = now;
  }
  return false;
}

/** Installs every *.fgu of the inbox in name order; installed files go, refused ones are renamed *.fgu.refused. */
export async function processInbox(ctx: UpdateContext, opts: CheckOptions): Promise<Installed | undefined> {
  let names: string[];
  try {
    names = readdirSync(ctx.layout.inbox).filter((n) => n.endsWith(".fgu")).sort();
  } catch {
    return undefined;
  }
  let last: Installed | undefined;
  for (const name of names) {
    const file = join(ctx.layout.inbox, name);
    if (!(await settled(file, opts.settleMs ?? 5000, opts.sleep ?? sleeper))) {
      ctx.log(`inbox: ${name} is still growing after 10 minutes; left for the next check`);
      continue;
    }
    const outcome = await installBundle(ctx, file, `the inbox (${name})`).catch((err: unknown) => {
      // Not a refusal (an I/O error): moved aside too, or the path unit would start over at once.
      renameSync(file, `${file}.failed`);
      throw err;
    });
    if (outcome.ok) {
      rmSync(file, { force: true });
      last = outcome.installed;
    } else {
      renameSync(file, `${file}.refused`);
      ctx.log(`inbox: ${name} renamed ${name}.refused`);
    }
  }
  return last;
}

/** Looks at the URL when due: downloads and installs a bundle newer than the running (and the pending) version. */
export async function checkUrl(ctx: UpdateContext, opts: CheckOptions, now = Date.now()): Promise<Installed | undefined> {
  const url = opts.url;
  if (url === undefined) return undefined;
  const state = ctx.store.read();
  const lastCheck = state.url ? Date.parse(state.url.lastCheck) : NaN;
  if (Number.isFinite(lastCheck) && now - lastCheck < opts.checkInterval && now >= lastCheck) return undefined;
  ctx.store.update((s) => ({ ...s, url: { ...s.url, lastCheck: new Date(now).toISOString() } }));
  const running = runningVersion(ctx.layout.osRelease).version;
  let head;
  try {
    head = await fetchHead(url, opts.fetch);
  } catch (err) {
    ctx.log(`${url}: ${err instanceof Error ? err.message : String(err)}; trying again in ${opts.checkInterval / 60000} min`);
    return undefined;
  }
  // The version is read from the signed manifest only: an unsigned claim downloads nothing.
  const target = otherSlot(ctx.layout.bootedSlot() ?? "B");
  let manifest;
  try {
    manifest = checkHead(url, head.head, undefined, {
      keysDir: ctx.layout.keysDir,
      running,
      arch: debianArch(),
      slotSize: ctx.layout.slotDevice(target).size,
      espRoom: espRoomFor(ctx.layout.esp, target),
      // Older and equal versions are the usual answer here, not a refusal to record.
      force: true,
    }).manifest;
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    ctx.log(`refused: ${message}`);
    ctx.store.record("refused", message);
    return undefined;
  }
  if (compareVersions(manifest.version, running) <= 0) {
    ctx.log(`${url}: fieldgate ${manifest.version}, not newer than the running ${running}`);
    return undefined;
  }
  const pending = state.pending;
  if (pending && compareVersions(manifest.version, pending.version) <= 0) {
    ctx.log(`${url}: ${manifest.version} is not newer than ${pending.version}, installed and waiting for its trial boot`);
    return undefined;
  }
  const size = bundleSize(manifest, head.head.payloadStart);
  if (head.size !== undefined && head.size !== size) {
    ctx.log(`refused: ${url} is ${head.size} bytes; its manifest describes ${size}`);
    ctx.store.record("refused", `${url} is ${head.size} bytes; its manifest describes ${size}`);
    return undefined;
  }
  ctx.log(`${url}: fieldgate ${manifest.version} is newer than the running ${running}; downloading ${(size / 1048576).toFixed(1)} MiB`);
  const file = join(ctx.layout.stateDir, "download.fgu");
  try {
    await download(url, file, size, opts.fetch, ctx.log);
    const outcome = await installBundle(ctx, file, url);
    ctx.store.update((s) => ({ ...s, url: { lastCheck: new Date(now).toISOString(), lastVersion: manifest.version } }));
    return outcome.ok ? outcome.installed : undefined;
  } catch (err) {
    if (err instanceof UpdateRefused) {
      ctx.log(`refused: ${err.message}`);
      ctx.store.record("refused", err.message);
      return undefined;
    }
    throw err;
  } finally {
    rmSync(file, { force: true });
  }
}

/** The whole check: inbox, then URL; one reboot (as the policy says) for whatever was installed. */
export async function check(ctx: UpdateContext, opts: CheckOptions): Promise<Installed | undefined> {
  const slot = ctx.layout.bootedSlot();
  if (slot === undefined) {
    ctx.log("not booted from a fieldgate A/B slot: nothing to check");
    return undefined;
  }
  const entry = entryOf(ctx.layout.esp, slot);
  if (entry?.triesLeft !== undefined) {
    ctx.log(`the running version is on its trial boot (${entry.file}); the inbox and the URL wait until it is confirmed`);
    return undefined;
  }
  let installed = await processInbox(ctx, opts);
  installed = (await checkUrl(ctx, opts)) ?? installed;
  if (installed) startNewVersion(ctx, installed);
  return installed;
}
