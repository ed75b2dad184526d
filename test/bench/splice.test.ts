// bench:report --only: measured sections replace their namesakes in RESULTS.md, the rest stays.
import { describe, expect, it } from "vitest";
import { spliceSections } from "../../bench/harness/splice.js";

const file = [
  "# results",
  "",
  "## Read",
  "old read table",
  "",
  "## Sampling, by hand",
  "",
  "### Sampling targets (issue 13)",
  "old targets",
  "",
  "### counters: 1024 items",
  "old 1024",
  "",
  "## Issue 14 (by hand)",
  "kept",
  "",
].join("\n");

describe("spliceSections", () => {
  it("replaces sections of the same title at the level the file gives them and keeps the rest", () => {
    const { text, added } = spliceSections(
      file,
      [
        { title: "Sampling targets (issue 13)", lines: ["## Sampling targets (issue 13)", "", "new targets", ""] },
        { title: "counters: 1024 items", lines: ["## counters: 1024 items", "", "new 1024"] },
      ],
      "(measured at abc)",
    );
    expect(added).toEqual([]);
    expect(text).toBe(
      [
        "# results",
        "",
        "## Read",
        "old read table",
        "",
        "## Sampling, by hand",
        "",
        "### Sampling targets (issue 13)",
        "",
        "(measured at abc)",
        "",
        "new targets",
        "",
        "### counters: 1024 items",
        "",
        "(measured at abc)",
        "",
        "new 1024",
        "",
        "## Issue 14 (by hand)",
        "kept",
        "",
      ].join("\n"),
    );
  });

  it("adds a section the file does not have at its end and says so", () => {
    const { text, added } = spliceSections(file, [{ title: "Echo", lines: ["## Echo", "", "echo table"] }], "(stamp)");
    expect(added).toEqual(["Echo"]);
    expect(text.endsWith("kept\n\n## Echo\n\necho table\n\n(stamp)\n")).toBe(true);
    expect(text).toContain("old read table");
  });
});
