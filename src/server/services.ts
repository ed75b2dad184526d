// The service table: every service the server answers. Anything else is BadServiceUnsupported.
// Session services, Write and some subscription services are hooked for diagnostics and audit
// events (src/services/service-hooks.ts); Read, Browse and Publish run as they are.
import { read, write } from "../services/attribute.js";
import { findServers, getEndpoints } from "../services/discovery.js";
import { createMonitoredItems, deleteMonitoredItems, modifyMonitoredItems, setMonitoringMode, setTriggering } from "../services/monitored-item.js";
import { historyRead } from "../services/history.js";
import { call } from "../services/method.js";
import { activateSession, cancel, closeSession, createSession } from "../services/session.js";
import {
  createSubscription,
  deleteSubscriptions,
  modifySubscription,
  publish,
  republish,
  setPublishingMode,
  transferSubscriptions,
} from "../services/subscription.js";
import { browse, browseNext, registerNodes, translateBrowsePathsToNodeIds, unregisterNodes } from "../services/view.js";
import type { ServiceDefinition } from "../services/service-table.js";
import {
  hookActivateSession,
  hookCloseSession,
  hookCreateSession,
  hookCreateSubscription,
  hookModifySubscription,
  hookRepublish,
  hookSetPublishingMode,
  hookTransferSubscriptions,
  hookWrite,
} from "../services/service-hooks.js";

export const SERVICES: readonly ServiceDefinition[] = [
  getEndpoints,
  findServers,
  hookCreateSession(createSession),
  hookActivateSession(activateSession),
  hookCloseSession(closeSession),
  cancel,
  browse,
  browseNext,
  translateBrowsePathsToNodeIds,
  registerNodes,
  unregisterNodes,
  read,
  hookWrite(write),
  hookCreateSubscription(createSubscription),
  hookModifySubscription(modifySubscription),
  hookSetPublishingMode(setPublishingMode),
  deleteSubscriptions,
  hookTransferSubscriptions(transferSubscriptions),
  publish,
  hookRepublish(republish),
  createMonitoredItems,
  modifyMonitoredItems,
  setMonitoringMode,
  setTriggering,
  deleteMonitoredItems,
  historyRead,
  call,
];
