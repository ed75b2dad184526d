// Where an update reads and writes on the appliance (image/build.sh makes the layout): the two
// root slots by partition label, the boot partition (systemd-boot's ESP, mounted at /efi), the
// update state on the data partition, the public keys in the image.
//
// Every path hangs off one root, "/" on the gateway. The tests (and a dry run) point
// FIELDGATE_UPDATE_ROOT at a folder that stands for it, with plain files as partitions: nothing
// outside that folder is touched then, and reboots are written to <root>/run/fieldgate-reboot
// instead of being done.
import { readFileSync, realpathSync, statSync } from "node:fs";
import { basename, join } from "node:path";

export type Slot = "A" | "B";

export const otherSlot = (s: Slot): Slot => (s === "A" ? "B" : "A");

export class Layout {
  readonly root: string;

  constructor(root = process.env.FIELDGATE_UPDATE_ROOT || "/") {
    this.root = root;
  }

  /** True when this layout stands for the real machine. */
  get real(): boolean {
    return this.root === "/";
  }

  path(p: string): string {
    return join(this.root, p);
  }

  get esp(): string {
    return this.path("efi");
  }
  get stateDir(): string {
    return this.path("data/update");
  }
  get inbox(): string {
    return join(this.stateDir, "inbox");
  }
  get keysDir(): string {
    return this.path("usr/share/fieldgate/update-keys");
  }
  get osRelease(): string {
    return this.path("etc/os-release");
  }

  /** The slot the running system booted from: root=PARTLABEL=fieldgate-rootA|B on its command line. */
  bootedSlot(): Slot | undefined {
    let cmdline: string;
    try {
      cmdline = readFileSync(this.path("proc/cmdline"), "utf8");
    } catch {
      return undefined;
    }
    const m = /(?:^|\s)root=PARTLABEL=fieldgate-root([AB])(?:\s|$)/.exec(cmdline);
    return m ? (m[1] as Slot) : undefined;
  }

  /** Changes at every boot: tells a boot after an install from the boot that made it. */
  bootId(): string {
    try {
      return readFileSync(this.path("proc/sys/kernel/random/boot_id"), "utf8").trim();
    } catch {
      return "";
    }
  }

  /** The link udev makes for a slot's partition. */
  slotLink(slot: Slot): string {
    return this.path(`dev/disk/by-partlabel/fieldgate-root${slot}`);
  }

  /**
   * The slot's device node, resolved once (the by-partlabel link comes and goes while udev
   * handles a change event), and its size in bytes.
   */
  slotDevice(slot: Slot): { path: string; size: number; block: boolean } {
    const path = realpathSync(this.slotLink(slot));
    const st = statSync(path);
    if (!st.isBlockDevice()) return { path, size: st.size, block: false };
    // stat gives a block device no size; sysfs has it in 512-byte sectors.
    const sectors = Number(readFileSync(this.path(`sys/class/block/${basename(path)}/size`), "utf8").trim());
    return { path, size: sectors * 512, block: true };
  }
}
