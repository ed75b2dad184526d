// Scenario `web`: what the status page costs the gateway. Pipelined Reads (10 x 100 by default)
// against fieldgate with a device map of --tags simulator tags polled every second, in four
// cases in the same run, rounds alternating: the page off (web.enabled false), on with no page
// open, and --pages N pages open (default 1 and 10) and updating every second on a device of
// 1000 tags (every row's source time moves at each poll, so every update carries every row).
// Figures: the Read rate, server CPU per Read, RSS idle and at the window's end; and from the
// gateway's /metrics, the time its update rounds took, the longest synchronous slice of one,
// and the bytes sent to the pages.
import { parseArgs } from "node:util";
import { readFileSync, writeFileSync } from "node:fs";
import { request } from "node:https";
import { parseDocument } from "yaml";
import { DEFAULT_READ_NODE } from "../client/nodes.js";
import { runWindowCase } from "../harness/case.js";
import type { CaseResult } from "../harness/report.js";
import { COMMON_OPTIONS, COMMON_USAGE, commonFrom, positive, type CommonOptions, type Scenario } from "../harness/scenario.js";
import type { RunningServer } from "../harness/target.js";
import { defaultFieldgateConfig } from "../targets/fieldgate.js";
import { writeBenchConfig } from "../targets/fieldgate-config.js";
import { hashPassword } from "../../src/sessions/users.js";
import { openPages } from "./web-pages.js";

export interface WebScenarioOptions extends CommonOptions {
  tags: number;
  pages: number[];
  connections: number;
  outstanding: number;
  warmupSeconds: number;
  durationSeconds: number;
}

export const USER = "bench";
export const PASSWORD = "bench-web-page";

const USAGE = `npm run bench -- web [options]
  --tags N            simulator device tags, 1000 per device, polled every second (default 2000)
  --pages LIST        open pages per case, after the "off" and "on, no page" cases (default 1,10)
  --connections N     Read connections (default 10)
  --outstanding N     Reads in flight per connection (default 100)
  --warmup S          seconds before the window (default 3: the pages open and fill in it)
  --duration S        seconds of the measurement window (default 10)
${COMMON_USAGE}`;

export function parseWebOptions(argv: readonly string[]): WebScenarioOptions | null {
  const { values } = parseArgs({
    args: [...argv],
    strict: true,
    allowPositionals: false,
    options: {
      ...COMMON_OPTIONS,
      tags: { type: "string" },
      pages: { type: "string" },
      connections: { type: "string" },
      outstanding: { type: "string" },
      warmup: { type: "string" },
      duration: { type: "string" },
    },
  });
  if (values.help) return null;
  const pages = (values.pages ?? "1,10").split(",").map((p) => positive("pages", p.trim(), 1));
  return {
    ...commonFrom(values),
    tags: positive("tags", values.tags, 2000),
    pages,
    connections: positive("connections", values.connections, 10),
    outstanding: positive("outstanding", values.outstanding, 100),
    warmupSeconds: positive("warmup", values.warmup, 3, false),
    durationSeconds: positive("duration", values.duration, 10, false),
  };
}

/** gateway.yaml of a case: the bench's config with `tags` device tags, the web section (room for `pages` pages) and a user. */
export async function pageConfig(root: string, tags: number, pages: number, web: boolean): Promise<string> {
  const base = defaultFieldgateConfig(root);
  if (base === undefined) throw new Error("config/gateway.yaml is missing");
  const path = writeBenchConfig(base, { deviceTags: tags });
  const doc = parseDocument(readFileSync(path, "utf8"));
  doc.setIn(["web", "enabled"], web);
  doc.setIn(["web", "port"], 0);
  doc.setIn(["web", "host"], "127.0.0.1");
  doc.setIn(["web", "maxClients"], Math.max(20, pages) + 2);
  doc.setIn(["users", USER], doc.createNode({ role: "viewer", password: await hashPassword(PASSWORD) }));
  writeFileSync(path, doc.toString());
  return path;
}

export function pageUrl(server: RunningServer): string {
  const m = /status page on (https?:\/\/\S+)/.exec(server.outputTail());
  if (m === null) throw new Error(`no "status page on" line from the gateway:\n${server.outputTail()}`);
  return m[1]!;
}

function scrape(base: string): Promise<Map<string, number>> {
  return new Promise((resolve, reject) => {
    const auth = `Basic ${Buffer.from(`${USER}:${PASSWORD}`).toString("base64")}`;
    const req = request(new URL("/metrics", base), { headers: { authorization: auth }, rejectUnauthorized: false }, (res) => {
      let text = "";
      res.on("data", (d) => (text += String(d)));
      res.on("end", () => {
        const out = new Map<string, number>();
        for (const line of text.split("\n")) {
          const m = /^(fieldgate_web_\w+) (\S+)$/.exec(line);
          if (m) out.set(m[1]!, Number(m[2]));
        }
        resolve(out);
      });
    });
    req.on("error", reject);
    req.end();
  });
}

export const webScenario: Scenario<WebScenarioOptions> = {
  name: "web",
  summary: "Read rate, CPU and RSS with the status page off, on, and open (1 and 10 pages updating)",
  usage: USAGE,
  parse: parseWebOptions,
  smokeArgs: ["--tags", "1000", "--pages", "1", "--connections", "2", "--outstanding", "10", "--duration", "1", "--warmup", "1"],
  async run(ctx, options) {
    const results: CaseResult[] = [];
    const pages = Math.max(...options.pages);
    const configs = { off: await pageConfig(ctx.root, options.tags, pages, false), on: await pageConfig(ctx.root, options.tags, pages, true) };
    const cases: { name: string; web: boolean; pages: number }[] = [
      { name: "page off", web: false, pages: 0 },
      { name: "on, no page", web: true, pages: 0 },
      ...options.pages.map((n) => ({ name: `${n} page${n === 1 ? "" : "s"} open`, web: true, pages: n })),
    ];
    for (const c of cases) {
      for (const target of ctx.targets) {
        results.push(
          await runWindowCase(ctx, target, {
            scenario: "web",
            caseName: c.name,
            load: "read",
            start: { config: c.web ? configs.on : configs.off },
            params: (server) => ({
              host: server.host,
              port: server.port,
              endpointUrl: server.endpointUrl,
              connections: options.connections,
              outstanding: options.outstanding,
              values: 1,
              nodes: [DEFAULT_READ_NODE],
              timestampsToReturn: "both",
              warmupSeconds: options.warmupSeconds,
              durationSeconds: options.durationSeconds,
              serverPid: server.pid,
              serverDiagnostics: server.diagnostics,
            }),
            conditions: { connections: options.connections, outstanding: options.outstanding, values: 1, nodes: [DEFAULT_READ_NODE] },
            warmupSeconds: options.warmupSeconds,
            durationSeconds: options.durationSeconds,
            around: async (server) => {
              if (!c.web) return async () => undefined;
              const base = pageUrl(server);
              const pages = c.pages > 0 ? await openPages(base, c.pages, "plc0", USER, PASSWORD) : undefined;
              const start = await scrape(base);
              const t0 = performance.now();
              return async (notes) => {
                const end = await scrape(base);
                const seconds = (performance.now() - t0) / 1000;
                pages?.close();
                const d = (k: string) => (end.get(k) ?? NaN) - (start.get(k) ?? NaN);
                const updates = d("fieldgate_web_updates_total");
                const busy = d("fieldgate_web_update_seconds_total");
                if (c.pages > 0) {
                  notes.push(
                    `web: ${updates} update rounds in ${seconds.toFixed(1)} s, ${((busy / Math.max(1, updates)) * 1000).toFixed(2)} ms each ` +
                      `(${((busy / seconds) * 100).toFixed(2)} % of the loop), longest slice ${((end.get("fieldgate_web_update_slice_max_seconds") ?? NaN) * 1000).toFixed(2)} ms, ` +
                      `${(d("fieldgate_web_sent_bytes_total") / seconds / 1024).toFixed(1)} KiB/s to ${c.pages} page(s); pages got ${pages!.stats.messages} events, ${pages!.stats.failures} failures`,
                  );
                }
              };
            },
          }),
        );
      }
    }
    return results;
  },
};
