import { describe, expect, it } from "vitest";
import { StatusCodes } from "../../src/ua/generated/status-codes.js";
import { DEFAULT_TRANSPORT_LIMITS, resolveLimits } from "../../src/transport/limits.js";

describe("transport limits", () => {
  it("defaults, overrides, a derived send reserve", () => {
    expect(resolveLimits()).toEqual(DEFAULT_TRANSPORT_LIMITS);
    expect(resolveLimits({ maxChannels: 7, helloTimeoutMs: undefined }).maxChannels).toBe(7);
    expect(resolveLimits({ poolBufferCount: 16 }).poolSendReserve).toBe(2);
    expect(resolveLimits({ poolBufferCount: 2 }).poolSendReserve).toBe(1);
    expect(resolveLimits({ poolBufferCount: 64, poolSendReserve: 3 }).poolSendReserve).toBe(3);
  });

  it.each([
    [{ receiveBufferSize: 4096 }],
    [{ sendBufferSize: 8191 }],
    [{ maxMessageSize: 1000 }],
    [{ responseLowWater: 100 }],
    [{ minTokenLifetimeMs: 10, maxTokenLifetimeMs: 5 }],
    [{ poolBufferCount: 8, poolSendReserve: 8 }],
    [{ maxChannels: 1.5 }],
    [{ helloTimeoutMs: -1 }],
    [{ maxChunkCount: Number.NaN }],
  ])("refuses %j with BadConfigurationError", (bad) => {
    expect(() => resolveLimits(bad)).toThrow(expect.objectContaining({ statusCode: StatusCodes.BadConfigurationError }));
  });
});
