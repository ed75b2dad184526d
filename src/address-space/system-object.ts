// Objects/System (ns=1;i=2 in the device namespace): the gateway's own health, sampled at a
// modest rate on the process's DeadlineScheduler (one group, no timer of its own).
//
// Sources are read directly, not through `systeminformation`: its CPU load, temperature and disk
// calls run execSync/exec of shell pipelines on Linux, which stall the event loop for tens of ms,
// so every poll due meanwhile would be late by as much; and loading it costs resident memory for
// the two calls (memory, uptime) that remained. So: CPU load from os.cpus() tick deltas (the same
// computation, minus the spawn), memory from an asynchronous read of /proc/meminfo (MemAvailable,
// as `free` shows it; os.totalmem/os.freemem elsewhere), uptime from os.uptime(), the temperature
// from /sys/class/thermal, and the disk of the data partition from statfs on dataDir itself,
// which also names the right partition without matching mount points.
import { cpus, freemem, totalmem, uptime } from "node:os";
import { readFile, readdir, statfs } from "node:fs/promises";
import type { StatsFs } from "node:fs";
import { dirname } from "node:path";
import { BuiltinType, VariantArrayType, numericNodeId, type NodeId } from "../ua/builtins.js";
import { DataTypeIds, ObjectIds, VariableTypeIds } from "../ua/generated/node-ids.js";
import { StatusCodes } from "../ua/generated/status-codes.js";
import { EUInformationCodec } from "../ua/generated/types.js";
import { UNECE_NAMESPACE_URI, unitByDisplayName } from "../ua/units.js";
import type { HistoryWriterStats } from "../history/sample-queue.js";
import type { LatenessHistogram } from "../sampling/lateness.js";
import type { DeadlineScheduler, ScheduledGroup } from "../sampling/scheduler.js";
import { readUpdateStatus, type UpdateStatus } from "../update/status.js";
import { SYSTEM_OBJECT_ID } from "./device-namespace.js";
import type { MemoryNamespace, MemoryVariable } from "./memory-namespace.js";

export interface SystemObjectOptions {
  /** Folder whose partition's disk use is shown (the gateway's dataDir). */
  readonly dataDir: string;
  /** Sampling interval, ms (default 10 s). */
  readonly interval?: number;
  /** Where the thermal zones are (tests point it elsewhere). */
  readonly thermalDir?: string;
  /** Lateness of device polls; read and reset at every sample. */
  readonly pollLateness?: LatenessHistogram;
  /** The history writer's counters, shown as History* (a full disk shows as HistoryWriting Bad). */
  readonly history?: { readonly stats: Readonly<HistoryWriterStats>; readonly queued: number };
  /** Running version, root slot and last update (default: read from the appliance's files, src/update/status.ts). */
  readonly updateStatus?: () => Promise<UpdateStatus>;
}

/** name, built-in type, UNECE display name of the unit ("" for none), description. */
const VARIABLES = [
  ["CpuLoad", BuiltinType.Double, "%", "CPU load of the whole machine over the last interval, percent of all cores."],
  ["CpuTemperature", BuiltinType.Double, "°C", "CPU temperature (BadNotSupported where the machine has no readable sensor)."],
  ["MemoryTotal", BuiltinType.UInt64, "byte", "Physical memory."],
  ["MemoryAvailable", BuiltinType.UInt64, "byte", "Memory available to new work without swapping."],
  ["MemoryUsedPercent", BuiltinType.Double, "%", "Memory in use, percent of MemoryTotal."],
  ["DiskTotal", BuiltinType.UInt64, "byte", "Size of the partition that holds dataDir (history, certificates)."],
  ["DiskAvailable", BuiltinType.UInt64, "byte", "Space available on that partition."],
  ["DiskUsedPercent", BuiltinType.Double, "%", "Space in use on that partition, percent."],
  ["Uptime", BuiltinType.Double, "s", "Seconds since the machine booted."],
  ["ProcessUptime", BuiltinType.Double, "s", "Seconds since the gateway started."],
  ["ProcessMemory", BuiltinType.UInt64, "byte", "Resident memory of the gateway process."],
  ["PollLatenessP50", BuiltinType.Double, "ms", "Median lateness of device polls against their deadlines over the last interval (BadNoData without polls)."],
  ["PollLatenessP99", BuiltinType.Double, "ms", "99th percentile lateness of device polls over the last interval."],
  ["PollLatenessMax", BuiltinType.Double, "ms", "Largest lateness of a device poll over the last interval."],
  ["Polls", BuiltinType.UInt32, "", "Device poll slots due over the last interval."],
  ["HistoryWriting", BuiltinType.Boolean, "", "True while history is being stored; false (with a Bad status) while writes to the database fail, e.g. on a full disk."],
  ["HistoryRecorded", BuiltinType.UInt64, "", "Samples handed to the history writer since start."],
  ["HistoryStored", BuiltinType.UInt64, "", "Samples committed to the history database since start."],
  ["HistoryQueued", BuiltinType.UInt32, "", "Samples waiting to be written."],
  ["HistoryDropped", BuiltinType.UInt64, "", "Samples dropped unwritten because the queue was full (the disk failed or could not keep up)."],
  ["HistoryFailedFlushes", BuiltinType.UInt32, "", "Writes to the history database that failed since start."],
  ["RunningVersion", BuiltinType.String, "", "Version of the system running: the appliance image's (os-release IMAGE_VERSION), else the package's."],
  ["RootSlot", BuiltinType.String, "", "Root partition the system booted from, A or B (BadNotSupported when not booted from an A/B slot of the appliance image)."],
  ["LastUpdateResult", BuiltinType.String, "", "Outcome of the last update: none, or installed, succeeded, failed or refused, with what happened and when (README, Updates)."],
] as const;

type Name = (typeof VARIABLES)[number][0];

/** The System object and its sampler. */
export class SystemObject {
  readonly nodeId: NodeId;
  private readonly ns: MemoryNamespace;
  private readonly vars = {} as Record<Name, MemoryVariable>;
  private readonly options: SystemObjectOptions;
  private group: ScheduledGroup | undefined;
  private scheduler: DeadlineScheduler | undefined;
  private lastTicks: { idle: number; total: number } | undefined;

  constructor(ns: MemoryNamespace, options: SystemObjectOptions) {
    this.ns = ns;
    this.options = options;
    this.nodeId = ns.addObject({
      nodeId: numericNodeId(SYSTEM_OBJECT_ID, ns.namespaceIndex),
      browseName: "System",
      description: "Health of the gateway itself.",
      parent: numericNodeId(ObjectIds.ObjectsFolder),
    }).nodeId;
    for (const [name, type, unit, description] of VARIABLES) {
      const id = `System/${name}`;
      const u = unitByDisplayName(unit);
      const v = ns.addVariable({
        nodeId: id,
        browseName: name,
        description,
        parent: this.nodeId,
        dataType: type,
        typeDefinition: numericNodeId(u ? VariableTypeIds.BaseAnalogType : VariableTypeIds.BaseDataVariableType),
        minimumSamplingInterval: options.interval ?? 10_000,
        value: { statusCode: StatusCodes.BadWaitingForInitialData },
      });
      if (u) {
        ns.addProperty(v.nodeId, {
          nodeId: `${id}/EngineeringUnits`,
          browseName: { namespaceIndex: 0, name: "EngineeringUnits" },
          dataType: DataTypeIds.EUInformation,
          value: {
            dataType: BuiltinType.ExtensionObject,
            arrayType: VariantArrayType.Scalar,
            value: {
              typeId: numericNodeId(EUInformationCodec.binaryEncodingId),
              body: { namespaceUri: UNECE_NAMESPACE_URI, unitId: u.unitId, displayName: { locale: "en", text: u.displayName }, description: { locale: "en", text: u.description } },
            },
          },
        });
      }
      this.vars[name] = v;
    }
  }

  variable(name: Name): MemoryVariable {
    return this.vars[name];
  }

  start(scheduler: DeadlineScheduler): void {
    this.scheduler = scheduler;
    this.lastTicks = cpuTicks();
    this.group = scheduler.every(this.options.interval ?? 10_000, { sample: () => this.sample(), label: "System object" });
  }

  stop(): void {
    if (this.group && this.scheduler) this.scheduler.cancel(this.group);
    this.group = undefined;
  }

  /** One sample of every variable; a source that fails leaves its variables Bad. */
  async sample(): Promise<void> {
    const [mem, temperature, disk, update] = await Promise.allSettled([
      memoryInfo(),
      this.temperature(),
      diskOf(this.options.dataDir),
      (this.options.updateStatus ?? readUpdateStatus)(),
    ]);
    const now = Date.now();
    const set = (name: Name, value: number | bigint | string | undefined, status: number = StatusCodes.BadResourceUnavailable) => {
      const v = this.vars[name];
      this.ns.setValue(
        v,
        value === undefined
          ? { statusCode: status, sourceTimestamp: now }
          : { value: { dataType: v.expectedType as BuiltinType, arrayType: VariantArrayType.Scalar, value }, sourceTimestamp: now },
      );
    };
    const ticks = cpuTicks();
    const last = this.lastTicks;
    this.lastTicks = ticks;
    const total = last ? ticks.total - last.total : 0;
    set("CpuLoad", total > 0 ? round2(100 * (1 - (ticks.idle - last!.idle) / total)) : undefined);
    set("CpuTemperature", temperature.status === "fulfilled" ? temperature.value : undefined, StatusCodes.BadNotSupported);
    if (mem.status === "fulfilled") {
      set("MemoryTotal", BigInt(mem.value.total));
      set("MemoryAvailable", BigInt(mem.value.available));
      set("MemoryUsedPercent", round2(100 * (1 - mem.value.available / mem.value.total)));
    } else {
      for (const n of ["MemoryTotal", "MemoryAvailable", "MemoryUsedPercent"] as const) set(n, undefined);
    }
    if (disk.status === "fulfilled") {
      const { blocks, bavail, bfree, bsize } = disk.value;
      set("DiskTotal", BigInt(blocks) * BigInt(bsize));
      set("DiskAvailable", BigInt(bavail) * BigInt(bsize));
      set("DiskUsedPercent", blocks > 0 ? round2(100 * (1 - bfree / blocks)) : undefined);
    } else {
      for (const n of ["DiskTotal", "DiskAvailable", "DiskUsedPercent"] as const) set(n, undefined);
    }
    if (update.status === "fulfilled") {
      set("RunningVersion", update.value.runningVersion);
      set("RootSlot", update.value.rootSlot, StatusCodes.BadNotSupported);
      set("LastUpdateResult", update.value.lastResult);
    } else {
      for (const n of ["RunningVersion", "RootSlot", "LastUpdateResult"] as const) set(n, undefined);
    }
    set("Uptime", uptime());
    set("ProcessUptime", round2(process.uptime()));
    set("ProcessMemory", BigInt(process.memoryUsage.rss()));
    const polls = this.options.pollLateness;
    if (polls) {
      const any = polls.count > 0;
      set("PollLatenessP50", any ? polls.quantile(0.5) : undefined, StatusCodes.BadNoData);
      set("PollLatenessP99", any ? polls.quantile(0.99) : undefined, StatusCodes.BadNoData);
      set("PollLatenessMax", any ? round2(polls.max) : undefined, StatusCodes.BadNoData);
      set("Polls", polls.count);
      polls.reset();
    }
    const history = this.options.history;
    if (history) {
      const st = history.stats;
      // The value (false) says what happens; the status makes a client's alarm on Bad fire too.
      const w = this.vars.HistoryWriting;
      this.ns.setValue(w, {
        value: { dataType: BuiltinType.Boolean, arrayType: VariantArrayType.Scalar, value: !st.failing },
        statusCode: st.failing ? StatusCodes.BadResourceUnavailable : StatusCodes.Good,
        sourceTimestamp: now,
      });
      set("HistoryRecorded", BigInt(st.recorded));
      set("HistoryStored", BigInt(st.flushed));
      set("HistoryQueued", history.queued);
      set("HistoryDropped", BigInt(st.dropped));
      set("HistoryFailedFlushes", st.failedFlushes);
    }
  }

  /** °C of the CPU's thermal zone (type naming the CPU or SoC), else of the first zone. */
  private async temperature(): Promise<number | undefined> {
    const dir = this.options.thermalDir ?? "/sys/class/thermal";
    const zones = (await readdir(dir)).filter((z) => z.startsWith("thermal_zone")).sort();
    if (zones.length === 0) return undefined;
    const types = await Promise.all(zones.map((z) => readFile(`${dir}/${z}/type`, "utf8").then((t) => t.trim().toLowerCase(), () => "")));
    const pick = types.findIndex((t) => /cpu|x86_pkg|soc|core/.test(t));
    const milli = Number((await readFile(`${dir}/${zones[pick < 0 ? 0 : pick]}/temp`, "utf8")).trim());
    return Number.isFinite(milli) ? milli / 1000 : undefined;
  }
}

function cpuTicks(): { idle: number; total: number } {
  let idle = 0;
  let total = 0;
  for (const c of cpus()) {
    const t = c.times;
    idle += t.idle;
    total += t.user + t.nice + t.sys + t.idle + t.irq;
  }
  return { idle, total };
}

/** statfs of the folder, or of its nearest existing parent (dataDir may not exist yet). */
/** Total and available memory in bytes (/proc/meminfo on Linux: MemAvailable counts reclaimable cache). */
export async function memoryInfo(meminfo = "/proc/meminfo"): Promise<{ total: number; available: number }> {
  let text: string;
  try {
    text = await readFile(meminfo, "latin1");
  } catch {
    return { total: totalmem(), available: freemem() };
  }
  const kib = (key: string): number | undefined => {
    const m = new RegExp(`^${key}:\\s+(\\d+) kB`, "m").exec(text);
    return m ? Number(m[1]) * 1024 : undefined;
  };
  const total = kib("MemTotal") ?? totalmem();
  return { total, available: kib("MemAvailable") ?? kib("MemFree") ?? freemem() };
}

async function diskOf(path: string): Promise<StatsFs> {
  for (let p = path; ; p = dirname(p)) {
    try {
      return await statfs(p);
    } catch (err) {
      if (dirname(p) === p || (err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
    }
  }
}

function round2(n: number): number {
  return Math.round(n * 100) / 100;
}
