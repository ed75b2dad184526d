// `fieldgate settings ...` and `fieldgate network ...`, which every boot runs before the network
// and the gateway start (systemd/fieldgate-settings): an entry of their own that src/cli.ts
// loads instead of src/main.ts, so that they load the config and settings modules, not the
// gateway's (its server, devices, history), whose loading a small board or an emulated one
// would add to every boot. Like main.ts, it is where the drivers are chosen (a device map on the
// FAT drive is checked against them).
import { builtinDrivers } from "../drivers/builtin.js";
import { releaseSignals } from "./signals.js";
import { networkCommand, settingsCommand } from "./settings/cli.js";

// A tool ends on SIGTERM as usual (the import's journal is for that); only the gateway keeps them.
releaseSignals();
const [command, ...rest] = process.argv.slice(2);
(command === "settings" ? settingsCommand(rest, builtinDrivers) : networkCommand(rest)).then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    console.error(`fieldgate ${command}:`, err instanceof Error ? err.message : err);
    process.exitCode = 1;
  },
);
