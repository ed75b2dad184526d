// The drivers this gateway is built with, under the names the device map's `driver:` key takes
// (and the bench namespace's in-process driver, which the map cannot name).
import { BENCH_DRIVER, benchDriver } from "./bench/index.js";
import { MBUS_COMMAND, mbusDriver } from "./mbus/definition.js";
import { modbusDrivers } from "./modbus/definition.js";
import { simulatorDriver } from "./simulator/definition.js";
import { DriverRegistry } from "../src/devices/registry.js";

export function builtinDrivers(): DriverRegistry {
  const registry = new DriverRegistry();
  for (const [name, definition] of Object.entries(modbusDrivers())) registry.register(name, definition);
  registry.register("simulator", simulatorDriver());
  registry.register("mbus", mbusDriver());
  registry.command(MBUS_COMMAND);
  registry.register(BENCH_DRIVER, benchDriver());
  return registry;
}
