// The System object's update variables: RunningVersion, RootSlot and LastUpdateResult, from the
// appliance's files (a fixture stands for them) or, outside the image, the package's version and
// no slot.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { DeviceNamespace } from "../../src/address-space/device-namespace.js";
import { ValueCache } from "../../src/values/value-cache.js";
import { NamespaceRegistry } from "../../src/address-space/namespace-registry.js";
import { Ns0Manager } from "../../src/address-space/ns0-manager.js";
import { SystemObject } from "../../src/address-space/system-object.js";
import { BuiltinType } from "../../src/ua/builtins.js";
import { StatusCodes } from "../../src/ua/generated/status-codes.js";
import { Layout } from "../../src/update/layout.js";
import { readUpdateStatus } from "../../src/update/status.js";
import { fieldgateUpdate, makeFixture, repo, type Fixture } from "./update-fixture.js";

let f: Fixture | undefined;
afterEach(() => f?.cleanup());

function system(updateStatus?: ConstructorParameters<typeof SystemObject>[1]["updateStatus"]): SystemObject {
  const registry = new NamespaceRegistry();
  new Ns0Manager(registry, { applicationUri: "urn:x", buildInfo: { buildDate: 0 } });
  const devices = new DeviceNamespace(registry, { values: new ValueCache() });
  return new SystemObject(devices.ns, { dataDir: repo, thermalDir: join(repo, "none"), ...(updateStatus ? { updateStatus } : {}) });
}

describe("the System object's update variables", () => {
  it("show the running version, the root slot and the last update's result", async () => {
    f = makeFixture("2.0");
    expect(fieldgateUpdate(f, [f.bundle({ version: "2.1" }), "--reboot", "manual"]).status).toBe(0);
    const layout = new Layout(f.root);
    const s = system(() => readUpdateStatus(layout));
    await s.sample();
    const text = (n: "RunningVersion" | "RootSlot" | "LastUpdateResult") => s.variable(n).value.value;
    expect(text("RunningVersion")).toEqual({ dataType: BuiltinType.String, arrayType: 0, value: "2.0" });
    expect(text("RootSlot")?.value).toBe("A");
    expect(text("LastUpdateResult")?.value).toMatch(/^installed: 2\.1 installed in slot B from the command line, waiting for its trial boot \(running 2\.0 from slot A\) \(\d{4}-/);
  });

  it("outside the image: the package's version, no slot (BadNotSupported), no update", async () => {
    const s = system();
    await s.sample();
    const pkg = JSON.parse(readFileSync(join(repo, "package.json"), "utf8")) as { version: string };
    expect(s.variable("RunningVersion").value.value?.value).toBe(pkg.version);
    expect(s.variable("RootSlot").value.statusCode).toBe(StatusCodes.BadNotSupported);
    expect(s.variable("LastUpdateResult").value.value?.value).toBe("none");
  });

  it("a status that cannot be read leaves them Bad, the other variables sampled", async () => {
    const s = system(() => Promise.reject(new Error("EIO")));
    await s.sample();
    expect(s.variable("RunningVersion").value.statusCode).toBe(StatusCodes.BadResourceUnavailable);
    expect(s.variable("Uptime").value.statusCode).toBeUndefined();
  });
});
