// Shared bits of the hostile tests: a healthy session that must keep being served, the leak
// check on response bytes, and RSS sampling of this process (the server runs in it).
import { expect } from "vitest";
import { BinaryWriter } from "../../src/ua/binary-writer.js";
import { encodeNodeId } from "../../src/ua/builtin-codec.js";
import { BinaryReader } from "../../src/ua/binary-reader.js";
import { decodeNodeId } from "../../src/ua/builtin-codec.js";
import type { NodeId } from "../../src/ua/builtins.js";
import { VariableIds } from "../../src/ua/generated/node-ids.js";
import { StatusCodes } from "../../src/ua/generated/status-codes.js";
import type { ReadResponse } from "../../src/ua/generated/types.js";
import { readValueId, ServiceClient } from "../server/service-client.js";

/**
 * Things a response must never carry: stack frames, file paths, names of JS exceptions (an
 * internal failure shown to the client). StatusCode names in ERR reasons are fine.
 */
const LEAK = /(\n\s+at |\bat [\w.<>$]+ \(|\/work\/|\/home\/|\/tmp\/|\/usr\/|node_modules|file:\/\/|\.[cm]?[tj]s:\d+|\b(Type|Range|Reference|Syntax)Error\b)/;

/** The first leak found in a response's bytes (as latin1 and as UTF-16: strings of both kinds), or undefined. */
export function leakIn(bytes: Buffer): string | undefined {
  const m = LEAK.exec(bytes.toString("latin1"));
  return m ? `${m[0]} in ${bytes.toString("latin1").replace(/[^\x20-\x7e]/g, ".").slice(Math.max(0, m.index - 40), m.index + 80)}` : undefined;
}

/** A session that reads ServerStatus.State; `check()` proves the server still serves it. */
export class Healthy {
  private constructor(readonly client: ServiceClient) {}

  static async open(port: number): Promise<Healthy> {
    const c = await ServiceClient.open(port);
    await c.createSession();
    await c.activate();
    return new Healthy(c);
  }

  async check(): Promise<void> {
    const r = (await this.client.read([readValueId(VariableIds.Server_ServerStatus_State)])) as ReadResponse;
    expect(r.responseHeader.serviceResult).toBe(StatusCodes.Good);
    expect(r.results?.[0].statusCode ?? StatusCodes.Good).toBe(StatusCodes.Good);
  }

  close(): void {
    this.client.close();
  }
}

export function rssMiB(): number {
  return process.memoryUsage().rss / (1 << 20);
}

/** Settles the heap so that an RSS figure after an attack says what the attack kept. */
export async function settle(): Promise<void> {
  await new Promise((r) => setTimeout(r, 50));
  const gc = (globalThis as { gc?: () => void }).gc;
  if (gc) gc();
}

/** Replaces the authenticationToken of a captured request body (type id, then RequestHeader). */
export function withToken(body: Buffer, token: NodeId): { body: Buffer; headerEnd: number } {
  const r = new BinaryReader(body);
  decodeNodeId(r);
  const tokenStart = r.pos;
  decodeNodeId(r);
  const tokenEnd = r.pos;
  const w = new BinaryWriter(Buffer.alloc(64));
  encodeNodeId(w, token);
  const t = Buffer.from(w.view());
  return { body: Buffer.concat([body.subarray(0, tokenStart), t, body.subarray(tokenEnd)]), headerEnd: tokenStart + t.length };
}
