// The simulator's Modbus TCP slave is ours, so a client we did not write checks it:
// modbus-serial's client, every function code it serves and its exception answers.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import ModbusRTU from "modbus-serial";
import { startSimulator, type Simulator } from "../../drivers/simulator/index.js";

let sim: Simulator;
let client: ModbusRTU;

beforeAll(async () => {
  sim = await startSimulator({ size: 100 });
  client = new ModbusRTU();
  await client.connectTCP("127.0.0.1", { port: sim.port });
  client.setID(7);
  client.setTimeout(2000);
});

afterAll(async () => {
  await new Promise<void>((r) => client.close(() => r()));
  await sim.close();
});

describe("simulator slave against modbus-serial's client", () => {
  it("reads and writes holding registers (FC3, FC6, FC16)", async () => {
    expect((await client.readHoldingRegisters(0, 1)).data).toEqual([50]);
    await client.writeRegister(5, 1234);
    await client.writeRegisters(6, [1, 2, 3]);
    expect((await client.readHoldingRegisters(5, 4)).data).toEqual([1234, 1, 2, 3]);
    expect(Array.from(sim.unit(7).holding.subarray(5, 9))).toEqual([1234, 1, 2, 3]);
  });

  it("reads and writes coils (FC1, FC5, FC15) and reads discrete inputs (FC2)", async () => {
    await client.writeCoil(3, true);
    await client.writeCoils(10, [true, false, true, true, false, false, false, false, true]);
    const coils = (await client.readCoils(0, 19)).data.slice(0, 19);
    expect(coils[0]).toBe(true);
    expect(coils[3]).toBe(true);
    expect(coils.slice(10, 19)).toEqual([true, false, true, true, false, false, false, false, true]);
    const discrete = (await client.readDiscreteInputs(0, 2)).data.slice(0, 2);
    expect(discrete[0]).not.toBe(discrete[1]); // square waves shifted by one per address
  });

  it("reads input registers (FC4) with values in range", async () => {
    const { data } = await client.readInputRegisters(0, 2);
    expect(data[0]).toBeLessThan(1000);
    expect(data[1]).toBeLessThanOrEqual(100);
  });

  it("answers exception 02 past its size and 03 for a bad count", async () => {
    await expect(client.readHoldingRegisters(99, 2)).rejects.toMatchObject({ modbusCode: 2 });
    await expect(client.readInputRegisters(0, 126)).rejects.toMatchObject({ modbusCode: 3 });
    // The connection survives exceptions.
    expect((await client.readHoldingRegisters(0, 1)).data).toEqual([50]);
  });
});
