// Entry of the `echo` target: the canned responder in its own process, printing a listening
// line like the gateway's. `node dist/bench/targets/echo-server.js [--port N]`.
import { parseArgs } from "node:util";
import { startCannedResponder } from "./canned-responder.js";

const { values } = parseArgs({ options: { port: { type: "string", default: "0" }, host: { type: "string", default: "127.0.0.1" } } });
const responder = await startCannedResponder({ host: values.host, port: Number(values.port) });
console.log(`echo: listening on opc.tcp://${responder.host}:${responder.port}`);

const stop = (): void => {
  void responder.close().then(() => process.exit(0));
};
process.once("SIGTERM", stop);
process.once("SIGINT", stop);
