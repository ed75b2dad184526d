// Shared bits of the subscription tests: polling for a condition (bounded, never a timing
// assertion) and a node-opcua client on loopback.
import { MessageSecurityMode, OPCUAClient, SecurityPolicy } from "node-opcua-client";

/** Resolves once `check()` is true; rejects after `timeoutMs` (a bound against hangs, not a timing claim). */
export async function waitFor(check: () => boolean, what: string, timeoutMs = 10_000): Promise<void> {
  const start = Date.now();
  while (!check()) {
    if (Date.now() - start > timeoutMs) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

export function newClient(name = "fieldgate-subscriptions"): OPCUAClient {
  return OPCUAClient.create({
    applicationName: name,
    endpointMustExist: false,
    securityMode: MessageSecurityMode.None,
    securityPolicy: SecurityPolicy.None,
    connectionStrategy: { maxRetry: 0, initialDelay: 100, maxDelay: 200 },
    requestedSessionTimeout: 60_000,
  });
}
