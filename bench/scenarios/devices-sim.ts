// The simulated plant of the `devices` scenario, in a process of its own (so that the slaves'
// CPU is not counted as the gateway's): N built-in simulators (drivers/simulator, modbus-serial's
// ServerTCP) on 127.0.0.1, one port each, like N PLCs with an address each.
//   node dist/bench/scenarios/devices-sim.js N
// prints {"ports":[...]} once all listen, and exits when its stdin closes.
import { fileURLToPath } from "node:url";
import { resolve } from "node:path";
import { startSimulator, type Simulator } from "../../drivers/simulator/index.js";

export async function startPlant(count: number): Promise<Simulator[]> {
  const sims: Simulator[] = [];
  for (let i = 0; i < count; i++) sims.push(await startSimulator({ size: 1000 }));
  return sims;
}

async function main(): Promise<void> {
  const count = Number(process.argv[2] ?? "100");
  const sims = await startPlant(count);
  process.stdout.write(`${JSON.stringify({ ports: sims.map((s) => s.port) })}\n`);
  process.stdin.resume();
  process.stdin.on("end", () => {
    void Promise.all(sims.map((s) => s.close())).then(() => process.exit(0));
  });
}

// Only as a program: the scenario registry imports every module of this folder.
if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === resolve(process.argv[1])) {
  void main();
}
