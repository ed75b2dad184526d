#!/usr/bin/python3
"""A Modbus slave from Debian's python3-pymodbus (3.0.x API) for the driver tests.

  pymodbus_peer.py tcp [PORT]   Modbus TCP on 127.0.0.1 (PORT 0 or absent: ephemeral)
  pymodbus_peer.py rtu-over-tcp [PORT]   RTU frames over TCP (a serial gateway's framing)
  pymodbus_peer.py rtu PATH     Modbus RTU on a serial device (one end of a socat pty pair)
  pymodbus_peer.py ascii PATH   Modbus ASCII (pymodbus's ModbusAsciiFramer) on a serial device

Slaves 1 and 2, each with 100 coils, discrete inputs, input and holding registers:
  holding[i] = 1000*unit + i, input[i] = 3000 + 1000*unit + i,
  coil[i] = (i % 3 == 0), discrete[i] = (i % 2 == 0), for unit 1; unit 2 inverts both bit areas.
Addresses >= 100 answer exception 02; reading holding register 90 raises in the datastore, which
pymodbus answers with exception 04.

Prints one JSON line {"ready": true, "port": N} when serving. Reads commands on stdin:
  mute N / unmute N   remove / restore slave N (RTU: it stops answering; TCP: exception 0B)
  fail N / heal N     slave N's datastore raises on every access (pymodbus answers exception 04
                      to every request), or works again
Exits when stdin closes, so a dead test run leaves no server behind.
"""
import asyncio
import json
import logging
import sys
import threading

from pymodbus.datastore import (
    ModbusSequentialDataBlock,
    ModbusServerContext,
    ModbusSlaveContext,
)
from pymodbus.framer.ascii_framer import ModbusAsciiFramer
from pymodbus.framer.rtu_framer import ModbusRtuFramer
from pymodbus.server.async_io import ModbusSerialServer, ModbusTcpServer

logging.basicConfig(level=logging.CRITICAL)


BROKEN = set()


class Block(ModbusSequentialDataBlock):
    """A data area of slave `unit`, failing whole while the unit is in BROKEN."""

    def __init__(self, unit, values):
        super().__init__(0, values)
        self.unit = unit

    def getValues(self, address, count=1):
        if self.unit in BROKEN:
            raise RuntimeError("simulated device failure of slave %d" % self.unit)
        return super().getValues(address, count)

    def setValues(self, address, values):
        if self.unit in BROKEN:
            raise RuntimeError("simulated device failure of slave %d" % self.unit)
        return super().setValues(address, values)


class FailingBlock(Block):
    """Holding registers whose address 90 fails inside the device."""

    def getValues(self, address, count=1):
        if address <= 90 < address + count:
            raise RuntimeError("simulated device failure at holding 90")
        return super().getValues(address, count)


def slave(unit):
    bits = [(i % 3 == 0) != (unit == 2) for i in range(100)]
    dis = [(i % 2 == 0) != (unit == 2) for i in range(100)]
    return ModbusSlaveContext(
        co=Block(unit, bits),
        di=Block(unit, dis),
        ir=Block(unit, [3000 + 1000 * unit + i for i in range(100)]),
        hr=FailingBlock(unit, [1000 * unit + i for i in range(100)]),
        zero_mode=True,
    )


async def main():
    mode = sys.argv[1]
    slaves = {1: slave(1), 2: slave(2)}
    context = ModbusServerContext(slaves=dict(slaves), single=False)
    loop = asyncio.get_running_loop()
    if mode in ("tcp", "rtu-over-tcp"):
        port = int(sys.argv[2]) if len(sys.argv) > 2 else 0
        framer = ModbusRtuFramer if mode == "rtu-over-tcp" else None
        server = ModbusTcpServer(
            context, framer=framer, address=("127.0.0.1", port), allow_reuse_address=True,
            ignore_missing_slaves=(mode == "rtu-over-tcp"),
        )
        asyncio.create_task(server.serve_forever())
        await server.serving
        port = server.server.sockets[0].getsockname()[1]
    else:
        server = ModbusSerialServer(
            context, framer=ModbusAsciiFramer if mode == "ascii" else ModbusRtuFramer, port=sys.argv[2],
            # A pty refuses PARENB (termios EINVAL), so the test bus runs without parity; this
            # end keeps 8 data bits (pymodbus's serial reader hears nothing on a pty set to 7),
            # the driver's end ASCII's 7: ASCII characters are 7-bit either way.
            baudrate=19200, bytesize=8, parity="N", stopbits=1,
            ignore_missing_slaves=True,
        )
        await server.start()
        port = 0

    done = asyncio.Event()

    def command(line):
        if line is None:
            done.set()
            return
        words = line.split()
        if len(words) == 2 and words[0] == "mute":
            unit = int(words[1])
            if unit in context:
                del context[unit]
        elif len(words) == 2 and words[0] == "unmute":
            unit = int(words[1])
            context[unit] = slaves[unit]
        elif len(words) == 2 and words[0] == "fail":
            BROKEN.add(int(words[1]))
        elif len(words) == 2 and words[0] == "heal":
            BROKEN.discard(int(words[1]))
        print(json.dumps({"ok": line.strip()}), flush=True)

    def read_stdin():
        for line in sys.stdin:
            loop.call_soon_threadsafe(command, line)
        loop.call_soon_threadsafe(command, None)

    threading.Thread(target=read_stdin, daemon=True).start()
    print(json.dumps({"ready": True, "port": port}), flush=True)
    await done.wait()


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        pass
