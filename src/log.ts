// The gateway's log: levels, one line per event, and the fields the journal keeps.
//
// Under systemd (fieldgate.service: StandardOutput=journal, SyslogIdentifier=fieldgate) stdout
// is a stream to journald, which reads a "<N>" prefix on each line as its PRIORITY (sd-daemon(3),
// SyslogLevelPrefix= defaults to yes) and stamps SYSLOG_IDENTIFIER from the unit, so that
// `journalctl -u fieldgate -p warning` shows the warnings and errors alone. Node has no AF_UNIX
// datagram sockets, so the native protocol (arbitrary KEY=value fields) is out of reach without
// an addon; the stream carries the two fields operators filter on. The journal is recognised as
// systemd.exec(5) says: $JOURNAL_STREAM holds the device and inode of the stream, compared with
// those of stdout. On a terminal or a pipe the lines are plain: "fieldgate: ..." on stdout, and
// warnings and errors on stderr with their level.
//
// The last lines are kept in a ring (the status page shows them); recording one is a slot
// write, no array grows.
import { fstatSync } from "node:fs";
import type { LogLevel } from "./config/gateway-config.js";

export { LOG_LEVELS, type LogLevel } from "./config/gateway-config.js";

/** syslog(3) priorities, as the journal's PRIORITY field holds them. */
const PRIORITY: Readonly<Record<LogLevel, number>> = { error: 3, warning: 4, notice: 5, info: 6, debug: 7 };

/** What the server's parts log through (info and warn are all most of them need). */
export interface ServerLog {
  info(message: string): void;
  warn(message: string): void;
}

export interface LogRecord {
  /** 1, 2, ... in the order written: a reader asks for the lines after the last one it saw. */
  readonly seq: number;
  /** Date.now() when written. */
  readonly time: number;
  readonly level: LogLevel;
  readonly message: string;
}

export interface LoggerOptions {
  /** Lines below this level are neither written nor kept (default info). */
  readonly level?: LogLevel;
  /** Lines kept for the status page (default 200). */
  readonly keep?: number;
  /** Where lines go: (line, level). Default: stdout, or stderr for warnings and errors off the journal. */
  readonly write?: (line: string, level: LogLevel) => void;
  /** Write "<N>" journal prefixes (default: when stdout is the journal, see journalStdout()). */
  readonly journal?: boolean;
  readonly now?: () => number;
}

/** Whether stdout is the journal's stream ($JOURNAL_STREAM = "<device>:<inode>" of it). */
export function journalStdout(env: NodeJS.ProcessEnv = process.env, fd = 1): boolean {
  const stream = env.JOURNAL_STREAM;
  if (!stream) return false;
  const [dev, ino] = stream.split(":");
  try {
    const st = fstatSync(fd, { bigint: true });
    return String(st.dev) === dev && String(st.ino) === ino;
  } catch {
    return false;
  }
}

export class Logger implements ServerLog {
  private readonly threshold: number;
  private readonly journal: boolean;
  private readonly write: (line: string, level: LogLevel) => void;
  private readonly now: () => number;
  private readonly ring: (LogRecord | undefined)[];
  private seq = 0;

  constructor(options: LoggerOptions = {}) {
    this.threshold = PRIORITY[options.level ?? "info"];
    this.journal = options.journal ?? journalStdout();
    this.now = options.now ?? Date.now;
    this.ring = new Array<LogRecord | undefined>(Math.max(1, options.keep ?? 200)).fill(undefined);
    const journal = this.journal;
    this.write =
      options.write ??
      ((line, level) => {
        // In the journal the prefix carries the level; everything goes to the one stream, in order.
        if (!journal && (level === "error" || level === "warning")) process.stderr.write(line);
        else process.stdout.write(line);
      });
  }

  /** The sequence number of the last line written (0 before the first). */
  get lastSeq(): number {
    return this.seq;
  }

  error(message: string): void {
    this.log("error", message);
  }
  warn(message: string): void {
    this.log("warning", message);
  }
  notice(message: string): void {
    this.log("notice", message);
  }
  info(message: string): void {
    this.log("info", message);
  }
  debug(message: string): void {
    this.log("debug", message);
  }

  enabled(level: LogLevel): boolean {
    return PRIORITY[level] <= this.threshold;
  }

  log(level: LogLevel, message: string): void {
    if (PRIORITY[level] > this.threshold) return;
    const record: LogRecord = { seq: ++this.seq, time: this.now(), level, message };
    this.ring[record.seq % this.ring.length] = record;
    this.write(this.format(record), level);
  }

  /** The kept lines after `afterSeq`, oldest first. */
  recent(afterSeq = 0): LogRecord[] {
    const out: LogRecord[] = [];
    const n = this.ring.length;
    const first = Math.max(afterSeq + 1, this.seq - n + 1, 1);
    for (let s = first; s <= this.seq; s++) {
      const r = this.ring[s % n];
      if (r !== undefined && r.seq === s) out.push(r);
    }
    return out;
  }

  /** One line per line of the message: a journal entry per line, each with its priority. */
  private format(r: LogRecord): string {
    const lines = r.message.split("\n");
    let out = "";
    for (const line of lines) {
      if (this.journal) out += `<${PRIORITY[r.level]}>${line}\n`;
      else out += r.level === "error" || r.level === "warning" ? `fieldgate: ${r.level}: ${line}\n` : `fieldgate: ${line}\n`;
    }
    return out;
  }
}

/** A log with every level, made from any ServerLog (notice as info, error as warn, debug dropped). */
export interface LevelLog extends ServerLog {
  error(message: string): void;
  notice(message: string): void;
  debug(message: string): void;
}

export function leveled(log: ServerLog): LevelLog {
  if (log instanceof Logger) return log;
  return {
    info: (m) => log.info(m),
    warn: (m) => log.warn(m),
    error: (m) => log.warn(m),
    notice: (m) => log.info(m),
    debug: () => undefined,
  };
}
