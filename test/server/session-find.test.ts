// SessionManager.find tries the session it found last by comparing token bytes before it looks
// the token up by its key: a request must still find exactly its own session, never one that
// closed or one whose token merely looks alike.
import { afterEach, describe, expect, it } from "vitest";
import { SessionManager } from "../../src/sessions/session.js";
import { IdType, numericNodeId, type NodeId } from "../../src/ua/builtins.js";
import type { SecureChannel } from "../../src/security/secure-channel.js";

const channel = { sessionCount: 0 } as unknown as SecureChannel;
let manager: SessionManager;

function copyOf(token: NodeId): NodeId {
  // A token as a request carries it: decoded into a Buffer of its own.
  return { namespace: token.namespace, idType: token.idType, value: Buffer.from(token.value as Buffer) };
}

afterEach(() => manager?.closeAll());

describe("SessionManager.find", () => {
  it("finds each of several sessions by a copy of its token, in any order", () => {
    manager = new SessionManager({ maxSessions: 10, minSessionTimeout: 1000, maxSessionTimeout: 60_000 });
    const a = manager.create(channel, "a", 10_000, 0)!;
    const b = manager.create(channel, "b", 10_000, 0)!;
    const order = [a, a, b, a, b, b, a];
    for (const s of order) expect(manager.find(copyOf(s.authenticationToken))).toBe(s);
  });

  it("does not find a session after it closed, though it was the last one found", () => {
    manager = new SessionManager({ maxSessions: 10, minSessionTimeout: 1000, maxSessionTimeout: 60_000 });
    const a = manager.create(channel, "a", 10_000, 0)!;
    expect(manager.find(copyOf(a.authenticationToken))).toBe(a);
    manager.close(a);
    expect(manager.find(copyOf(a.authenticationToken))).toBeUndefined();
  });

  it("does not take a token of another namespace, kind or bytes for the last session's", () => {
    manager = new SessionManager({ maxSessions: 10, minSessionTimeout: 1000, maxSessionTimeout: 60_000 });
    const a = manager.create(channel, "a", 10_000, 0)!;
    const token = a.authenticationToken.value as Buffer;
    expect(manager.find(copyOf(a.authenticationToken))).toBe(a);
    expect(manager.find({ namespace: 1, idType: IdType.Opaque, value: Buffer.from(token) })).toBeUndefined();
    expect(manager.find({ namespace: 0, idType: IdType.String, value: token.toString("latin1") })).toBeUndefined();
    const other = Buffer.from(token);
    other[31] ^= 1;
    expect(manager.find({ namespace: 0, idType: IdType.Opaque, value: other })).toBeUndefined();
    expect(manager.find({ namespace: 0, idType: IdType.Opaque, value: token.subarray(0, 16) })).toBeUndefined();
    expect(manager.find(numericNodeId(0))).toBeUndefined();
    expect(manager.find(copyOf(a.authenticationToken))).toBe(a);
  });
});
