#!/usr/bin/env bash
# Builds the fieldgate appliance image: a raw GPT disk image to dd onto an SD card or eMMC.
#
#   sudo image/build.sh [--arch amd64|arm64] [--out DIR] [--suite trixie] [--mirror URL]
#                       [--compress none|xz|zst] [--root-size MiB] [--data-size MiB]
#                       [--version V] [--key FILE]
#
# Debian packages only (mmdebstrap, suite trixie: the first with Node.js 20), the app from this
# tree (dist/ built here, production dependencies from package-lock.json, native addons compiled
# inside the target root: natively for the build machine's architecture, under qemu-user for the
# other one), the units of systemd/ enabled. No loop devices: every file system is made in a
# file (mkfs.ext4 -d, mkfs.vfat + mtools) and copied into the disk image at its offset.
#
# Layout (GPT):  1 fieldgate-boot      FAT32 ESP: systemd-boot, kernel, initramfs
#                2 fieldgate-settings  FAT32, basic data, volume FIELDGATE: the drive a laptop
#                                      shows; its fieldgate/ folder is imported at boot
#                3 fieldgate-rootA     ext4, mounted read-only
#                4 fieldgate-rootB     the other slot for A/B updates (empty until the first one)
#                5 fieldgate-data      ext4: /etc/fieldgate, /var/lib/fieldgate, machine-id, SSH
#                                      host keys, /var/lib/systemd, update/; grown to the card at boot
# Output: DIR/fieldgate-ARCH.img (+ .vmlinuz, .initrd for direct-kernel boots in image/test.sh,
# .manifest with the package list), and .img.xz or .img.zst with --compress; and the update
# bundle DIR/fieldgate-ARCH.fgu: the same root file system, kernel and initramfs, signed with
# --key (an Ed25519 key made by `node image/bundle.mjs keygen`; made here when FILE does not
# exist: keep it, it signs the updates of every gateway flashed with this image). --version
# (default: package.json's version and the commit's date, 0.1.0.202612011345) is the version
# the gateway shows and compares. README, "Updates".
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
arch=amd64
out=/var/tmp/fieldgate-image
suite=trixie
mirror=http://deb.debian.org/debian
compress=none
root_mib=1024
data_mib=128
boot_mib=256
# Settings files, examples and the last applied sets: a device map of 10,000 tags is ~1.5 MiB.
settings_mib=64
version=""
key=${HOME:-/root}/.config/fieldgate/update-key.pem

while [ $# -gt 0 ]; do
  case "$1" in
    --arch) arch=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --suite) suite=$2; shift 2 ;;
    --mirror) mirror=$2; shift 2 ;;
    --compress) compress=$2; shift 2 ;;
    --root-size) root_mib=$2; shift 2 ;;
    --data-size) data_mib=$2; shift 2 ;;
    --version) version=$2; shift 2 ;;
    --key) key=$2; shift 2 ;;
    -h|--help) sed -n '2,30p' "$0"; exit 0 ;;
    *) echo "build.sh: unknown option $1" >&2; exit 2 ;;
  esac
done

case "$arch" in
  amd64) kernel_pkg=linux-image-amd64; efi_name=BOOTX64.EFI; efi_src=systemd-bootx64.efi
         root_type=4F68BCE3-E8CD-4DB1-96E7-FBCAF984B709; console="console=tty0 console=ttyS0,115200" ;;
  arm64) kernel_pkg=linux-image-arm64; efi_name=BOOTAA64.EFI; efi_src=systemd-bootaa64.efi
         root_type=B921B045-1DF0-41C3-AF44-4C6F280D3FAE; console="console=tty0 console=ttyS0,115200 console=ttyAMA0,115200" ;;
  *) echo "build.sh: --arch must be amd64 or arm64" >&2; exit 2 ;;
esac
if [ -z "$version" ]; then
  # The commit's date (UTC), so that two builds of one commit carry one version and a later
  # commit a greater one.
  stamp=$(TZ=UTC git -C "$here/.." log -1 --format=%cd --date=format-local:%Y%m%d%H%M 2>/dev/null || TZ=UTC date +%Y%m%d%H%M)
  version=$(node -p "require('$here/../package.json').version").$stamp
fi
case "$version" in
  ""|*[!0-9A-Za-z.+~_-]*) echo "build.sh: --version $version: letters, digits and . + ~ _ - only" >&2; exit 2 ;;
esac

missing=()
[ "$(id -u)" = 0 ] || { echo "build.sh: must run as root (mmdebstrap --mode=root, file ownership in the images)" >&2; exit 2; }
for tool in mmdebstrap mkfs.ext4 mkfs.vfat mcopy mmd sfdisk node npm; do
  command -v "$tool" >/dev/null 2>&1 || missing+=("$tool")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "build.sh: missing ${missing[*]} (Debian: apt-get install mmdebstrap e2fsprogs dosfstools mtools fdisk; qemu-user-static binfmt-support for a foreign --arch)" >&2
  exit 3
fi

log() { printf '[%s] build: %s\n' "$(date +%T)" "$*"; }
t_start=$(date +%s)
work=$out/work-$arch
rm -rf "$work"
mkdir -p "$work" "$out"

# A foreign architecture runs its maintainer scripts and compilers under qemu-user through
# binfmt_misc, which a container does not mount for us.
host_arch=$(dpkg --print-architecture)
if [ "$arch" != "$host_arch" ]; then
  qemu_name=$([ "$arch" = arm64 ] && echo aarch64 || echo x86_64)
  [ -e /proc/sys/fs/binfmt_misc/status ] || mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc
  if [ ! -e "/proc/sys/fs/binfmt_misc/qemu-$qemu_name" ]; then
    command -v update-binfmts >/dev/null || { echo "build.sh: --arch $arch needs qemu-user-static and binfmt-support" >&2; exit 3; }
    update-binfmts --enable "qemu-$qemu_name"
  fi
  log "binfmt: $(head -1 "/proc/sys/fs/binfmt_misc/qemu-$qemu_name") for qemu-$qemu_name"
fi

# --- The app: compiled here (JavaScript runs anywhere), dependencies from the lock file. --------
log "app: tsc and production dependencies"
app=$work/app
mkdir -p "$app/dist"
# Only what runs on the gateway (src/, drivers/), straight into the staging folder: the bench
# and the tests are not compiled, and the tree's own dist/ is left alone.
cat > "$work/tsconfig.json" <<JSON
{
  "extends": "$repo/tsconfig.json",
  "compilerOptions": { "rootDir": "$repo", "outDir": "$app/dist", "sourceMap": false,
                       "typeRoots": ["$repo/node_modules/@types"] },
  "include": ["$repo/src/**/*.ts", "$repo/drivers/**/*.ts"]
}
JSON
(cd "$repo" && npx --no-install tsc -p "$work/tsconfig.json")
# The gateway's modules bundled into $app/dist/bundle, which the fieldgate command loads
# (src/build/bundle.ts; esbuild comes from the repository's dev dependencies).
(cd "$repo" && node "$app/dist/src/build/bundle.js" "$app/dist")
cp "$repo/package.json" "$repo/package-lock.json" "$app/"
# Scripts run later, in the target root, where the addons are compiled for the target.
(cd "$app" && npm ci --omit=dev --ignore-scripts --no-audit --no-fund --loglevel=error)
native=$(cd "$app" && find node_modules -name binding.gyp -not -path '*/test/*' -printf '%h\n' \
  | sed 's|^node_modules/||' | grep -v '/node_modules/' | sort -u | tr '\n' ' ' || true)
log "app: native addons to build for $arch: ${native:-none}"
mkdir -p "$app/config"
cp "$repo"/config/*.yaml "$app/config/"
cp "$repo"/config/*.schema.json "$app/config/" 2>/dev/null || true
# On the appliance the data folder is /var/lib/fieldgate (on the data partition), whatever the
# repository's default says; and the device map is on, so that a freshly flashed gateway serves
# the simulator's tags until its owner replaces them with real devices.
sed -i 's|^dataDir:.*|dataDir: /var/lib/fieldgate     # on the data partition|' "$app/config/gateway.yaml"
grep -q '^dataDir: /var/lib/fieldgate' "$app/config/gateway.yaml"
if [ -f "$app/config/devices.yaml" ]; then
  sed -i 's|^# devices: ./devices.yaml|devices: ./devices.yaml|' "$app/config/gateway.yaml"
fi
node "$app/dist/src/cli.js" validate --config "$app/config/gateway.yaml"
node "$app/dist/src/cli.js" validate --network "$app/config/network.yaml"

# --- The signing key of updates: the public half goes into the image. ----------------------------
if [ ! -f "$key" ]; then
  mkdir -p "$(dirname "$key")"
  node "$here/bundle.mjs" keygen --key "$key"
  log "update signing key: made $key (keep it safe and private: it signs updates for every gateway flashed with this image)"
fi
node -e 'const c = require("node:crypto"); const k = c.createPublicKey(require("node:fs").readFileSync(process.argv[1]));
  if (k.asymmetricKeyType !== "ed25519") { console.error("build.sh: --key must be an Ed25519 key (node image/bundle.mjs keygen)"); process.exit(2); }
  process.stdout.write(k.export({ type: "spki", format: "pem" }));' "$key" > "$work/update-key.pub"
history_schema=$(node -e 'import(process.argv[1]).then((m) => console.log(`${m.HISTORY_SCHEMA_VERSION}:${m.HISTORY_SCHEMA_READABLE_FROM}`))' "$app/dist/src/history/schema-version.js")
log "version $version, update key $(basename "$key"), history schema $history_schema"

# --- The root file system. -----------------------------------------------------------------------
packages=(systemd systemd-sysv udev systemd-timesyncd systemd-resolved systemd-boot-efi
  "$kernel_pkg" initramfs-tools busybox zstd kmod nodejs procps e2fsprogs fdisk iproute2
  openssh-server dosfstools)
export FIELDGATE_APP=$app FIELDGATE_REPO=$repo FIELDGATE_NATIVE=$native FIELDGATE_WORK=$work
export FIELDGATE_VERSION=$version FIELDGATE_UPDATE_KEY=$work/update-key.pub
log "mmdebstrap $suite $arch: ${packages[*]}"
# Docs, man pages and translations are not needed on a gateway (copyright files stay); nor are
# the kernel's drivers for sound, graphics, video capture, wireless, Bluetooth, InfiniBand.
excludes=()
for p in /usr/share/man/\* /usr/share/doc/\* /usr/share/info/\* /usr/share/locale/\* /usr/share/lintian/\* \
         /usr/lib/modules/\*/kernel/sound/\* /usr/lib/modules/\*/kernel/drivers/gpu/\* \
         /usr/lib/modules/\*/kernel/drivers/media/\* /usr/lib/modules/\*/kernel/drivers/net/wireless/\* \
         /usr/lib/modules/\*/kernel/net/wireless/\* /usr/lib/modules/\*/kernel/net/mac80211/\* \
         /usr/lib/modules/\*/kernel/drivers/bluetooth/\* /usr/lib/modules/\*/kernel/net/bluetooth/\* \
         /usr/lib/modules/\*/kernel/drivers/infiniband/\* /usr/lib/modules/\*/kernel/drivers/staging/\*; do
  excludes+=(--dpkgopt="path-exclude=$p")
done
excludes+=(--dpkgopt='path-include=/usr/share/doc/*/copyright')
nice mmdebstrap --mode=root --variant=minbase --arch="$arch" \
  --aptopt='APT::Install-Recommends "false"' \
  "${excludes[@]}" \
  --include="$(IFS=,; echo "${packages[*]}")" \
  --setup-hook="cp -a '$here/rootfs/.' \"\$1/\"" \
  --customize-hook="'$here/customize.sh' \"\$1\"" \
  "$suite" "$work/rootfs" "$mirror"
rootfs=$work/rootfs

# --- Everything mutable moves to the data partition. --------------------------------------------
log "data partition contents"
data=$work/data
mkdir -p "$data/etc/fieldgate" "$data/etc/ssh" "$data/var/lib/fieldgate/pki" "$data/var/lib" "$data/update/inbox"
chmod 0755 "$data/update"; chmod 0700 "$data/update/inbox"
cp -a "$rootfs/var/lib/systemd" "$data/var/lib/"
cp -a "$rootfs/usr/share/fieldgate/config/." "$data/etc/fieldgate/"
uid=$(awk -F: '$1 == "fieldgate" { print $3 }' "$rootfs/etc/passwd")
gid=$(awk -F: '$1 == "fieldgate" { print $3 }' "$rootfs/etc/group")
[ -n "$uid" ] && [ -n "$gid" ] || { echo "build.sh: no fieldgate user in the root file system" >&2; exit 1; }
chown -R 0:"$gid" "$data/etc/fieldgate"; chmod 0750 "$data/etc/fieldgate"; chmod 0640 "$data"/etc/fieldgate/*
chown -R "$uid:$gid" "$data/var/lib/fieldgate"; chmod 0750 "$data/var/lib/fieldgate"; chmod 0700 "$data/var/lib/fieldgate/pki"
# machine-id: made at the gateway's first boot, through the symlink, onto the data partition
# (so that every gateway has its own, kept across reboots: DHCP client ids derive from it).
rm -f "$rootfs/etc/machine-id" "$rootfs/var/lib/dbus/machine-id"
ln -s /data/etc/machine-id "$rootfs/etc/machine-id"
[ -d "$rootfs/var/lib/dbus" ] && ln -s /etc/machine-id "$rootfs/var/lib/dbus/machine-id"
# The time zone of network.yaml: a link that `fieldgate network apply` makes in /run at boot
# (src/settings/network-apply.ts); until then, and without one, glibc and Node use UTC.
ln -sfn /run/fieldgate/localtime "$rootfs/etc/localtime"
mkdir -p "$rootfs/data" "$rootfs/etc/fieldgate" "$rootfs/var/lib/fieldgate" "$rootfs/efi"
rm -rf "${rootfs:?}"/etc/fieldgate/* "${rootfs:?}"/var/lib/fieldgate/*
rm -f "$rootfs"/etc/ssh/ssh_host_*

# --- Boot partition: kernel, initramfs, systemd-boot. ----------------------------------------------
log "boot partition"
kver=$(basename "$(ls -d "$rootfs"/usr/lib/modules/* | sort -V | tail -1)")
cp "$rootfs/boot/vmlinuz-$kver" "$out/fieldgate-$arch.vmlinuz"
cp "$rootfs/boot/initrd.img-$kver" "$out/fieldgate-$arch.initrd"
# panic=10: a kernel that panics (or an initramfs that finds no root) reboots instead of
# waiting for a keyboard, so that a trial boot of an update that fails falls back by itself.
cmdline_rest="ro rootwait systemd.gpt_auto=0 panic=10 $console"
cmdline="root=PARTLABEL=fieldgate-rootA $cmdline_rest"
echo "$cmdline" > "$out/fieldgate-$arch.cmdline"
boot=$work/boot.fat
rm -f "$boot"
mkfs.vfat -F 32 -n FG-BOOT -C "$boot" $((boot_mib * 1024)) >/dev/null
mmd -i "$boot" ::/EFI ::/EFI/BOOT ::/loader ::/loader/entries ::/fieldgate-a
mcopy -i "$boot" "$rootfs/usr/lib/systemd/boot/efi/$efi_src" "::/EFI/BOOT/$efi_name"
mcopy -i "$boot" "$out/fieldgate-$arch.vmlinuz" ::/fieldgate-a/vmlinuz
mcopy -i "$boot" "$out/fieldgate-$arch.initrd" ::/fieldgate-a/initrd.img
# No editor: a keyboard at boot must not be a way to a root shell (init=/bin/sh). No default:
# systemd-boot starts the entry that sorts first, the one with the highest `version` (an install
# counter that `fieldgate update` raises, src/update/boot-entries.ts), and puts an entry whose
# trial boot was used up (boot counter +0) last: that is the whole fall-back.
printf 'timeout 0\neditor no\n' > "$work/loader.conf"
printf 'title fieldgate %s (A)\nsort-key fieldgate\nversion 1\nlinux /fieldgate-a/vmlinuz\ninitrd /fieldgate-a/initrd.img\noptions %s quiet\n' "$version" "$cmdline" > "$work/fieldgate-a.conf"
mcopy -i "$boot" "$work/loader.conf" ::/loader/loader.conf
mcopy -i "$boot" "$work/fieldgate-a.conf" ::/loader/entries/fieldgate-a.conf

# --- The settings drive: what a laptop shows when the card is plugged in. ------------------------
# A partition of its own, typed Microsoft basic data (Windows gives an EFI system partition no
# drive letter), never written by an update, mounted on the gateway only while it imports at
# boot (systemd/fieldgate-settings). The examples are the image's own files (the data folder on
# the data partition, the simulator's map) under names that are never applied; README.txt and
# the examples have CRLF line ends for Notepad.
log "settings drive"
settings=$work/settings.fat
rm -f "$settings"
mkfs.vfat -F 32 -n FIELDGATE -C "$settings" $((settings_mib * 1024)) >/dev/null
mmd -i "$settings" ::/fieldgate ::/fieldgate/schemas
crlf() { sed 's/\r*$/\r/' "$1" > "$2"; }
for f in "$here"/settings-drive/*; do
  crlf "$f" "$work/${f##*/}"
  mcopy -i "$settings" "$work/${f##*/}" ::/fieldgate/
done
for name in gateway devices network; do
  # Editors with a YAML language server find the JSON Schema beside the file on the drive.
  sed "1s|\$schema=\./$name\.schema\.json|\$schema=./schemas/$name.schema.json|" "$app/config/$name.yaml" > "$work/$name.yaml.lf"
  crlf "$work/$name.yaml.lf" "$work/$name.yaml.example"
  mcopy -i "$settings" "$work/$name.yaml.example" ::/fieldgate/
  mcopy -i "$settings" "$app/config/$name.schema.json" ::/fieldgate/schemas/
done

# --- File systems in files, then the disk. -------------------------------------------------------
log "ext4 file systems"
used_mib=$(du -sm "$rootfs" | cut -f1)
# The root file system is only as large as its contents need (it is mounted read-only): the same
# file goes into slot A and into the update bundle, and a bundle has less to write.
rootfs_mib=$(( (used_mib * 13 / 10 + 64 + 15) / 16 * 16 ))
if [ "$rootfs_mib" -gt "$root_mib" ]; then
  echo "build.sh: the root file system needs ${rootfs_mib} MiB; --root-size $root_mib is too small" >&2; exit 1
fi
# 4 KiB blocks even for small file systems: the data partition grows to tens of GiB.
mkfs.ext4 -q -F -b 4096 -L fieldgate-root -d "$rootfs" "$work/rootA.ext4" "${rootfs_mib}M"
mkfs.ext4 -q -F -b 4096 -T default -L fieldgate-data -d "$data" "$work/data.ext4" "${data_mib}M"

img=$out/fieldgate-$arch.img
rm -f "$img"
total_mib=$((1 + boot_mib + settings_mib + 2 * root_mib + data_mib + 1))
truncate -s "${total_mib}M" "$img"
sfdisk --quiet "$img" <<PARTS
label: gpt
start=1MiB, size=${boot_mib}MiB, type=uefi, name=fieldgate-boot
size=${settings_mib}MiB, type=EBD0A0A2-B9E5-4433-87C0-68B6B72699C7, name=fieldgate-settings
size=${root_mib}MiB, type=$root_type, name=fieldgate-rootA
size=${root_mib}MiB, type=$root_type, name=fieldgate-rootB
size=${data_mib}MiB, type=linux, name=fieldgate-data
PARTS
put() { dd if="$1" of="$img" bs=1M seek="$2" conv=notrunc,sparse status=none; }
put "$boot" 1
put "$settings" $((1 + boot_mib))
put "$work/rootA.ext4" $((1 + boot_mib + settings_mib))
put "$work/data.ext4" $((1 + boot_mib + settings_mib + 2 * root_mib))
dpkg-query --admindir="$rootfs/var/lib/dpkg" -W -f '${Package} ${Version}\n' > "$out/fieldgate-$arch.manifest"

# --- The update bundle: the same root file system, kernel and initramfs, signed. -----------------
log "update bundle"
nice node "$here/bundle.mjs" create --key "$key" --out "$out/fieldgate-$arch.fgu" --arch "$arch" --version "$version" \
  --rootfs "$work/rootA.ext4" --kernel "$out/fieldgate-$arch.vmlinuz" --initrd "$out/fieldgate-$arch.initrd" \
  --cmdline "$cmdline_rest quiet" --history "$history_schema"

case "$compress" in
  none) ;;
  xz) log "xz"; nice xz -T2 -6 -k -f "$img" ;;
  zst) log "zstd"; nice zstd -q -T2 -10 -k -f "$img" ;;
  *) echo "build.sh: --compress none|xz|zst" >&2; exit 2 ;;
esac
t_end=$(date +%s)
alloc_mib=$(du -m "$img" | cut -f1)
log "done in $((t_end - t_start)) s: $img ($total_mib MiB raw, $alloc_mib MiB allocated; root file system $used_mib MiB in $rootfs_mib MiB), fieldgate $version"
ls -l "$out"/fieldgate-"$arch".* | sed 's/^/  /'
rm -rf "$work"
