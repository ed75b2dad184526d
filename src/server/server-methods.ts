// The Methods of the Server object (Part 5 §9): GetMonitoredItems (§9.1), ResendData (§9.3)
// and SetSubscriptionDurable (§9.4). Each acts on a subscription of the calling session only:
// another session's subscription is BadUserAccessDenied (Part 5 §9.1), an unknown one
// BadSubscriptionIdInvalid.
//
// SetSubscriptionDurable is answered BadNotSupported: a durable subscription would outlive the
// lifetime limits of gateway.yaml (limits.maxLifetimeCount) for hours; fieldgate keeps a
// subscription whose session is gone for its ordinary lifetime and lets another session of the
// same user take it over (TransferSubscriptions), which is what a lost connection needs.
import { MethodTable, onObject } from "../address-space/methods.js";
import type { NamespaceRegistry } from "../address-space/namespace-registry.js";
import { BuiltinType, VariantArrayType, numericNodeId, type Variant } from "../ua/builtins.js";
import { MonitoringMode } from "../ua/generated/enums.js";
import { MethodIds, ObjectIds } from "../ua/generated/node-ids.js";
import { StatusCodes } from "../ua/generated/status-codes.js";
import type { EventItems } from "../events/event-items.js";
import type { SubscriptionEngine } from "../subscriptions/engine.js";

const SERVER = numericNodeId(ObjectIds.Server);

function uint32Array(values: readonly number[]): Variant {
  return { dataType: BuiltinType.UInt32, arrayType: VariantArrayType.Array, value: values };
}

export function registerServerMethods(methods: MethodTable, registry: NamespaceRegistry, engine: SubscriptionEngine, events: EventItems): void {
  const onServer = onObject(SERVER, registry);

  methods.register({
    methodId: numericNodeId(MethodIds.Server_GetMonitoredItems),
    objectStatus: onServer,
    handler: ({ caller, inputArguments }) => {
      const sub = engine.ownedBy(caller.session, inputArguments[0].value);
      if (typeof sub === "number") return { statusCode: sub };
      const serverHandles: number[] = [];
      const clientHandles: number[] = [];
      for (const item of sub.items.values()) {
        serverHandles.push(item.id);
        clientHandles.push(item.clientHandle);
      }
      const ev = events.handles(sub);
      serverHandles.push(...ev.serverHandles);
      clientHandles.push(...ev.clientHandles);
      return { statusCode: StatusCodes.Good, outputArguments: [uint32Array(serverHandles), uint32Array(clientHandles)] };
    },
  });

  methods.register({
    methodId: numericNodeId(MethodIds.Server_ResendData),
    objectStatus: onServer,
    handler: ({ caller, inputArguments }) => {
      const sub = engine.ownedBy(caller.session, inputArguments[0].value);
      if (typeof sub === "number") return { statusCode: sub };
      // Part 5 §9.3: the current value of every data item in Reporting mode goes out again with
      // the next Publish, whether it changed or not. Event items have no current value.
      const items = [...sub.items.values()].filter((i) => i.mode === MonitoringMode.Reporting);
      for (const item of items) item.resetLast();
      engine.sampler.sampleNow(items);
      sub.resetLifetime();
      return { statusCode: StatusCodes.Good };
    },
  });

  methods.register({
    methodId: numericNodeId(MethodIds.Server_SetSubscriptionDurable),
    objectStatus: onServer,
    handler: ({ caller, inputArguments }) => {
      const sub = engine.ownedBy(caller.session, inputArguments[0].value);
      if (typeof sub === "number") return { statusCode: sub };
      return { statusCode: StatusCodes.BadNotSupported };
    },
  });
}
