// What services see of the server: configuration, the address space and the session table.
// An interface, so that services do not import the server object that wires them.
import type { NamespaceRegistry } from "../address-space/namespace-registry.js";
import type { MethodTable } from "../address-space/methods.js";
import type { ServerEvents } from "../events/server-events.js";
import type { ServerDiagnostics } from "../diagnostics/server-diagnostics.js";
import type { SubscriptionEngine } from "../subscriptions/engine.js";
import type { HistoryBackend } from "../history/history.js";
import type { ApplicationDescription, EndpointDescription } from "../ua/generated/types.js";
import type { ServiceLimits } from "./limits.js";
import type { Role } from "../sessions/roles.js";
import type { Pki } from "../security/pki.js";
import type { SessionManager } from "../sessions/session.js";
import type { UserDirectory } from "../sessions/users.js";
import type { Slicer } from "../sampling/slices.js";

export interface ServerCore {
  readonly limits: Readonly<ServiceLimits>;
  readonly registry: NamespaceRegistry;
  readonly sessions: SessionManager;
  /** Where work that grows with the request runs in slices (a Browse of many nodes). */
  readonly slicer: Slicer;
  /** Subscriptions, monitored items and Publish (Part 4 §5.12, §5.13). */
  readonly subscriptions: SubscriptionEngine;
  /** The Methods the Call service can run (Part 4 §5.11). */
  readonly methods: MethodTable;
  /** Event monitored items, the events the server raises and its audit events (src/events). */
  readonly events: ServerEvents;
  /** Base Info Diagnostics: the summary's counters, per-session and per-subscription records (src/diagnostics). */
  readonly serverDiagnostics: ServerDiagnostics;
  readonly application: ApplicationDescription;
  readonly allowAnonymous: boolean;
  /** History (SQLite) for HistoryRead; undefined when the gateway keeps none. */
  readonly history?: HistoryBackend;
  /** Role of anonymous sessions (security.anonymousRole). */
  readonly anonymousRole: Role;
  /** Users from gateway.yaml, password checks and lockout. */
  readonly users: UserDirectory;
  /**
   * The gateway's own certificate (ownCertificate, DER) and key (ownPrivateKey), and client
   * certificate validation (verifyCertificate); undefined until start() when only None is offered.
   */
  readonly pki?: Pki;
  /** The endpoints offered, with URLs built for the host name the client used. */
  endpoints(endpointUrl: string | undefined): EndpointDescription[];
}
