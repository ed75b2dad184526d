// What services see of the server: configuration, the address space and the session table.
// An interface, so that services do not import the server object that wires them.
import type { NamespaceRegistry } from "../address-space/namespace-registry.js";
import type { HistoryBackend } from "../history/history.js";
import type { ApplicationDescription, EndpointDescription } from "../ua/generated/types.js";
import type { ServiceLimits } from "./limits.js";
import type { SessionManager } from "./session.js";

export interface ServerCore {
  readonly limits: Readonly<ServiceLimits>;
  readonly registry: NamespaceRegistry;
  readonly sessions: SessionManager;
  readonly application: ApplicationDescription;
  readonly allowAnonymous: boolean;
  /** History (SQLite) for HistoryRead; undefined when the gateway keeps none. */
  readonly history?: HistoryBackend;
  /** The endpoints offered, with URLs built for the host name the client used. */
  endpoints(endpointUrl: string | undefined): EndpointDescription[];
}
