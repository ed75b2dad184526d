// The version of the history database's schema (PRAGMA user_version), apart from store.ts so
// that the update tools can read it without loading SQLite (image/build.sh puts it into every
// update bundle's manifest; src/update checks it).
//
// The rule (README, "Updates"): an update may migrate the schema forward, but the version it
// falls back to must still be able to read the database. A migration that only adds (tables,
// columns with defaults, indexes) keeps older readers working and leaves READABLE_FROM as it is;
// one that changes what older builds read raises READABLE_FROM to the new version. `fieldgate
// update` refuses a bundle whose READABLE_FROM is above the running build's VERSION, and a
// build refuses to open a database whose readable_from (stored in its user_version) is above its own
// VERSION, with a message, instead of misreading it.

/** The schema this build creates and migrates to. 1: series, staging and the h<id> tables. */
export const HISTORY_SCHEMA_VERSION = 1;
/** The oldest schema version whose builds can read what this build writes. */
export const HISTORY_SCHEMA_READABLE_FROM = 1;
