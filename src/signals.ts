// Signals from the first instruction on. Node's default for SIGHUP, SIGTERM and SIGINT ends the
// process at once (SIGHUP with "Hangup", status 129): a `systemctl reload` or a stop sent while
// the gateway is still loading its modules, opening its files or starting its page would kill
// it half-started. src/cli.ts calls holdSignals() before it loads anything else: from then on
// these signals are kept, not obeyed, until the command decides. `fieldgate run` takes them
// (takeSignals: a stop is done in order, a reload queued until the gateway is up); the other
// commands give them back (releaseSignals: the defaults again, and a signal that came meanwhile
// ends the process as it would have).
//
// cli.ts imports this file as a module of its own; the gateway's bundle (src/build/bundle.ts) has
// its own copy of it. The kept signals live on a global under a registered symbol, so that both
// copies see the same ones.

// SIGHUP last: once a SIGHUP listener shows in /proc/<pid>/status (SigCgt), all are held (the
// tests send their first signal at that moment). Node itself catches SIGINT and SIGTERM from its
// start only to reset the terminal and end the process.
const SIGNALS = ["SIGTERM", "SIGINT", "SIGHUP"] as const;
export type HeldSignal = (typeof SIGNALS)[number];

interface Held {
  /** Signals received while nobody took them, in order. */
  readonly received: HeldSignal[];
  /** Who takes them now (undefined: they are kept in `received`). */
  handler: ((signal: HeldSignal) => void) | undefined;
  readonly listener: (signal: NodeJS.Signals) => void;
  installed: boolean;
}

const KEY = Symbol.for("fieldgate.heldSignals");

function held(): Held {
  const g = globalThis as { [KEY]?: Held };
  if (g[KEY] === undefined) {
    const h: Held = {
      received: [],
      handler: undefined,
      listener: (signal) => {
        const s = signal as HeldSignal;
        if (h.handler !== undefined) h.handler(s);
        else h.received.push(s);
      },
      installed: false,
    };
    g[KEY] = h;
  }
  return g[KEY];
}

/** From now on SIGHUP, SIGTERM and SIGINT are kept instead of ending the process. */
export function holdSignals(): void {
  const h = held();
  if (h.installed) return;
  h.installed = true;
  for (const s of SIGNALS) process.on(s, h.listener);
}

/**
 * The signals go to `handler`: first those kept so far, in the order they came, then each as it
 * comes. Holds them first when holdSignals() was not called (the gateway run without src/cli.ts).
 */
export function takeSignals(handler: (signal: HeldSignal) => void): void {
  holdSignals();
  const h = held();
  h.handler = handler;
  for (const s of h.received.splice(0)) handler(s);
}

/** The defaults again; a signal kept meanwhile is sent again, to end the process as it would have. */
export function releaseSignals(): void {
  const h = held();
  if (h.installed) for (const s of SIGNALS) process.off(s, h.listener);
  h.installed = false;
  h.handler = undefined;
  const first = h.received.splice(0)[0];
  if (first !== undefined) process.kill(process.pid, first);
}
