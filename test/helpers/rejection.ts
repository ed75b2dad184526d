// The DriverError a driver's promise rejects with: a test that expects a refusal fails when the
// promise resolves, or rejects with anything else.
import { expect } from "vitest";
import { DriverError } from "../../src/devices/driver.js";

export async function rejection(p: Promise<unknown>): Promise<DriverError> {
  try {
    await p;
  } catch (e) {
    expect(e).toBeInstanceOf(DriverError);
    return e as DriverError;
  }
  throw new Error("expected a rejection");
}
