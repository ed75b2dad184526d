// Waiting on what a child process (the built CLI) writes: its stdout and stderr as one text.
import type { ChildProcess } from "node:child_process";

/** Resolves with the first match of `pattern` in `output()`; rejects after 15 s or when the child exits first. */
export function waitFor(child: ChildProcess, output: () => string, pattern: RegExp, what: string): Promise<RegExpExecArray> {
  return new Promise((resolveMatch, reject) => {
    const timer = setTimeout(() => done(new Error(`no ${what} within 15 s: ${output()}`)), 15_000);
    const check = () => {
      const m = pattern.exec(output());
      if (m) done(undefined, m);
    };
    const onExit = () => done(new Error(`exited before ${what}: ${output()}`));
    function done(err?: Error, m?: RegExpExecArray) {
      clearTimeout(timer);
      child.stdout!.off("data", check);
      child.stderr!.off("data", check);
      child.off("exit", onExit);
      if (err) reject(err);
      else resolveMatch(m!);
    }
    child.stdout!.on("data", check);
    child.stderr!.on("data", check);
    child.once("exit", onExit);
    check();
  });
}
