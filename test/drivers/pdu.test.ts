// Modbus PDU encoding, decoding and the CRC against the byte examples of the Modbus specs.
import { describe, expect, it } from "vitest";
import {
  checkResponsePdu, crc16, decodeReadData, encodeRequestPdu, exceptionStatus, responsePduLength,
} from "../../drivers/modbus/pdu.js";
import { modbusLinkKey, resolveLinkOptions } from "../../drivers/modbus/options.js";
import { StatusCodes } from "../../src/ua/generated/status-codes.js";

const hex = (s: string) => Buffer.from(s.replace(/\s+/g, ""), "hex");

describe("crc16", () => {
  it("matches the serial-line spec's examples", () => {
    // Modbus over Serial Line V1.02 §6.2.2 / the common FC3 example frames.
    for (const [frame, crc] of [
      ["01 03 00 00 00 0A", "C5 CD"],
      ["11 03 00 6B 00 03", "76 87"],
      ["01 06 00 01 00 03", "98 0B"],
    ] as const) {
      const b = hex(frame);
      const out = Buffer.alloc(2);
      out.writeUInt16LE(crc16(b, 0, b.length));
      expect(out.toString("hex").toUpperCase()).toBe(crc.replace(" ", ""));
    }
  });
});

describe("request PDUs (MBAP spec §6 examples)", () => {
  const enc = (fc: number, address: number, count: number, values: number[] | null, index = 0) => {
    const b = Buffer.alloc(260);
    const n = encodeRequestPdu(b, 0, fc, address, count, values, index);
    return b.subarray(0, n).toString("hex").toUpperCase();
  };
  it("encodes every function code", () => {
    expect(enc(1, 19, 19, null)).toBe("0100130013"); // §6.1
    expect(enc(2, 196, 22, null)).toBe("0200C40016"); // §6.2
    expect(enc(3, 107, 3, null)).toBe("03006B0003"); // §6.3
    expect(enc(4, 8, 1, null)).toBe("0400080001"); // §6.4
    expect(enc(5, 172, 1, [1])).toBe("0500ACFF00"); // §6.5
    expect(enc(5, 172, 1, [0])).toBe("0500AC0000");
    expect(enc(6, 1, 1, [3])).toBe("0600010003"); // §6.6
    expect(enc(6, 11, 1, [9, 8, 7], 2)).toBe("06000B0007"); // one register of a forced-FC6 sequence
    // §6.11: coils 20-29 = 1 0 1 1 0 0 1 1 | 1 0 → CD 01
    expect(enc(15, 19, 10, [1, 0, 1, 1, 0, 0, 1, 1, 1, 0])).toBe("0F0013000A02CD01");
    expect(enc(16, 1, 2, [0x000a, 0x0102])).toBe("100001000204000A0102"); // §6.12
  });
});

describe("response PDUs", () => {
  it("knows the length of every answer", () => {
    expect([1, 2, 3, 4, 5, 6, 15, 16].map((fc) => responsePduLength(fc, 19))).toEqual([5, 5, 40, 40, 5, 5, 5, 5]);
  });
  it("decodes bits least significant first and registers big-endian (§6.1, §6.3)", () => {
    // §6.1: coils 20-38 → CD 6B 05
    const bits = decodeReadData(hex("01 03 CD 6B 05"), 0, 1, 19);
    expect(Array.from(bits).join("")).toBe("1011001111010110101");
    const regs = decodeReadData(hex("03 06 02 2B 00 00 00 64"), 0, 3, 3);
    expect(Array.from(regs)).toEqual([555, 0, 100]);
  });
  it("checks byte counts and write echoes", () => {
    expect(checkResponsePdu(hex("03 06 02 2B 00 00 00 64"), 0, 8, 3, 107, 3, null, 0)).toBeUndefined();
    expect(checkResponsePdu(hex("03 04 02 2B 00 00 00 64"), 0, 8, 3, 107, 3, null, 0)).toMatch(/byte count/);
    expect(checkResponsePdu(hex("03 04 02 2B 00 00"), 0, 6, 3, 107, 3, null, 0)).toMatch(/6 bytes/);
    expect(checkResponsePdu(hex("06 00 01 00 03"), 0, 5, 6, 1, 1, [3], 0)).toBeUndefined();
    expect(checkResponsePdu(hex("06 00 01 00 04"), 0, 5, 6, 1, 1, [3], 0)).toMatch(/echo/);
    expect(checkResponsePdu(hex("10 00 01 00 02"), 0, 5, 16, 1, 2, [1, 2], 0)).toBeUndefined();
    expect(checkResponsePdu(hex("05 00 AC FF 00"), 0, 5, 5, 172, 1, [1], 0)).toBeUndefined();
  });
});

describe("exception codes", () => {
  it("map to StatusCodes, retryable only where retrying can help", () => {
    const table = [1, 2, 3, 4, 5, 6, 8, 0x0a, 0x0b, 0x0c].map((c) => [c, exceptionStatus(c)]);
    expect(table).toEqual([
      [1, { statusCode: StatusCodes.BadNotSupported, retryable: false }],
      [2, { statusCode: StatusCodes.BadConfigurationError, retryable: false }],
      [3, { statusCode: StatusCodes.BadOutOfRange, retryable: false }],
      [4, { statusCode: StatusCodes.BadDeviceFailure, retryable: false }],
      [5, { statusCode: StatusCodes.BadResourceUnavailable, retryable: true }],
      [6, { statusCode: StatusCodes.BadResourceUnavailable, retryable: true }],
      [8, { statusCode: StatusCodes.BadDeviceFailure, retryable: false }],
      [0x0a, { statusCode: StatusCodes.BadCommunicationError, retryable: true }],
      [0x0b, { statusCode: StatusCodes.BadCommunicationError, retryable: true }],
      [0x0c, { statusCode: StatusCodes.BadDeviceFailure, retryable: false }],
    ]);
  });
});

describe("link options", () => {
  it("fill the serial-line defaults and the 3.5-character gap", () => {
    const rtu = resolveLinkOptions({ kind: "rtu", path: "/dev/ttyUSB0", timeout: 500 });
    expect([rtu.baudRate, rtu.parity, rtu.dataBits, rtu.stopBits]).toEqual([19200, "even", 8, 1]);
    expect(rtu.interRequestDelay).toBe(3); // 3.5 * 11 bits / 19200 baud = 2.005 ms, rounded up
    expect(resolveLinkOptions({ kind: "rtu", path: "/dev/x", baudRate: 9600, timeout: 1 }).interRequestDelay).toBe(5);
    expect(resolveLinkOptions({ kind: "rtu", path: "/dev/x", baudRate: 115200, timeout: 1 }).interRequestDelay).toBe(2);
    expect(resolveLinkOptions({ kind: "tcp", host: "h", timeout: 1 })).toMatchObject({ port: 502, interRequestDelay: 0 });
  });
  it("refuse options that cannot work", () => {
    expect(() => resolveLinkOptions({ kind: "tcp", timeout: 1 })).toThrow(/host/);
    expect(() => resolveLinkOptions({ kind: "rtu", host: "x", timeout: 1 })).toThrow(/path/);
    expect(() => resolveLinkOptions({ kind: "tcp", host: "h" } as never)).toThrow(/timeout/);
    expect(() => resolveLinkOptions({ kind: "udp", host: "h", timeout: 1 } as never)).toThrow(/kind/);
  });
  it("key links by what they share", () => {
    expect(modbusLinkKey({ kind: "rtu", path: "/dev/ttyUSB0" })).toBe("rtu:/dev/ttyUSB0");
    expect(modbusLinkKey({ kind: "tcp", host: "10.0.0.5" })).toBe("tcp:10.0.0.5:502");
    expect(modbusLinkKey({ kind: "rtu-over-tcp", host: "10.0.0.5", port: 4001 })).toBe("rtu-over-tcp:10.0.0.5:4001");
  });
});
