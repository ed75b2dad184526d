// Auditing Server Facet (Part 7; Part 5 §6.4.3 - §6.4.27, Part 4 §6.5) with node-opcua-client:
// an administrator subscribed to the Server's events sees the AuditEvents of other clients:
//   Auditing Connections: AuditCreateSessionEvent and AuditActivateSessionEvent of a login, an
//     AuditActivateSessionEvent with Status false for a wrong password (the token without its
//     password), an AuditCertificateUntrustedEvent for a client certificate nobody trusted, an
//     AuditSessionEvent for CloseSession.
//   Auditing Write: AuditWriteUpdateEvent with the value before and after, Status false for a
//     write the user may not make.
//   Auditing Method: AuditUpdateMethodEvent with the MethodId and its arguments.
// The AuditEventType fields (ActionTimeStamp, Status, ServerId, ClientUserId) are filled; a
// viewer subscribed the same way gets no audit event. Server.Auditing is true.
import { AttributeIds, DataType, StatusCodes, Variant, type NodeId } from "node-opcua-client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { UaEvent } from "../../src/events/event.js";
import { numericNodeId } from "../../src/ua/builtins.js";
import { ObjectIds, ObjectTypeIds } from "../../src/ua/generated/node-ids.js";
import { monitorEvents, securedGateway, subscribe, type Connection, type EventMonitor, type EventRecord, type SecuredGateway } from "./helpers.js";

const FIELDS = [
  "EventType",
  "SourceName",
  "SourceNode",
  "Severity",
  "ActionTimeStamp",
  "Status",
  "ServerId",
  "ClientUserId",
  "StatusCodeId",
  "SessionId",
  "UserIdentityToken",
  "Certificate",
  "AttributeId",
  "OldValue",
  "NewValue",
  "MethodId",
  "InputArguments",
];

const type = (e: EventRecord) => (e.EventType as NodeId).toString();

let gw: SecuredGateway;
let admin: Connection;
let viewer: Connection;
let audit: EventMonitor;
let viewerSees: EventMonitor;
let ns: number;

const MAP = `devices:
  - name: sim
    driver: simulator
    rate: 100ms
    tags:
      - { name: setpoint, address: holding:0, access: readwrite }
`;

beforeAll(async () => {
  gw = await securedGateway(MAP);
  admin = await gw.login("ada");
  viewer = await gw.login("vera");
  ns = ((await admin.session.read({ nodeId: "i=2255", attributeId: AttributeIds.Value })).value.value as string[]).indexOf("urn:fieldgate:devices");
  audit = await monitorEvents(await subscribe(admin.session), "i=2253", FIELDS);
  viewerSees = await monitorEvents(await subscribe(viewer.session), "i=2253", FIELDS);
}, 60_000);

afterAll(async () => {
  await admin?.close();
  await viewer?.close();
  await gw?.stop();
});

describe("Auditing", () => {
  it("Server.Auditing says so", async () => {
    expect((await admin.session.read({ nodeId: "i=2994", attributeId: AttributeIds.Value })).value.value).toBe(true);
  });

  it("audits a login: CreateSession and ActivateSession, with who and when", async () => {
    const otto = await gw.login("otto");
    const created = await audit.next((e) => type(e) === "ns=0;i=2071" && (e.SessionId as NodeId).toString() === otto.session.sessionId.toString(), "AuditCreateSessionEvent");
    expect(created.Status).toBe(true);
    expect(created.SourceName).toBe("Session/CreateSession");
    expect(created.ServerId).toBe(gw.server.config.server.applicationUri);
    const activated = await audit.next((e) => type(e) === "ns=0;i=2075" && (e.SessionId as NodeId).toString() === otto.session.sessionId.toString(), "AuditActivateSessionEvent");
    expect(activated.Status).toBe(true);
    expect(activated.ClientUserId).toBe("otto");
    expect(activated.ActionTimeStamp).toBeInstanceOf(Date);
    await otto.close();
    const closed = await audit.next((e) => type(e) === "ns=0;i=2069", "AuditSessionEvent of CloseSession");
    expect(closed.SourceName).toBe("Session/CloseSession");
  });

  it("audits a refused login with Status false, its reason, and the token without its password", async () => {
    expect(await gw.refusedLogin("otto", "not-the-password")).toBe("BadUserAccessDenied");
    const refused = await audit.next((e) => type(e) === "ns=0;i=2075" && e.Status === false, "the refused AuditActivateSessionEvent");
    expect(refused.StatusCodeId).toEqual(StatusCodes.BadUserAccessDenied);
    const token = refused.UserIdentityToken as { userName?: string; password?: Buffer | null };
    expect(token.userName).toBe("otto");
    expect(token.password === null || token.password === undefined || token.password.length === 0).toBe(true);
    expect(JSON.stringify(refused)).not.toContain("not-the-password");
  });

  it("audits a client certificate that nobody trusted", async () => {
    expect(await gw.untrustedConnect()).not.toBe("Good");
    const e = await audit.next((x) => type(x) === "ns=0;i=2087", "AuditCertificateUntrustedEvent");
    expect(e.Status).toBe(false);
    expect(e.SourceName).toBe("Security/Certificate");
    expect(Buffer.isBuffer(e.Certificate)).toBe(true);
    expect(e.StatusCodeId).toEqual(StatusCodes.BadCertificateUntrusted);
  });

  it("audits writes with the value before and after, and a refused write with Status false", async () => {
    const otto = await gw.login("otto");
    try {
      const tag = `ns=${ns};s=sim.setpoint`;
      const before = (await otto.session.read({ nodeId: tag, attributeId: AttributeIds.Value })).value.value as number;
      const status = await otto.session.write({ nodeId: tag, attributeId: AttributeIds.Value, value: { value: { dataType: DataType.UInt16, value: 42 } } });
      expect(status).toBe(StatusCodes.Good);
      const e = await audit.next((x) => type(x) === "ns=0;i=2100" && x.Status === true, "AuditWriteUpdateEvent");
      expect((e.SourceNode as NodeId).toString()).toBe(tag);
      expect(e.SourceName).toBe("Attribute/Write");
      expect(e.AttributeId).toBe(AttributeIds.Value);
      expect(e.OldValue).toBe(before);
      expect(e.NewValue).toBe(42);
      expect(e.ClientUserId).toBe("otto");
      const denied = await viewer.session.write({ nodeId: tag, attributeId: AttributeIds.Value, value: { value: { dataType: DataType.UInt16, value: 7 } } });
      expect(denied).toBe(StatusCodes.BadUserAccessDenied);
      const refused = await audit.next((x) => type(x) === "ns=0;i=2100" && x.Status === false, "the refused write");
      expect(refused.ClientUserId).toBe("vera");
      expect(refused.NewValue).toBe(7);
    } finally {
      await otto.close();
    }
  });

  it("audits method calls", async () => {
    const r = await viewer.session.call({ objectId: "i=2253", methodId: "i=11492", inputArguments: [new Variant({ dataType: DataType.UInt32, value: 4242 })] });
    expect(r.statusCode).toBe(StatusCodes.BadSubscriptionIdInvalid);
    const e = await audit.next((x) => type(x) === "ns=0;i=2127", "AuditUpdateMethodEvent");
    expect((e.MethodId as NodeId).toString()).toBe("ns=0;i=11492");
    expect(e.Status).toBe(false);
    expect((e.InputArguments as Variant[])[0].value).toBe(4242);
  });

  it("shows audit events to administrators only", async () => {
    // The viewer's item works: a non-audit event reaches it.
    gw.server.events.raise(new UaEvent(ObjectTypeIds.SystemEventType, { sourceNode: numericNodeId(ObjectIds.Server), sourceName: "Test", message: "for everyone", severity: 10 }));
    await viewerSees.next((e) => type(e) === "ns=0;i=2130", "the system event");
    const auditTypes = new Set(["ns=0;i=2071", "ns=0;i=2075", "ns=0;i=2069", "ns=0;i=2087", "ns=0;i=2100", "ns=0;i=2127"]);
    expect(viewerSees.events.filter((e) => auditTypes.has(type(e)))).toEqual([]);
    expect(audit.events.filter((e) => auditTypes.has(type(e))).length).toBeGreaterThanOrEqual(8);
  });
});
