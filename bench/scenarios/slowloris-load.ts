// The attacker of the slowloris scenario (slowloris.ts), run in the load process: bench/client/
// slowloris.ts for the attack's duration, then every socket destroyed at once.
import { Slowloris, type SlowlorisOptions } from "../client/slowloris.js";

export interface SlowlorisAttackParams extends SlowlorisOptions {
  durationSeconds: number;
}

export interface SlowlorisAttackResult {
  opened: number;
  up: number;
  failed: number;
  closedByServer: number;
  /** Fewest and most sockets up at once, sampled every 100 ms after the first second. */
  openMin: number;
  openMax: number;
  openAtEnd: number;
}

export async function runSlowlorisAttack(p: SlowlorisAttackParams): Promise<SlowlorisAttackResult> {
  const attack = new Slowloris(p);
  let openMin = Infinity;
  let openMax = 0;
  attack.start();
  const started = performance.now();
  const sampler = setInterval(() => {
    if (performance.now() - started < 1000) return;
    openMin = Math.min(openMin, attack.open);
    openMax = Math.max(openMax, attack.open);
  }, 100);
  await new Promise((r) => setTimeout(r, p.durationSeconds * 1000));
  clearInterval(sampler);
  const result = { opened: attack.opened, up: attack.up, failed: attack.failed, closedByServer: attack.closedByServer, openMin, openMax, openAtEnd: attack.open };
  attack.stop();
  return result;
}
