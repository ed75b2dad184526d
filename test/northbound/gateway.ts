// A gateway with a northbound for the tests: a FieldgateServer from a YAML config in a temp
// folder (the loader `fieldgate run` uses), its device map beside it.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadGatewayConfig } from "../../src/config/load.js";
import { FieldgateServer } from "../../src/server/server.js";

export interface NorthboundGateway {
  readonly server: FieldgateServer;
  readonly dir: string;
  readonly logs: string[];
  stop(): Promise<void>;
}

/** The northbound section for a broker, with fast retries; `extra` lines go under `sparkplug:`. */
export function sparkplugYaml(broker: string, edgeNodeId: string, extra: string[] = []): string {
  return [
    "northbound:",
    "  sparkplug:",
    `    broker: ${broker}`,
    "    groupId: plant1",
    `    edgeNodeId: ${edgeNodeId}`,
    "    retryBackoff: 100ms",
    "    maxBackoff: 500ms",
    "    keepAlive: 5s",
    ...extra.map((l) => `    ${l}`),
    "",
  ].join("\n");
}

export function writeGatewayFiles(dir: string, devicesYaml: string, northboundYaml: string): string {
  writeFileSync(join(dir, "devices.yaml"), devicesYaml);
  const file = join(dir, "gateway.yaml");
  writeFileSync(file, `server:\n  host: 127.0.0.1\n  port: 0\ndataDir: ./data\ndevices: ./devices.yaml\n${northboundYaml}`);
  return file;
}

export async function startNorthboundGateway(devicesYaml: string, northboundYaml: string, dir?: string): Promise<NorthboundGateway> {
  const own = dir === undefined;
  const d = dir ?? mkdtempSync(join(tmpdir(), "fieldgate-nb-"));
  const file = writeGatewayFiles(d, devicesYaml, northboundYaml);
  const logs: string[] = [];
  const server = new FieldgateServer(loadGatewayConfig(file), { info: (m) => logs.push(m), warn: (m) => logs.push(m) });
  await server.start();
  return {
    server,
    dir: d,
    logs,
    async stop() {
      await server.stop();
      if (own) rmSync(d, { recursive: true, force: true });
    },
  };
}
