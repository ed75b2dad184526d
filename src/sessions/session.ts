// Sessions (Part 4 §5.6): created on one channel, activated, bound to the channel that last
// activated them, closed by CloseSession or by their timeout. One sweep timer serves all sessions.
import { randomBytes } from "node:crypto";
import type { NodeId } from "../ua/builtins.js";
import { IdType } from "../ua/builtins.js";
import { nodeIdKey } from "../ua/node-id.js";
import { BinaryWriter } from "../ua/binary-writer.js";
import { encodeNodeId } from "../ua/builtin-codec.js";
import { getInt32 } from "../ua/le.js";
import type { SecureChannel } from "../security/secure-channel.js";
import type { RequestContext } from "../address-space/node-manager.js";

let nextSessionNumber = 1;

export class Session {
  readonly sessionId: NodeId;
  readonly authenticationToken: NodeId;
  /** Map key of the authentication token. */
  readonly tokenKey: string | number;
  /** The authentication token as a request carries it (Part 6 §5.2.2.9: an opaque NodeId). */
  readonly tokenWire: Buffer;
  readonly name: string;
  readonly timeout: number;
  readonly createdAt: number;
  lastActivity: number;
  activated = false;
  closed = false;
  channel: SecureChannel;
  serverNonce: Buffer;
  role: RequestContext["role"] = "viewer";
  /** Who activated the session ("" anonymous, user:<name>, cert:<thumbprint>); checked when another channel takes it over. */
  userId = "";
  /** Browse continuation points by their base64 id, bounded by maxBrowseContinuationPoints (services/view.ts owns what they hold). */
  readonly browseContinuations = new Map<string, unknown>();
  /** HistoryRead continuation points by their base64 id (services/history.ts owns the values). */
  readonly historyContinuations = new Map<string, unknown>();

  constructor(channel: SecureChannel, name: string, timeout: number, now: number, namespace = 0) {
    // Session ids are public (they appear in diagnostics); the authentication token is the secret.
    // Part 4 §5.6.2: the SessionId is the NodeId of the session's diagnostics object.
    this.sessionId = { namespace, idType: IdType.Numeric, value: 0x10000 + nextSessionNumber++ };
    this.authenticationToken = { namespace: 0, idType: IdType.Opaque, value: randomBytes(32) };
    this.tokenKey = nodeIdKey(this.authenticationToken);
    const w = new BinaryWriter(Buffer.allocUnsafe(64));
    encodeNodeId(w, this.authenticationToken);
    this.tokenWire = Buffer.from(w.buffer.subarray(0, w.pos));
    this.idText = String(this.sessionId.value);
    this.channel = channel;
    this.name = name;
    this.timeout = timeout;
    this.createdAt = now;
    this.lastActivity = now;
    this.serverNonce = randomBytes(32);
  }

  /** RequestContext.sessionId, made once rather than with every request. */
  private readonly idText: string;

  /** The RequestContext handed to node managers for this session's requests. */
  context(now: number): RequestContext {
    return { sessionId: this.idText, role: this.role, now };
  }
}

export interface SessionManagerOptions {
  maxSessions: number;
  minSessionTimeout: number;
  maxSessionTimeout: number;
  /** How often timeouts are checked; defaults to 1 s. */
  sweepInterval?: number;
  /** Called after a session is removed (closed, timed out or shut down). */
  onSessionClosed?: (session: Session, reason: SessionCloseReason) => void;
  /** Namespace of new SessionIds: the one that shows the sessions' diagnostics objects (src/diagnostics); default 0. */
  sessionNamespace?: () => number;
}

/**
 * Why a session ended: the client closed it, it timed out, the server made room for a new one
 * (evicted), its user lost its rights (revoked, users reload), or the server stopped.
 */
export type SessionCloseReason = "closed" | "timeout" | "evicted" | "revoked" | "shutdown";

export class SessionManager {
  private readonly byToken = new Map<string | number, Session>();
  /** The session `find` returned last (it may have closed since: `find` checks). */
  private lastFound: Session | undefined;
  private readonly options: SessionManagerOptions;
  private sweepTimer: NodeJS.Timeout | undefined;

  constructor(options: SessionManagerOptions) {
    this.options = options;
  }

  get size(): number {
    return this.byToken.size;
  }

  start(): void {
    if (this.sweepTimer) return;
    this.sweepTimer = setInterval(sweep, this.options.sweepInterval ?? 1000, this);
    this.sweepTimer.unref();
  }

  /** Part 4 §5.6.2: the server revises the requested timeout into its configured bounds. */
  reviseTimeout(requested: number): number {
    const { minSessionTimeout, maxSessionTimeout } = this.options;
    if (!(requested > 0)) return maxSessionTimeout;
    return Math.min(maxSessionTimeout, Math.max(minSessionTimeout, requested));
  }

  /**
   * A new session, or undefined when the cap is reached with every session activated
   * (BadTooManySessions). Part 4 §5.6.2.1: against misbehaving clients and denial of service,
   * the server closes the oldest session that is not activated rather than refuse a new one.
   */
  create(channel: SecureChannel, name: string, requestedTimeout: number, now: number): Session | undefined {
    if (this.byToken.size >= this.options.maxSessions) {
      const idle = this.oldestNotActivated();
      if (idle === undefined) return undefined;
      this.close(idle, "evicted");
    }
    const session = new Session(channel, name, this.reviseTimeout(requestedTimeout), now, this.options.sessionNamespace?.() ?? 0);
    this.byToken.set(session.tokenKey, session);
    channel.sessionCount++;
    return session;
  }

  /** Sessions iterate in creation order (a Map keeps insertion order). */
  private oldestNotActivated(): Session | undefined {
    for (const session of this.byToken.values()) if (!session.activated) return session;
    return undefined;
  }

  /**
   * The session of a request's token. A connection's requests come in runs (one socket read
   * carries hundreds), so the last session found is tried first, by comparing the token's bytes:
   * the Map key of an opaque token is a base64 string, made anew for every lookup.
   */
  find(authenticationToken: NodeId): Session | undefined {
    const last = this.lastFound;
    if (last !== undefined && !last.closed && (last.authenticationToken === authenticationToken || sameOpaqueToken(last.authenticationToken, authenticationToken))) return last;
    const session = this.byToken.get(nodeIdKey(authenticationToken));
    this.lastFound = session;
    return session;
  }

  /**
   * The session `find` returned last, when buf[at, end) begins with its token as a request
   * encodes it (the RequestHeader's first field); before the request is decoded, so that the
   * decoder can take the session's own token (BinaryReader.know) rather than copy the bytes.
   */
  lastAt(buf: Buffer, at: number, end: number): Session | undefined {
    const last = this.lastFound;
    if (last === undefined || last.closed) return undefined;
    const wire = last.tokenWire;
    const n = wire.length;
    if (end - at < n) return undefined;
    // Four bytes at a time (the token is 39 bytes: 7 of header, 32 random).
    let i = 0;
    for (; i + 4 <= n; i += 4) if (getInt32(buf, at + i) !== getInt32(wire, i)) return undefined;
    for (; i < n; i++) if (buf[at + i] !== wire[i]) return undefined;
    return last;
  }

  /** Moves a session to the channel that activated it (Part 4 §5.6.3: a new channel may take it over). */
  bind(session: Session, channel: SecureChannel): void {
    if (session.channel === channel) return;
    session.channel.sessionCount--;
    session.channel = channel;
    channel.sessionCount++;
  }

  close(session: Session, reason: SessionCloseReason = "closed"): void {
    if (session.closed) return;
    session.closed = true;
    this.byToken.delete(session.tokenKey);
    if (this.lastFound === session) this.lastFound = undefined;
    session.channel.sessionCount--;
    session.browseContinuations.clear();
    session.historyContinuations.clear();
    this.options.onSessionClosed?.(session, reason);
  }

  /** Closes sessions whose timeout passed without a request (Part 4 §5.6.2). */
  expire(now: number): void {
    for (const session of this.byToken.values()) {
      if (now - session.lastActivity > session.timeout) this.close(session, "timeout");
    }
  }

  closeAll(): void {
    for (const session of [...this.byToken.values()]) this.close(session, "shutdown");
    if (this.sweepTimer) clearInterval(this.sweepTimer);
    this.sweepTimer = undefined;
  }

  sessions(): IterableIterator<Session> {
    return this.byToken.values();
  }
}

function sweep(manager: SessionManager): void {
  manager.expire(Date.now());
}

/** Both opaque NodeIds of namespace 0 with the same bytes (session tokens are made so). */
function sameOpaqueToken(ours: NodeId, theirs: NodeId): boolean {
  return (
    theirs.idType === IdType.Opaque &&
    theirs.namespace === ours.namespace &&
    Buffer.isBuffer(theirs.value) &&
    (ours.value as Buffer).equals(theirs.value)
  );
}
