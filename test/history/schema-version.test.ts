// The history database's schema version (src/history/schema-version.ts): stamped on new and
// older databases, a newer one opened while its writer says this build can read it, refused
// with a message when not; the history written before stays readable either way it goes.
import Database from "better-sqlite3";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { HISTORY_SCHEMA_READABLE_FROM, HISTORY_SCHEMA_VERSION } from "../../src/history/schema-version.js";
import { HistoryStore, schemaStamp } from "../../src/history/store.js";

const dir = mkdtempSync(join(tmpdir(), "fieldgate-schema-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function stamp(file: string): { version: number; readableFrom: number } {
  const db = new Database(file, { readonly: true });
  try {
    return schemaStamp(db.pragma("user_version", { simple: true }) as number);
  } finally {
    db.close();
  }
}

/** What a later build leaves: schema `version`, readable by builds of `readableFrom` on. */
function stampAs(file: string, version: number, readableFrom: number): void {
  const db = new Database(file);
  db.pragma(`user_version = ${(readableFrom << 16) | version}`);
  db.close();
}

describe("the history database's schema version", () => {
  it("is stamped on a new database, and on one from before stamps existed", () => {
    const file = join(dir, "new.db");
    new HistoryStore(file).close();
    expect(stamp(file)).toEqual({ version: HISTORY_SCHEMA_VERSION, readableFrom: HISTORY_SCHEMA_READABLE_FROM });
    const old = join(dir, "old.db");
    const db = new Database(old);
    db.exec("CREATE TABLE series(id INTEGER PRIMARY KEY, node TEXT NOT NULL UNIQUE, type INTEGER NOT NULL DEFAULT 0)");
    db.exec("INSERT INTO series(node, type) VALUES ('ns=1;s=a.b', 11)");
    db.close();
    const store = new HistoryStore(old);
    expect(store.seriesCount).toBe(1);
    store.close();
    expect(stamp(old).version).toBe(HISTORY_SCHEMA_VERSION);
    // A database stamped before readable_from existed reads as readable from its own version.
    expect(schemaStamp(1)).toEqual({ version: 1, readableFrom: 1 });
  });

  it("opens a newer database that its writer declared readable by this build, and keeps its stamp", () => {
    const file = join(dir, "newer.db");
    new HistoryStore(file).close();
    // What a later build with an added-only migration would leave.
    const db = new Database(file);
    db.exec("ALTER TABLE series ADD COLUMN unit TEXT");
    db.close();
    stampAs(file, HISTORY_SCHEMA_VERSION + 1, HISTORY_SCHEMA_VERSION);
    const store = new HistoryStore(file);
    store.close();
    expect(stamp(file)).toEqual({ version: HISTORY_SCHEMA_VERSION + 1, readableFrom: HISTORY_SCHEMA_VERSION });
  });

  it("refuses, with what to do, a database this build could misread", () => {
    const file = join(dir, "incompatible.db");
    new HistoryStore(file).close();
    stampAs(file, HISTORY_SCHEMA_VERSION + 1, HISTORY_SCHEMA_VERSION + 1);
    expect(() => new HistoryStore(file)).toThrow(
      new RegExp(`has schema ${HISTORY_SCHEMA_VERSION + 1}, readable by builds of schema ${HISTORY_SCHEMA_VERSION + 1} or later; this build reads schema ${HISTORY_SCHEMA_VERSION}: run the version that wrote it`),
    );
  });
});
