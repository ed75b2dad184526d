// The FIELDGATE drive (the image's FAT partition fieldgate-settings) from the host, the way a
// laptop sees it, for image/update-check.mjs: the partition is copied out of the test's qcow2
// disk (qemu-img convert through a raw window of it), read and changed with mtools, and written
// back (qemu-io), between two boots, while no qemu has the disk open.
import { execFileSync } from "node:child_process";
import { rmSync, writeFileSync } from "node:fs";

const MiB = 1048576;

/** Where the settings partition lies in the raw image (the overlay shares the partition table). */
export function settingsPartition(img) {
  const table = JSON.parse(execFileSync("sfdisk", ["--json", img], { encoding: "utf8" })).partitiontable;
  const sector = table.sectorsize ?? 512;
  const p = table.partitions.find((x) => x.name === "fieldgate-settings");
  if (p === undefined) throw new Error(`${img}: no partition named fieldgate-settings`);
  const offset = p.start * sector;
  const size = p.size * sector;
  if (offset % MiB !== 0 || size % MiB !== 0) throw new Error(`fieldgate-settings at ${offset}+${size}: not whole MiB`);
  return { offset, size };
}

export class Drive {
  /** `disk`: the test's qcow2; `part`: settingsPartition(); `fat`: a scratch file for the copy. */
  constructor(disk, part, fat) {
    Object.assign(this, { disk, part, fat });
  }

  /** The partition alone, as qemu's raw driver over a window of the qcow2 disk. */
  get window() {
    return `driver=raw,offset=${this.part.offset},size=${this.part.size},file.driver=qcow2,file.file.filename=${this.disk}`;
  }

  /** Copies the partition out of the disk (qemu must not be running). */
  load() {
    rmSync(this.fat, { force: true });
    execFileSync("qemu-img", ["convert", "-O", "raw", "--image-opts", this.window, this.fat]);
    return this;
  }

  /** Writes the changed copy back into the disk. */
  save() {
    execFileSync("qemu-io", ["--image-opts", "-c", `write -q -s ${this.fat} 0 ${this.part.size}`, this.window]);
    return this;
  }

  /** A UTF-8 file's text, its line ends as they are (mcopy without -t converts nothing). */
  read(path) {
    return execFileSync("mcopy", ["-n", "-i", this.fat, `::${path}`, "-"], { encoding: "utf8" });
  }

  /** Names in a folder, without . and .. */
  list(path) {
    return execFileSync("mdir", ["-b", "-i", this.fat, `::${path}`], { encoding: "utf8" })
      .split("\n")
      .filter((l) => l !== "")
      .map((l) => l.replace(/^::\/?/, "").replace(/\/$/, "").split("/").pop());
  }

  write(path, text, scratch) {
    writeFileSync(scratch, text);
    execFileSync("mcopy", ["-o", "-i", this.fat, scratch, `::${path}`]);
    return this;
  }

  remove(path) {
    execFileSync("mdel", ["-i", this.fat, `::${path}`]);
    return this;
  }
}
