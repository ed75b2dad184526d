// The `history:` section of gateway.yaml (included by gateway-config.ts; src/history reads the HistoryConfig it gives).
import { duration, enumOf, integer, number, object, optional, path, size, type Infer } from "./schema.js";

const count = (description: string, def: number, max: number, min = 1) => integer({ description, default: def, min, max });

export const historySchema = object(
  {
    database: optional(
      path({ description: "The history database file (SQLite), relative to this file or absolute. Default: history.db in dataDir." }),
    ),
    flushInterval: duration({
      description: "How often queued samples are written to the database, in one transaction. Longer means fewer writes to the SD card; a crash loses at most this much.",
      default: "1s",
      min: "10ms",
      max: "10m",
    }),
    flushCount: count("Queued samples that trigger a write before flushInterval; also the most samples written in one transaction.", 10_000, 1_000_000),
    queueSize: count(
      "Samples held in memory while waiting for the disk. When full, the oldest unwritten samples are dropped (and counted).",
      100_000,
      10_000_000,
    ),
    retention: object(
      {
        maxAge: duration({ description: "Samples older than this are deleted; 0 keeps them until maxSize needs the room.", default: "30d", max: "3650d" }),
        maxSize: size({
          description: "Largest size of the database files (with the WAL). The oldest samples of every tag are deleted to stay under it; 0 = no limit.",
          default: "1GiB",
          max: "1TiB",
        }),
      },
      { description: "How long history is kept." },
    ),
    storage: object(
      {
        mode: enumOf(["every", "change"] as const, {
          description: "every: store every polled sample; change: only samples whose value or status changed. A tag's own setting in the device map wins.",
          default: "every",
        }),
        deadband: number({ description: "With mode change: a numeric change of at most this much is not stored.", default: 0, min: 0 }),
      },
      { description: "What is stored of each historized tag by default." },
    ),
    cacheSize: optional(
      size({
        description:
          "SQLite page cache of the history database. Default: four pages per historized tag, at least 8 MiB and at most 64 MiB; a smaller cache saves memory on small devices and costs CPU per flush.",
        min: "256KiB",
        max: "1GiB",
      }),
    ),
    clockSyncWait: duration({
      description:
        "On the appliance, samples taken before the clock is synchronized (NTP) are held in the queue and stored at their corrected times once it is; after this long without a synchronized clock they are stored with the clock's time as it is. 0 stores them at once.",
      default: "5m",
      max: "1d",
    }),
    maxNodesPerRead: count("Most nodes in one HistoryRead request (published as MaxNodesPerHistoryReadData).", 1000, 100_000),
    maxContinuationPoints: count("HistoryRead continuation points kept per session (published as MaxHistoryContinuationPoints).", 10, 1000),
    maxValuesPerRead: count("Most values returned by one HistoryRead request over all its nodes; the rest follows with continuation points.", 100_000, 10_000_000),
  },
  { description: "History of tags marked `history: true`, kept in SQLite and served through HistoryRead." },
);

export type HistoryConfig = Infer<typeof historySchema>;
