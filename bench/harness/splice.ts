// `bench:report --only TEXT` measures some sections, not the whole file: their new text goes in
// place of the sections of the same title in the RESULTS.md already there, whatever heading
// level the file gives them (sections get nested when a part of the file is written by hand),
// and the rest of the file, measured another day, is left as it was.

/** One generated section: its title (a heading without the #s) and its lines, the heading first. */
export interface ReportSection {
  readonly title: string;
  readonly lines: readonly string[];
}

function heading(line: string): { level: number; title: string } | undefined {
  const m = /^(#{1,6}) (.*)$/.exec(line);
  return m ? { level: m[1]!.length, title: m[2]!.trim() } : undefined;
}

/**
 * `existing` with each section of `sections` put in place of the section of the same title (up
 * to the next heading of its level or above), its heading at the level it had there, `stamp`
 * (when and on what it was measured) under the heading. Sections the file does not have are
 * added at its end. Returns the new text and the titles added rather than replaced.
 */
export function spliceSections(existing: string, sections: readonly ReportSection[], stamp: string): { text: string; added: string[] } {
  let lines = existing.replace(/\n$/, "").split("\n");
  const added: string[] = [];
  for (const section of sections) {
    const start = lines.findIndex((l) => heading(l)?.title === section.title);
    if (start < 0) {
      added.push(section.title);
      lines = [...lines, "", ...section.lines, "", stamp];
      continue;
    }
    const level = heading(lines[start]!)!.level;
    let end = start + 1;
    while (end < lines.length) {
      const h = heading(lines[end]!);
      if (h !== undefined && h.level <= level) break;
      end++;
    }
    const body = section.lines.slice(1);
    while (body.length > 0 && body[body.length - 1] === "") body.pop();
    lines = [...lines.slice(0, start), `${"#".repeat(level)} ${section.title}`, "", stamp, ...body, "", ...lines.slice(end)];
  }
  return { text: `${lines.join("\n").replace(/\n{3,}/g, "\n\n")}\n`, added };
}
