import { describe, expect, it } from "vitest";
import { StatusCodes } from "../../src/ua/generated/status-codes.js";
import { DEFAULT_TRANSPORT_LIMITS, resolveLimits } from "../../src/transport/limits.js";

describe("transport limits", () => {
  it("defaults, overrides, per-connection bounds scaled down with a smaller memory budget", () => {
    expect(resolveLimits()).toEqual(DEFAULT_TRANSPORT_LIMITS);
    expect(resolveLimits({ maxChannels: 7, helloTimeoutMs: undefined }).maxChannels).toBe(7);
    const small = resolveLimits({ memoryLimit: 4 << 20 });
    expect(small.maxPendingBytesPerChannel).toBe(2 << 20);
    expect(small.maxQueuedResponseBytes).toBe(1 << 20);
    // Given ones stay as given.
    expect(resolveLimits({ memoryLimit: 4 << 20, maxPendingBytesPerChannel: 3 << 20 }).maxPendingBytesPerChannel).toBe(3 << 20);
    // A big budget does not raise them.
    expect(resolveLimits({ memoryLimit: 1 << 30 }).maxPendingBytesPerChannel).toBe(DEFAULT_TRANSPORT_LIMITS.maxPendingBytesPerChannel);
  });

  it.each([
    [{ receiveBufferSize: 4096 }],
    [{ sendBufferSize: 8191 }],
    [{ maxMessageSize: 1000 }],
    [{ responseLowWater: 100 }],
    [{ minTokenLifetimeMs: 10, maxTokenLifetimeMs: 5 }],
    [{ memoryLimit: 512 * 1024 }],
    [{ memoryLimit: 4 << 20, receiveBufferSize: 1 << 20, maxMessageSize: 1 << 20 }],
    [{ memoryLimit: 4 << 20, maxPendingBytesPerChannel: 5 << 20 }],
    [{ maxChannels: 1.5 }],
    [{ helloTimeoutMs: -1 }],
    [{ maxChunkCount: Number.NaN }],
  ])("refuses %j with BadConfigurationError", (bad) => {
    expect(() => resolveLimits(bad)).toThrow(expect.objectContaining({ statusCode: StatusCodes.BadConfigurationError }));
  });
});
