// Peers nobody here wrote (pymodbus, socat, systemd's tools) are installed by .ci/run, and the
// build in dist/ is made by `npm test` (built.ts names what of it a suite needs). In CI (CI=true,
// which .ci/run sets) a suite whose peer or build is missing fails instead of skipping: a green
// run must mean those tests ran. Elsewhere such a suite skips and says what is missing.

export const IN_CI = /^(1|true|yes)$/i.test(process.env.CI ?? "");

/** For describe.skipIf / it.skipIf: true (skip) when something is missing, except in CI. */
export function skipWithout(missing: string): boolean {
  return missing !== "" && !IN_CI;
}

/** First thing in the suite (or test) that needs the peers or the build: in CI, with one missing, this is the failure. */
export function requirePeers(missing: string): void {
  if (missing !== "") throw new Error(`CI=true and what a test needs is missing: ${missing}`);
}
