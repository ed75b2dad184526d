// ActivateSession on a None channel with our raw client (requests node-opcua would not send):
// anonymous switched off, secrets refused on an unsigned channel, the anonymous role from config.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { numericNodeId, BuiltinType, VariantArrayType, IdType } from "../../src/ua/builtins.js";
import { ObjectIds } from "../../src/ua/generated/node-ids.js";
import { StatusCodes } from "../../src/ua/generated/status-codes.js";
import { encodeActivateSessionRequest, type ExtensionObject, type ReadResponse } from "../../src/ua/generated/types.js";
import type { MemoryNamespace } from "../../src/address-space/memory-namespace.js";
import { AccessLevel } from "../../src/address-space/ua-node.js";
import { TEST_NAMESPACE_URI } from "../../src/testing/test-namespace.js";
import { hashPassword } from "../../src/sessions/users.js";
import { startGateway, type TestGateway } from "../helpers/gateway.js";
import { header, ServiceClient } from "../server/service-client.js";

async function activate(c: ServiceClient, token: ExtensionObject | undefined): Promise<number> {
  const r = await c.request(ObjectIds.ActivateSessionRequest_Encoding_DefaultBinary, encodeActivateSessionRequest, {
    requestHeader: header(c.token),
    clientSignature: {},
    userIdentityToken: token,
    userTokenSignature: {},
  });
  return r.body.responseHeader.serviceResult;
}

const anonymous: ExtensionObject = { typeId: numericNodeId(ObjectIds.AnonymousIdentityToken_Encoding_DefaultBinary), body: { policyId: "anonymous" } };
const plainUser: ExtensionObject = {
  typeId: numericNodeId(ObjectIds.UserNameIdentityToken_Encoding_DefaultBinary),
  body: { policyId: "username", userName: "alice", password: Buffer.from("alice-pw"), encryptionAlgorithm: undefined },
};

function addTag(gw: TestGateway): number {
  const index = gw.server.registry.indexOf(TEST_NAMESPACE_URI);
  (gw.server.registry.managerAt(index) as MemoryNamespace).addVariable({
    nodeId: "Users.Tag",
    browseName: "UsersTag",
    parent: numericNodeId(ObjectIds.ObjectsFolder),
    dataType: BuiltinType.Int32,
    value: { dataType: BuiltinType.Int32, arrayType: VariantArrayType.Scalar, value: 1 },
    accessLevel: AccessLevel.CurrentRead | AccessLevel.CurrentWrite,
  });
  return index;
}

async function userAccessLevel(c: ServiceClient, ns: number): Promise<number> {
  const r = (await c.read([{ nodeId: { namespace: ns, idType: IdType.String, value: "Users.Tag" }, attributeId: 18, dataEncoding: { namespaceIndex: 0, name: "" } }])) as ReadResponse;
  return r.results![0]!.value!.value as number;
}

describe("ActivateSession on a None channel, anonymous off", () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startGateway(`security:\n  allowAnonymous: false\nusers:\n  alice:\n    role: operator\n    password: "${await hashPassword("alice-pw", { logN: 10, r: 8, p: 1 })}"\n`);
  });
  afterAll(() => gw?.stop());

  it("refuses anonymous and a null token with BadIdentityTokenRejected", async () => {
    const c = await ServiceClient.open(gw.server.port);
    try {
      await c.createSession();
      expect(await activate(c, anonymous)).toBe(StatusCodes.BadIdentityTokenRejected);
      expect(await activate(c, undefined)).toBe(StatusCodes.BadIdentityTokenRejected);
    } finally {
      c.close();
    }
  });

  it("refuses a password on an unsigned channel, even a right one, with BadIdentityTokenRejected", async () => {
    const c = await ServiceClient.open(gw.server.port);
    try {
      await c.createSession();
      expect(await activate(c, plainUser)).toBe(StatusCodes.BadIdentityTokenRejected);
    } finally {
      c.close();
    }
  });

  it("offers no UserName policy on the None endpoint", () => {
    const endpoints = gw.server.endpoints(undefined).filter((e) => e.securityPolicyUri!.endsWith("#None"));
    expect(endpoints.length).toBeGreaterThan(0);
    for (const e of endpoints) expect(e.userIdentityTokens).toEqual([]);
  });
});

describe("the anonymous role", () => {
  it.each([
    ["", AccessLevel.CurrentRead],
    ["security:\n  anonymousRole: operator\n", AccessLevel.CurrentRead | AccessLevel.CurrentWrite],
  ])("config %j gives UserAccessLevel %d", async (yaml, expected) => {
    const gw = await startGateway(yaml);
    const c = await ServiceClient.open(gw.server.port);
    try {
      const ns = addTag(gw);
      await c.createSession();
      expect(await activate(c, anonymous)).toBe(StatusCodes.Good);
      expect(await userAccessLevel(c, ns)).toBe(expected);
    } finally {
      c.close();
      await gw.stop();
    }
  });
});
