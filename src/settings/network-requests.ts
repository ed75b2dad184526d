// How the gateway, which runs unprivileged (systemd/fieldgate.service: user fieldgate, only
// /var/lib/fieldgate writable), asks for a network change that only root can make: it leaves a
// request in its own data folder, a path unit of root's (fieldgate-network-request.path) starts
// `fieldgate network serve`, which acts on it with network-trial.ts and leaves the answer beside
// it. The same way as the update inbox: no daemon, no socket, no privilege in the gateway.
//
//   <dir>/request.json    {id, action: try|confirm|revert, by, text?, timeoutSeconds?}
//                         written by the gateway by rename, so the unit never sees half of one
//   <dir>/response.json   {id, ok, issues?, pending?, message?}, written by root, readable by the gateway
//
// One request at a time: a second one while the first waits is refused to its asker.
import { randomUUID } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync } from "node:fs";
import { join } from "node:path";
import type { ConfigIssue } from "../config/errors.js";
import { replaceFile } from "./atomic-file.js";
import { DEFAULT_TRIAL_SECONDS, type NetworkTrial, type PendingTrial } from "./network-trial.js";

export interface NetworkRequest {
  readonly id: string;
  readonly action: "try" | "confirm" | "revert";
  /** Who asks (the page's user), for the log and the status. */
  readonly by: string;
  /** try: network.yaml's text. */
  readonly text?: string;
  readonly timeoutSeconds?: number;
}

export interface NetworkResponse {
  readonly id: string;
  readonly ok: boolean;
  readonly issues?: readonly ConfigIssue[];
  readonly pending?: PendingTrial;
  readonly message?: string;
}

export const REQUEST_DIR = "/var/lib/fieldgate/network-request";
const requestFile = (dir: string): string => join(dir, "request.json");
const responseFile = (dir: string): string => join(dir, "response.json");

/** The gateway's side: leaves a request; its id tells the answer to it from an older one. */
export function submitNetworkRequest(dir: string, req: Omit<NetworkRequest, "id">): { ok: true; id: string } | { ok: false; message: string } {
  if (existsSync(requestFile(dir))) return { ok: false, message: "another network request is waiting to be carried out" };
  mkdirSync(dir, { recursive: true, mode: 0o750 });
  const id = randomUUID();
  replaceFile(requestFile(dir), JSON.stringify({ ...req, id }), { mode: 0o640 });
  return { ok: true, id };
}

/** The gateway's side: the answer to request `id`, once there is one. */
export function networkResponse(dir: string, id: string): NetworkResponse | undefined {
  try {
    const r = JSON.parse(readFileSync(responseFile(dir), "utf8")) as NetworkResponse;
    return r.id === id ? r : undefined;
  } catch {
    return undefined;
  }
}

/** Root's side (`fieldgate network serve`): carries out the waiting request, if any. */
export function serveNetworkRequest(dir: string, trial: NetworkTrial): NetworkResponse | undefined {
  const taken = join(dir, "request.taking.json");
  try {
    renameSync(requestFile(dir), taken);
  } catch {
    return undefined;
  }
  let req: NetworkRequest;
  try {
    req = JSON.parse(readFileSync(taken, "utf8")) as NetworkRequest;
  } catch {
    return undefined;
  } finally {
    rmSync(taken, { force: true });
  }
  const answer = act(req, trial);
  replaceFile(responseFile(dir), JSON.stringify(answer), { mode: 0o644 });
  return answer;
}

function act(req: NetworkRequest, trial: NetworkTrial): NetworkResponse {
  const by = String(req.by ?? "the page");
  try {
    switch (req.action) {
      case "try": {
        const seconds = req.timeoutSeconds ?? DEFAULT_TRIAL_SECONDS;
        if (typeof req.text !== "string" || !Number.isInteger(seconds) || seconds < 10 || seconds > 3600) {
          return { id: req.id, ok: false, message: "a try needs network.yaml's text and a time-out of 10 to 3600 seconds" };
        }
        const r = trial.start(req.text, "network.yaml", seconds, by);
        return r.ok ? { id: req.id, ok: true, pending: r.pending } : { id: req.id, ok: false, issues: r.issues };
      }
      case "confirm":
      case "revert": {
        const r = req.action === "confirm" ? trial.confirm(by) : trial.revert(`reverted by ${by}`);
        return r.ok ? { id: req.id, ok: true } : { id: req.id, ok: false, message: r.message };
      }
      default:
        return { id: req.id, ok: false, message: `unknown action ${JSON.stringify(req.action)}` };
    }
  } catch (err) {
    return { id: req.id, ok: false, message: err instanceof Error ? err.message : String(err) };
  }
}
