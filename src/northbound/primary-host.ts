// The Primary Host Application's STATE (Sparkplug 3.0 §4.2.3, §5.4, §5.5): a retained JSON
// message on spBv1.0/STATE/<host id>, {"online": true|false, "timestamp": <ms>}, published by
// the host at each CONNECT (its birth) and registered as its will (its death, with the same
// timestamp as the birth of that session).
//
// The rules an edge node follows (§5.4 tck-id-message-flow-edge-node-birth-publish-phid-wait,
// -wait-id, -wait-online, -wait-timestamp; §5.5 tck-id-operational-behavior-edge-node-
// termination-host-offline, -offline-timestamp):
// - the host id is the last topic level, matched exactly (case-sensitive);
// - a message counts only if its timestamp is not older than the last one that counted: an
//   offline STATE of an earlier host session (a late will) must not end this one;
// - births wait for online=true; online=false while born means NDEATH, disconnect, start again;
// - each MQTT session of the edge node waits for a STATE of its own (the retained one, delivered
//   on subscribe): a broker restarted without persistence no longer holds the host's STATE, and
//   births sent before the host is back would reach nobody. The timestamp floor stays.

export interface HostState {
  readonly online: boolean;
  readonly timestamp: number;
}

/** The STATE payload, or a reason why it is not one. */
export function parseState(payload: Buffer): HostState | string {
  let v: unknown;
  try {
    v = JSON.parse(payload.toString("utf8"));
  } catch {
    return "not JSON";
  }
  if (typeof v !== "object" || v === null) return "not a JSON object";
  const o = v as Record<string, unknown>;
  if (typeof o.online !== "boolean") return "no boolean 'online'";
  if (typeof o.timestamp !== "number" || !Number.isFinite(o.timestamp) || o.timestamp < 0) return "no numeric 'timestamp'";
  return { online: o.online, timestamp: o.timestamp };
}

/** What the edge node knows of its primary host: the last STATE that counted. */
export class PrimaryHostTracker {
  private last: HostState | undefined;

  constructor(readonly hostId: string) {}

  get topic(): string {
    return `spBv1.0/STATE/${this.hostId}`;
  }

  get online(): boolean {
    return this.last?.online === true;
  }

  get known(): boolean {
    return this.last !== undefined;
  }

  /** A new MQTT session of the edge node: the host is online once a STATE of this session says so. */
  newSession(): void {
    if (this.last !== undefined) this.last = { online: false, timestamp: this.last.timestamp };
  }

  /** Applies a STATE; returns it when it counts, undefined when it is stale. */
  apply(state: HostState): HostState | undefined {
    if (this.last !== undefined && state.timestamp < this.last.timestamp) return undefined;
    this.last = state;
    return state;
  }
}
