// Base Info Diagnostics (Part 7; Part 5 §6.3.3 ServerDiagnosticsType) with node-opcua-client over
// a signed channel, with an administrator, an operator and a viewer:
//   ServerDiagnosticsSummary: every counter true to what happened (sessions opened, refused for a
//     wrong password, timed out, closed by the server; requests refused; subscriptions).
//   SessionsDiagnosticsSummary: SessionDiagnosticsArray with what the client said and, while
//     EnabledFlag is true, its exact service counts; SessionSecurityDiagnosticsArray for
//     administrators only; one SessionDiagnosticsObjectType object per session (its NodeId the
//     SessionId) with its SessionDiagnostics, SessionSecurityDiagnostics and
//     SubscriptionDiagnosticsArray.
//   SubscriptionDiagnosticsArray and SamplingIntervalDiagnosticsArray.
//   EnabledFlag: written by an administrator, refused to others.
import {
  AttributeIds,
  BrowseDirection,
  DataType,
  StatusCodes,
  TimestampsToReturn,
  type ClientSession,
  type DataValue,
  type NodeId,
} from "node-opcua-client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { hashPassword } from "../../src/sessions/users.js";
import { connect, securedGateway, sleep, subscribe, waitFor, type Connection, type SecuredGateway } from "./helpers.js";

const SUMMARY = "i=2275";
const COUNTERS = {
  currentSessionCount: "i=2277",
  cumulatedSessionCount: "i=2278",
  securityRejectedSessionCount: "i=2279",
  rejectedSessionCount: "i=3705",
  sessionTimeoutCount: "i=2281",
  sessionAbortCount: "i=2282",
  publishingIntervalCount: "i=2284",
  currentSubscriptionCount: "i=2285",
  cumulatedSubscriptionCount: "i=2286",
  securityRejectedRequestsCount: "i=2287",
  rejectedRequestsCount: "i=2288",
} as const;
const SESSION_DIAGNOSTICS = "i=3707";
const SESSION_SECURITY = "i=3708";
const SUBSCRIPTION_DIAGNOSTICS = "i=2290";
const SAMPLING_INTERVALS = "i=2289";
const ENABLED_FLAG = "i=2294";

let gw: SecuredGateway;
let admin: Connection;
let viewer: Connection;

const MAP = `devices:
  - name: sim
    driver: simulator
    rate: 100ms
    tags:
      - { name: ramp, address: input:0 }
`;

async function counters(session: ClientSession): Promise<Record<keyof typeof COUNTERS, number>> {
  const keys = Object.keys(COUNTERS) as (keyof typeof COUNTERS)[];
  const values = await session.read(keys.map((k) => ({ nodeId: COUNTERS[k], attributeId: AttributeIds.Value })));
  return Object.fromEntries(keys.map((k, i) => [k, values[i].value.value as number])) as Record<keyof typeof COUNTERS, number>;
}

async function value(session: ClientSession, nodeId: string | NodeId): Promise<DataValue> {
  return session.read({ nodeId, attributeId: AttributeIds.Value });
}

/** The SessionDiagnosticsDataType of `session` from the array. */
async function ownDiagnostics(reader: ClientSession, session: ClientSession) {
  const all = (await value(reader, SESSION_DIAGNOSTICS)).value.value as Array<Record<string, unknown> & { sessionId: NodeId }>;
  return all.find((d) => d.sessionId.toString() === session.sessionId.toString())!;
}

beforeAll(async () => {
  gw = await securedGateway(MAP, "limits:\n  minSessionTimeout: 500ms\n");
  admin = await gw.login("ada");
  viewer = await gw.login("vera");
}, 60_000);

afterAll(async () => {
  await admin?.close();
  await viewer?.close();
  await gw?.stop();
});

describe("ServerDiagnosticsSummary", () => {
  it("counts the sessions open and opened, and agrees with the summary structure", async () => {
    const before = await counters(admin.session);
    expect(before.currentSessionCount).toBe(gw.server.sessions.size);
    const third = await gw.login("otto");
    const after = await counters(admin.session);
    expect(after.currentSessionCount).toBe(before.currentSessionCount + 1);
    expect(after.cumulatedSessionCount).toBe(before.cumulatedSessionCount + 1);
    const summary = (await value(admin.session, SUMMARY)).value.value as Record<string, number>;
    expect(summary.currentSessionCount).toBe(after.currentSessionCount);
    expect(summary.cumulatedSessionCount).toBe(after.cumulatedSessionCount);
    await third.close();
    expect((await counters(admin.session)).currentSessionCount).toBe(before.currentSessionCount);
  });

  it("counts a login refused for a wrong password as a security rejection", async () => {
    const before = await counters(admin.session);
    expect(await gw.refusedLogin("otto", "wrong")).toBe("BadUserAccessDenied");
    const after = await counters(admin.session);
    expect(after.rejectedSessionCount).toBe(before.rejectedSessionCount + 1);
    expect(after.securityRejectedSessionCount).toBe(before.securityRejectedSessionCount + 1);
    // The ActivateSession was answered with a ServiceFault: a refused request too.
    expect(after.rejectedRequestsCount).toBeGreaterThanOrEqual(before.rejectedRequestsCount + 1);
    expect(after.securityRejectedRequestsCount).toBeGreaterThanOrEqual(before.securityRejectedRequestsCount + 1);
  });

  it("counts a request answered with a ServiceFault, and not as a security rejection", async () => {
    const before = await counters(admin.session);
    await expect(viewer.session.read([])).rejects.toThrow(/BadNothingToDo/);
    const after = await counters(admin.session);
    expect(after.rejectedRequestsCount).toBe(before.rejectedRequestsCount + 1);
    expect(after.securityRejectedRequestsCount).toBe(before.securityRejectedRequestsCount);
  });

  it("counts a session that timed out", async () => {
    const before = await counters(admin.session);
    // A session of 500 ms whose client then says nothing: the server closes it at its next sweep.
    const quiet = await connect(gw.url, undefined, 500);
    const id = (quiet.session.sessionId as NodeId).value;
    await waitFor(() => [...gw.server.sessions.sessions()].every((x) => x.sessionId.value !== id), "the quiet session to time out", 15_000);
    const after = await counters(admin.session);
    expect(after.sessionTimeoutCount).toBeGreaterThanOrEqual(before.sessionTimeoutCount + 1);
    await quiet.close();
  }, 20_000);

  it("counts a session the server closed (its user's password changed) as aborted", async () => {
    const otto = await gw.login("otto");
    const before = await counters(admin.session);
    const config = gw.server.config;
    const users = { ...config.users, otto: { ...config.users.otto, password: await hashPassword("otto-new", { logN: 10, r: 8, p: 1 }) } };
    gw.server.reloadConfig({ ...config, users } as typeof config);
    const after = await counters(admin.session);
    expect(after.sessionAbortCount).toBe(before.sessionAbortCount + 1);
    await otto.client.disconnect();
  });

  it("counts subscriptions and their publishing intervals", async () => {
    const before = await counters(admin.session);
    const a = await subscribe(viewer.session, 100);
    const b = await subscribe(viewer.session, 250);
    const after = await counters(admin.session);
    expect(after.currentSubscriptionCount).toBe(before.currentSubscriptionCount + 2);
    expect(after.cumulatedSubscriptionCount).toBe(before.cumulatedSubscriptionCount + 2);
    expect(after.publishingIntervalCount).toBe(new Set([...gw.server.subscriptions.subscriptions.values()].map((s) => s.publishingInterval)).size);
    await a.terminate();
    await b.terminate();
  });
});

describe("SessionsDiagnosticsSummary", () => {
  it("SessionDiagnosticsArray has each session with what its client said", async () => {
    const d = await ownDiagnostics(admin.session, viewer.session);
    expect(d).toBeDefined();
    expect((d.clientDescription as { applicationUri: string }).applicationUri).toBe("urn:fieldgate:conformance-client");
    expect(d.actualSessionTimeout).toBe(60_000);
    expect(String(d.endpointUrl)).toContain("opc.tcp://");
  });

  it("EnabledFlag is written by administrators only", async () => {
    const [viewerLevel, adminLevel] = await Promise.all([
      viewer.session.read({ nodeId: ENABLED_FLAG, attributeId: AttributeIds.UserAccessLevel }),
      admin.session.read({ nodeId: ENABLED_FLAG, attributeId: AttributeIds.UserAccessLevel }),
    ]);
    expect(viewerLevel.value.value & 2).toBe(0);
    expect(adminLevel.value.value & 2).toBe(2);
    const refused = await viewer.session.write({ nodeId: ENABLED_FLAG, attributeId: AttributeIds.Value, value: { value: { dataType: DataType.Boolean, value: true } } });
    expect(refused).toBe(StatusCodes.BadUserAccessDenied);
    const wrongType = await admin.session.write({ nodeId: ENABLED_FLAG, attributeId: AttributeIds.Value, value: { value: { dataType: DataType.Int32, value: 1 } } });
    expect(wrongType).toBe(StatusCodes.BadTypeMismatch);
  });

  it("counts each service of a session exactly while EnabledFlag is true", async () => {
    const status = await admin.session.write({ nodeId: ENABLED_FLAG, attributeId: AttributeIds.Value, value: { value: { dataType: DataType.Boolean, value: true } } });
    expect(status).toBe(StatusCodes.Good);
    expect((await value(viewer.session, ENABLED_FLAG)).value.value).toBe(true);
    const first = await ownDiagnostics(admin.session, viewer.session);
    for (let i = 0; i < 3; i++) await viewer.session.read({ nodeId: "i=2258", attributeId: AttributeIds.Value });
    await viewer.session.browse("i=85");
    await expect(viewer.session.read([])).rejects.toThrow(/BadNothingToDo/);
    const second = await ownDiagnostics(admin.session, viewer.session);
    const read = (d: Record<string, unknown>) => d.readCount as { totalCount: number; errorCount: number };
    expect(read(second).totalCount - read(first).totalCount).toBe(4);
    expect(read(second).errorCount - read(first).errorCount).toBe(1);
    expect((second.browseCount as { totalCount: number }).totalCount - (first.browseCount as { totalCount: number }).totalCount).toBe(1);
    expect((second.totalRequestCount as { totalCount: number }).totalCount - (first.totalRequestCount as { totalCount: number }).totalCount).toBe(5);
    await admin.session.write({ nodeId: ENABLED_FLAG, attributeId: AttributeIds.Value, value: { value: { dataType: DataType.Boolean, value: false } } });
    const off = await ownDiagnostics(admin.session, viewer.session);
    await viewer.session.read({ nodeId: "i=2258", attributeId: AttributeIds.Value });
    const still = await ownDiagnostics(admin.session, viewer.session);
    expect(read(still).totalCount).toBe(read(off).totalCount);
  });

  it("SessionSecurityDiagnosticsArray is for administrators", async () => {
    const denied = await value(viewer.session, SESSION_SECURITY);
    expect(denied.statusCode).toBe(StatusCodes.BadUserAccessDenied);
    const all = (await value(admin.session, SESSION_SECURITY)).value.value as Array<Record<string, unknown> & { sessionId: NodeId }>;
    const mine = all.find((d) => d.sessionId.toString() === viewer.session.sessionId.toString())!;
    expect(mine.clientUserIdOfSession).toBe("vera");
    expect(mine.authenticationMechanism).toBe("UserName");
    expect(mine.securityPolicyUri).toBe("http://opcfoundation.org/UA/SecurityPolicy#Basic256Sha256");
    expect(mine.securityMode).toBe(3);
    expect(mine.transportProtocol).toBe("opc.tcp");
  });

  it("has one object per session, its NodeId the SessionId, with the session's diagnostics below it", async () => {
    const summary = await admin.session.browse({ nodeId: "i=3706", browseDirection: BrowseDirection.Forward, referenceTypeId: "HasComponent", includeSubtypes: true, resultMask: 63 });
    const ids = summary.references!.map((r) => r.nodeId.toString());
    expect(ids).toContain(viewer.session.sessionId.toString());
    const object = await admin.session.browse({ nodeId: viewer.session.sessionId, browseDirection: BrowseDirection.Forward, resultMask: 63 });
    const names = object.references!.map((r) => r.browseName.name);
    expect(names).toEqual(expect.arrayContaining(["SessionDiagnostics", "SessionSecurityDiagnostics", "SubscriptionDiagnosticsArray"]));
    const typeDef = object.references!.find((r) => r.referenceTypeId.toString() === "ns=0;i=40")!;
    expect(typeDef.nodeId.toString()).toBe("ns=0;i=2029");
    const diag = object.references!.find((r) => r.browseName.name === "SessionDiagnostics")!.nodeId;
    const fields = await admin.session.browse({ nodeId: diag, browseDirection: BrowseDirection.Forward, referenceTypeId: "HasComponent", resultMask: 63 });
    expect(fields.references!.length).toBe(43);
    const readCount = fields.references!.find((r) => r.browseName.name === "ReadCount")!.nodeId;
    const rc = await value(admin.session, readCount);
    expect(rc.statusCode.isGood()).toBe(true);
    expect((rc.value.value as { totalCount: number }).totalCount).toBeGreaterThanOrEqual(4);
    const name = fields.references!.find((r) => r.browseName.name === "ClientDescription")!.nodeId;
    expect(((await value(admin.session, name)).value.value as { applicationUri: string }).applicationUri).toBe("urn:fieldgate:conformance-client");
    const security = object.references!.find((r) => r.browseName.name === "SessionSecurityDiagnostics")!.nodeId;
    expect((await value(viewer.session, security)).statusCode).toBe(StatusCodes.BadUserAccessDenied);
  });
});

describe("SubscriptionDiagnosticsArray and SamplingIntervalDiagnosticsArray", () => {
  it("count what happened to a subscription", async () => {
    const sub = await subscribe(viewer.session, 100);
    const item = await sub.monitor({ nodeId: "ns=1;s=sim.ramp", attributeId: AttributeIds.Value }, { samplingInterval: 100, queueSize: 1 }, TimestampsToReturn.Both);
    let changes = 0;
    item.on("changed", () => changes++);
    await waitFor(() => changes >= 3, "three data changes");
    await sub.modify({ requestedPublishingInterval: 200 } as never);
    await sub.setPublishingMode(false);
    await sub.setPublishingMode(true);
    await expect(viewer.session.republish({ subscriptionId: sub.subscriptionId, retransmitSequenceNumber: 987_654 } as never)).rejects.toThrow();
    await sleep(300);
    const all = (await value(admin.session, SUBSCRIPTION_DIAGNOSTICS)).value.value as Array<Record<string, number> & { sessionId: NodeId }>;
    const d = all.find((x) => x.subscriptionId === sub.subscriptionId)!;
    expect(d.sessionId.toString()).toBe(viewer.session.sessionId.toString());
    expect(d.publishingInterval).toBe(200);
    expect(d.modifyCount).toBe(1);
    expect(d.disableCount).toBe(1);
    expect(d.enableCount).toBe(1);
    expect(d.republishRequestCount).toBe(1);
    expect(d.republishMessageCount).toBe(0);
    expect(d.monitoredItemCount).toBe(1);
    expect(d.disabledMonitoredItemCount).toBe(0);
    expect(d.dataChangeNotificationsCount).toBeGreaterThanOrEqual(changes - 1);
    expect(d.notificationsCount).toBe(d.dataChangeNotificationsCount + d.eventNotificationsCount);
    expect(d.publishRequestCount).toBeGreaterThan(0);
    expect(d.nextSequenceNumber).toBeGreaterThan(1);
    // The same record in the session's own object.
    const own = (await value(admin.session, `ns=${(viewer.session.sessionId as NodeId).namespace};s=${(viewer.session.sessionId as NodeId).value}/SubscriptionDiagnosticsArray`)).value.value as Array<Record<string, number>>;
    expect(own.map((x) => x.subscriptionId)).toContain(sub.subscriptionId);
    const intervals = (await value(admin.session, SAMPLING_INTERVALS)).value.value as Array<Record<string, number>>;
    const at100 = intervals.find((x) => x.samplingInterval === 100)!;
    expect(at100.monitoredItemCount).toBeGreaterThanOrEqual(1);
    expect(at100.maxMonitoredItemCount).toBeGreaterThanOrEqual(at100.monitoredItemCount);
    await sub.terminate();
  });
});
