// Objects/Northbound (ns=1;i=3 in the device namespace): how the edge node is doing, for OPC UA
// clients and the status page, updated once a second where a value changed.
import type { MemoryNamespace, MemoryVariable } from "../address-space/memory-namespace.js";
import { BuiltinType, numericNodeId, VariantArrayType } from "../ua/builtins.js";
import { ObjectIds } from "../ua/generated/node-ids.js";
import { StatusCodes } from "../ua/generated/status-codes.js";
import type { EdgeNodeStatus } from "./edge-node.js";

/** Objects/Northbound; i=1 and i=2 are the Devices folder and the System object. */
export const NORTHBOUND_OBJECT_ID = 3;

const VARIABLES = [
  ["Enabled", BuiltinType.Boolean, "A northbound is configured (northbound.sparkplug in gateway.yaml)."],
  ["Connected", BuiltinType.Boolean, "The MQTT session with the broker is up."],
  ["State", BuiltinType.String, "stopped, connecting, waiting for primary host, birthing, online or backing off."],
  ["Broker", BuiltinType.String, "The broker's URL."],
  ["LastError", BuiltinType.String, "The last connection failure, empty when there was none."],
  ["BdSeq", BuiltinType.UInt32, "The bdSeq of the current MQTT session (its NBIRTH and NDEATH)."],
  ["PrimaryHostOnline", BuiltinType.Boolean, "The primary host's last STATE said online (Bad without a primaryHostId)."],
  ["MessagesPublished", BuiltinType.UInt64, "Sparkplug messages published since start."],
  ["MetricsPublished", BuiltinType.UInt64, "Metric values published since start (births, data, replay)."],
  ["Buffered", BuiltinType.UInt64, "Data changes stored on disk since start (the store-and-forward file)."],
  ["Waiting", BuiltinType.UInt64, "Data changes in the store now, to be replayed."],
  ["Replayed", BuiltinType.UInt64, "Stored changes sent as historical data since start."],
  ["Dropped", BuiltinType.UInt64, "Stored changes dropped unsent: older than maxAge, over maxSize, or of a device or tag no longer online."],
  ["CommandsReceived", BuiltinType.UInt64, "NCMD and DCMD messages received."],
  ["CommandsRefused", BuiltinType.UInt64, "Command metrics refused (not writable, role, type, range, unknown, malformed)."],
] as const;

type Name = (typeof VARIABLES)[number][0];

export class NorthboundDiagnostics {
  private readonly vars = {} as Record<Name, MemoryVariable>;
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly ns: MemoryNamespace) {
    const object = ns.addObject({
      nodeId: numericNodeId(NORTHBOUND_OBJECT_ID, ns.namespaceIndex),
      browseName: "Northbound",
      description: "The Sparkplug B edge node that publishes the devices to an MQTT broker.",
      parent: numericNodeId(ObjectIds.ObjectsFolder),
    }).nodeId;
    for (const [name, type, description] of VARIABLES) {
      this.vars[name] = ns.addVariable({
        nodeId: `Northbound/${name}`,
        browseName: name,
        description,
        parent: object,
        dataType: type,
        value: { statusCode: StatusCodes.BadWaitingForInitialData },
      });
    }
    this.show(undefined);
  }

  /** Shows `source()` every second (undefined: no northbound configured). */
  follow(source: () => EdgeNodeStatus | undefined): void {
    this.stop();
    this.show(source());
    this.timer = setInterval(() => this.show(source()), 1000);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }

  show(s: EdgeNodeStatus | undefined): void {
    this.set("Enabled", BuiltinType.Boolean, s !== undefined);
    if (s === undefined) {
      this.set("Connected", BuiltinType.Boolean, false);
      this.set("State", BuiltinType.String, "stopped");
      return;
    }
    this.set("Connected", BuiltinType.Boolean, s.connected);
    this.set("State", BuiltinType.String, s.phase);
    this.set("Broker", BuiltinType.String, s.broker);
    this.set("LastError", BuiltinType.String, s.lastError);
    this.set("BdSeq", BuiltinType.UInt32, Math.max(0, s.bdSeq));
    if (s.primaryHostOnline === undefined) this.setStatus("PrimaryHostOnline", StatusCodes.BadNotSupported);
    else this.set("PrimaryHostOnline", BuiltinType.Boolean, s.primaryHostOnline);
    this.set("MessagesPublished", BuiltinType.UInt64, BigInt(s.messagesPublished));
    this.set("MetricsPublished", BuiltinType.UInt64, BigInt(s.metricsPublished));
    this.set("Buffered", BuiltinType.UInt64, BigInt(s.buffered));
    this.set("Waiting", BuiltinType.UInt64, BigInt(s.waiting));
    this.set("Replayed", BuiltinType.UInt64, BigInt(s.replayed));
    this.set("Dropped", BuiltinType.UInt64, BigInt(s.dropped));
    this.set("CommandsReceived", BuiltinType.UInt64, BigInt(s.commandsReceived));
    this.set("CommandsRefused", BuiltinType.UInt64, BigInt(s.commandsRefused));
  }

  private set(name: Name, type: BuiltinType, value: unknown): void {
    const v = this.vars[name];
    if (v.value.value?.value === value && v.value.statusCode === undefined) return;
    this.ns.setValue(v, { value: { dataType: type, arrayType: VariantArrayType.Scalar, value }, sourceTimestamp: Date.now() });
  }

  private setStatus(name: Name, status: number): void {
    const v = this.vars[name];
    if (v.value.statusCode === status) return;
    this.ns.setValue(v, { statusCode: status, sourceTimestamp: Date.now() });
  }
}
