// The service table: every service the server answers. Anything else is BadServiceUnsupported.
import { read, write } from "../services/attribute.js";
import { findServers, getEndpoints } from "../services/discovery.js";
import { createMonitoredItems, deleteMonitoredItems, modifyMonitoredItems, setMonitoringMode, setTriggering } from "../services/monitored-item.js";
import { historyRead } from "../services/history.js";
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

export const SERVICES: readonly ServiceDefinition[] = [
  getEndpoints,
  findServers,
  createSession,
  activateSession,
  closeSession,
  cancel,
  browse,
  browseNext,
  translateBrowsePathsToNodeIds,
  registerNodes,
  unregisterNodes,
  read,
  write,
  createSubscription,
  modifySubscription,
  setPublishingMode,
  deleteSubscriptions,
  transferSubscriptions,
  publish,
  republish,
  createMonitoredItems,
  modifyMonitoredItems,
  setMonitoringMode,
  setTriggering,
  deleteMonitoredItems,
  historyRead,
];
