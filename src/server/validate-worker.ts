// The worker thread of the device map's validation off the event loop (config/validate-off-loop.ts),
// validating with the gateway's drivers: the composition root's choice, as on the main thread.
import { builtinDrivers } from "../../drivers/builtin.js";
import { serveDeviceMapValidation } from "../config/validate-worker.js";

serveDeviceMapValidation(builtinDrivers());
