// Reads a node with node-opcua-client until its DataValue is what a test waits for: bounded in
// time, and saying what it last read when the wait runs out.
import { AttributeIds, type ClientSession, type DataValue } from "node-opcua-client";

/** Reads `nodeId`'s Value until `ok` holds (at most `ms`); returns the last value read. */
export async function readUntil(session: ClientSession, nodeId: string, ok: (dv: DataValue) => boolean, what: string, ms = 8000): Promise<DataValue> {
  const end = Date.now() + ms;
  for (;;) {
    const dv = await session.read({ nodeId, attributeId: AttributeIds.Value });
    if (ok(dv)) return dv;
    if (Date.now() > end) throw new Error(`${what}: still ${dv.toString()}`);
    await new Promise((r) => setTimeout(r, 30));
  }
}
