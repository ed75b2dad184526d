// The gateway's built-in drivers, and the device map schema they make: what tests validate maps with.
import { builtinDrivers } from "../../drivers/builtin.js";
import { deviceMapSchema } from "../../src/config/device-map.js";

export const DRIVERS = builtinDrivers();
export const mapSchema = deviceMapSchema(DRIVERS);
