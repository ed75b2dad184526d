// The part of better-sqlite3's API the history store uses (the package ships no types; this
// avoids a second dependency for them). Shapes follow better-sqlite3 12's documentation.
declare module "better-sqlite3" {
  namespace Database {
    interface RunResult {
      changes: number;
      lastInsertRowid: number | bigint;
    }

    interface Statement {
      run(...params: unknown[]): RunResult;
      get(...params: unknown[]): unknown;
      all(...params: unknown[]): unknown[];
      /** Rows as arrays instead of objects. */
      raw(toggle?: boolean): this;
      /** INTEGER columns as BigInt. */
      safeIntegers(toggle?: boolean): this;
    }

    interface Transaction<F extends (...args: never[]) => unknown> {
      (...args: Parameters<F>): ReturnType<F>;
    }

    interface Options {
      readonly?: boolean;
      fileMustExist?: boolean;
      timeout?: number;
    }

    interface Database {
      readonly open: boolean;
      readonly name: string;
      prepare(sql: string): Statement;
      exec(sql: string): this;
      pragma(source: string, options?: { simple?: boolean }): unknown;
      transaction<F extends (...args: never[]) => unknown>(fn: F): Transaction<F>;
      close(): this;
    }
  }

  interface DatabaseConstructor {
    new (filename: string, options?: Database.Options): Database.Database;
  }

  const Database: DatabaseConstructor;
  export default Database;
}
