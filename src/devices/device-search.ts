// The status page's search for devices (the editor's "Search a bus…"): discoverDevices
// (discovery.ts) run by an admin on a serial line or a TCP endpoint given in a small form, its
// progress and what it found kept for the page to ask for, the entries then added to the map
// being edited (not applied) by the composition root.
//
// One search at a time: a serial line answers one request at a time, and a search is many of
// them (a primary search of a meter bus asks every address, 0 to 250). Bounded: it ends at its deadline
// (at most MAX_SEARCH_SECONDS) or when stopped, and what was found by then is kept. It is I/O,
// not work of the event loop: its requests wait on the line, each answer is one small telegram.
//
// A line the running gateway polls is refused before anything is opened: its port is held (a
// serial port's lock), and a search would put its requests between the polls of the meters on
// it. Pausing those devices for the search is not done: a search of minutes would leave their
// values Bad and their clients without data for as long, and the link would have to be lent to
// the search while its devices' pollers wait. The message says how to search such a line.
import type { BusConfig, DeviceMap, LineSettings, MapDrivers } from "../config/device-map.js";
import { LINE_DEFAULTS } from "../config/device-map.js";
import { discoverDevices, discoveringDrivers, type DiscoveredDevice, type DiscoveringDrivers, type DiscoveryTarget } from "./discovery.js";

/** The longest a search may be given, s; and the default. */
export const MAX_SEARCH_SECONDS = 600;
export const DEFAULT_SEARCH_SECONDS = 120;
/** Progress lines kept for the page (the newest). */
const PROGRESS_LINES = 200;

export interface SearchState {
  readonly state: "idle" | "running" | "done" | "stopped" | "failed";
  readonly driver?: string;
  /** The line in words: "bus heating (/dev/ttyUSB0, 2400 baud)", "10.0.0.5:10001". */
  readonly where?: string;
  readonly by?: string;
  /** ISO 8601. */
  readonly started?: string;
  readonly deadline?: string;
  readonly ended?: string;
  readonly progress: readonly string[];
  readonly found: readonly DiscoveredDevice[];
  /** Why it failed or stopped, in words. */
  readonly message?: string;
  /** What the entries need beside them in the map: the bus they name (`buses`), for a serial line. */
  readonly sections: Readonly<Record<string, unknown>>;
}

export type SearchStart = { readonly ok: true; readonly state: SearchState } | { readonly ok: false; readonly status: 400 | 409; readonly message: string };

export interface DeviceSearchOptions {
  readonly drivers: DiscoveringDrivers & MapDrivers;
  /** The map the gateway polls now. */
  readonly running: () => DeviceMap | undefined;
  readonly log: { notice(m: string): void; warn(m: string): void };
  readonly now?: () => number;
}

const IDLE: SearchState = { state: "idle", progress: [], found: [], sections: {} };

export class DeviceSearch {
  private current: SearchState = IDLE;
  private stopper: AbortController | undefined;
  private timer: ReturnType<typeof setTimeout> | undefined;
  /** The search under way, settled when its line is closed. */
  private running: Promise<void> = Promise.resolve();
  private readonly now: () => number;

  constructor(private readonly o: DeviceSearchOptions) {
    this.now = o.now ?? Date.now;
  }

  /** The drivers that can search, in registry order. */
  drivers(): readonly string[] {
    return discoveringDrivers(this.o.drivers);
  }

  state(): SearchState {
    return this.current;
  }

  /**
   * Starts the search `body` asks for: {driver?, seconds?, timeout?} with a serial line
   * {bus: {port, baudRate?, parity?, dataBits?, stopBits?}, busName?} or an endpoint {host, port}.
   */
  start(body: Readonly<Record<string, unknown>>, user: string): SearchStart {
    if (this.current.state === "running") return { ok: false, status: 409, message: `a search by ${this.current.by} is running on ${this.current.where} until ${this.current.deadline}: stop it first` };
    const asked = this.request(body);
    if ("message" in asked) return { ok: false, status: 400, message: asked.message };
    const held = this.heldBy(asked.target);
    if (held !== undefined) return { ok: false, status: 409, message: held };
    const { driver, target, seconds, timeout, where } = asked;
    const started = this.now();
    const stopper = new AbortController();
    this.stopper = stopper;
    const progress: string[] = [];
    const sections = target.kind === "bus" ? { buses: { [target.name]: busEntry(target.bus, this.lineDefaults(driver)) } } : {};
    this.current = { state: "running", driver, where, by: user, started: iso(started), deadline: iso(started + seconds * 1000), progress, found: [], sections };
    this.timer = setTimeout(() => stopper.abort(new Error(`the time given (${seconds} s) ran out`)), seconds * 1000);
    this.o.log.notice(`status page: ${user} searches ${where} for ${driver} devices, for at most ${seconds} s`);
    const say = (m: string): void => {
      progress.push(m);
      if (progress.length > PROGRESS_LINES) progress.splice(0, progress.length - PROGRESS_LINES);
    };
    this.running = discoverDevices(this.o.drivers, driver, target, { signal: stopper.signal, progress: say, ...(timeout === undefined ? {} : { timeout }) }).then(
      (found) => this.end(stopper, { found, ...(stopper.signal.aborted ? { state: "stopped", message: reasonOf(stopper.signal) } : { state: "done" }) }),
      (err: unknown) => this.end(stopper, { found: [], state: "failed", message: inWords(err, target) }),
    );
    return { ok: true, state: this.current };
  }

  /** Ends the running search; what it found by then is kept. */
  stop(user: string): SearchState {
    if (this.current.state === "running") this.stopper?.abort(new Error(`stopped by ${user}`));
    return this.current;
  }

  /** Ends a search (the gateway stops); resolves once its line is closed. */
  close(): Promise<void> {
    this.stopper?.abort(new Error("the gateway stopped"));
    return this.running;
  }

  private end(stopper: AbortController, outcome: Pick<SearchState, "found" | "state" | "message">): void {
    if (this.stopper !== stopper) return;
    clearTimeout(this.timer);
    this.stopper = undefined;
    this.current = { ...this.current, ...outcome, ended: iso(this.now()) };
    const n = outcome.found.length;
    this.o.log.notice(`status page: the search of ${this.current.where} ${outcome.state === "failed" ? `failed: ${outcome.message}` : `${outcome.state === "stopped" ? `stopped (${outcome.message}) and ` : ""}found ${n} device${n === 1 ? "" : "s"}`}`);
  }

  /** The request in `body`, checked; or what is wrong with it. */
  private request(body: Readonly<Record<string, unknown>>): { driver: string; target: DiscoveryTarget; seconds: number; timeout: number | undefined; where: string } | { message: string } {
    const can = this.drivers();
    const driver = body.driver === undefined || body.driver === "" ? can[0] : body.driver;
    if (typeof driver !== "string" || !can.includes(driver)) return { message: `driver: expected one of the drivers that can search (${can.join(", ") || "none"}), got ${JSON.stringify(driver)}` };
    const seconds = whole(body.seconds, "seconds", 5, MAX_SEARCH_SECONDS, DEFAULT_SEARCH_SECONDS);
    if (typeof seconds === "string") return { message: seconds };
    const timeout = whole(body.timeout, "timeout", 10, 60_000, undefined);
    if (typeof timeout === "string") return { message: timeout };
    const bus = body.bus;
    if ((bus === undefined) === (body.host === undefined)) return { message: "give the serial line (bus: {port: /dev/ttyUSB0, ...}) or the endpoint (host, port)" };
    if (bus !== undefined) {
      const b = (typeof bus === "object" && bus !== null ? bus : {}) as Record<string, unknown>;
      if (typeof b.port !== "string" || !/^\/[^\0\n]{1,1023}$/.test(b.port)) return { message: `bus.port: expected a serial device such as /dev/ttyUSB0, got ${JSON.stringify(b.port)}` };
      const line = { ...LINE_DEFAULTS, ...this.lineDefaults(driver) };
      const baudRate = whole(b.baudRate, "bus.baudRate", 300, 4_000_000, line.baudRate);
      if (typeof baudRate === "string") return { message: baudRate };
      const parity = b.parity === undefined || b.parity === "" ? line.parity : b.parity;
      if (parity !== "none" && parity !== "even" && parity !== "odd") return { message: `bus.parity: expected none, even or odd, got ${JSON.stringify(parity)}` };
      const dataBits = b.dataBits === undefined ? line.dataBits : b.dataBits;
      const stopBits = b.stopBits === undefined ? line.stopBits : b.stopBits;
      if ((dataBits !== 7 && dataBits !== 8) || (stopBits !== 1 && stopBits !== 2)) return { message: "bus.dataBits: expected 7 or 8; bus.stopBits: 1 or 2" };
      const name = body.busName === undefined || body.busName === "" ? defaultBusName(b.port) : body.busName;
      if (typeof name !== "string" || !/^[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}$/.test(name)) return { message: `busName: expected a bus name of letters, digits, "_", "-" and ".", got ${JSON.stringify(name)}` };
      const config: BusConfig = { port: b.port, baudRate, parity, dataBits, stopBits, interRequestDelay: 0 };
      return { driver, seconds, timeout, target: { kind: "bus", name, bus: config }, where: `bus ${name} (${b.port}, ${baudRate} baud)` };
    }
    if (typeof body.host !== "string" || !/^[A-Za-z0-9_.:-]{1,253}$/.test(body.host)) return { message: `host: expected a host name or address, got ${JSON.stringify(body.host)}` };
    const port = whole(body.port, "port", 1, 65535, undefined);
    if (typeof port !== "number") return { message: port ?? "port: a TCP converter has no standard port: give it" };
    return { driver, seconds, timeout, target: { kind: "tcp", host: body.host, port }, where: `${body.host}:${port}` };
  }

  private lineDefaults(driver: string): Partial<LineSettings> {
    return this.o.drivers.syntaxOf(driver).lineDefaults ?? {};
  }

  /**
   * Why the running gateway holds `target`, in words; undefined when it does not. A serial line
   * is held when an enabled device of the running map is on a bus with that port (its driver's
   * bus key); an endpoint when one has that host and port, the keys a TCP target and the
   * entries found on it share.
   */
  private heldBy(target: DiscoveryTarget): string | undefined {
    const map = this.o.running();
    if (map === undefined) return undefined;
    const users: string[] = [];
    let busName = "";
    for (const d of map.devices) {
      if (!d.enabled) continue;
      const keys = d as unknown as Record<string, unknown>;
      if (target.kind === "bus") {
        const key = this.o.drivers.syntaxOf(d.driver).busKey;
        const name = key === undefined ? undefined : keys[key];
        if (typeof name === "string" && map.buses[name]?.port === target.bus.port) {
          users.push(d.name);
          busName = name;
        }
      } else if (keys.host === target.host && Number(keys.port) === target.port) {
        users.push(d.name);
      }
    }
    if (users.length === 0) return undefined;
    const list = `${users.slice(0, 5).join(", ")}${users.length > 5 ? ` and ${users.length - 5} more` : ""}`;
    if (target.kind === "bus") {
      return (
        `the gateway polls ${target.bus.port} (bus ${busName}: ${list}) and holds its port: a search needs the line to itself. ` +
        `Search a line before its bus is in the map; for a line in use, apply the map with enabled: false on its devices, search, then enable them again`
      );
    }
    return `the gateway polls ${target.host}:${target.port} (${list}): a search would put its requests between the polls. Apply the map with enabled: false on those devices, search, then enable them again`;
  }
}

/** A bus as the map writes it: the port, and the line settings that differ from the driver's defaults. */
function busEntry(bus: BusConfig, defaults: Partial<LineSettings>): Record<string, unknown> {
  const line = { ...LINE_DEFAULTS, ...defaults };
  const entry: Record<string, unknown> = { port: bus.port };
  for (const k of ["baudRate", "parity", "dataBits", "stopBits"] as const) if (bus[k] !== line[k]) entry[k] = bus[k];
  return entry;
}

/** "ttyUSB0" for /dev/ttyUSB0: a bus name from its port. */
function defaultBusName(port: string): string {
  return port.slice(port.lastIndexOf("/") + 1).replace(/[^A-Za-z0-9_.-]/g, "_") || "bus";
}

function whole<D extends number | undefined>(v: unknown, name: string, min: number, max: number, def: D): number | D | string {
  if (v === undefined || v === null || v === "") return def;
  const n = typeof v === "string" ? Number(v) : v;
  return typeof n === "number" && Number.isInteger(n) && n >= min && n <= max ? n : `${name}: expected a whole number from ${min} to ${max}, got ${JSON.stringify(v)}`;
}

function reasonOf(signal: AbortSignal): string {
  return signal.reason instanceof Error ? signal.reason.message : String(signal.reason);
}

/** A failed search in words: a serial port another program holds says so. */
function inWords(err: unknown, target: DiscoveryTarget): string {
  const m = err instanceof Error ? err.message : String(err);
  if (target.kind === "bus" && /cannot lock port|resource temporarily unavailable|EBUSY/i.test(m)) {
    return `${target.bus.port} is held by another program (its lock: ${m}): close it there (or stop it), then search again`;
  }
  return m;
}

const iso = (ms: number): string => new Date(ms).toISOString();
