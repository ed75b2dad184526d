#!/usr/bin/env bash
# Boots the appliance image under qemu (software emulation: no KVM needed) with opc.tcp forwarded
# to a free port on 127.0.0.1 and talks to it with node-opcua-client: GetEndpoints, a session,
# ServerStatus and a device tag (image/boot-check.mjs); reads the service's RSS,
# `systemd-analyze security fieldgate.service` and the boot figures on the booted gateway through
# systemd's debug shell on a second serial port (it exists only in this test: the kernel command
# line gets it from qemu's SMBIOS, or from -append).
#
#   image/test.sh [--arch amd64|arm64] [--out DIR] [--timeout SECONDS] [--key FILE] [--direct]
#
# By default, the update test (image/update-check.mjs): five boots through the image's own boot
# partition (OVMF/AAVMF firmware and systemd-boot), each on a disk grown by 256 MiB: version N;
# a bundle of N+1 signed with another key refused; a broken N+1 (fieldgate fails to start)
# installed from the inbox, its trial boot, back on N by itself; the good N+1 installed with
# `fieldgate update`, its trial confirmed, the history kept; N+1 again after a reboot. N+1 is
# the image's root file system with another version stamp (debugfs), signed with --key (the
# key image/build.sh signed the image's bundle with). On the way, the FIELDGATE drive
# (image/settings-check.mjs): a broken devices.yaml refused at boot 1, a static address and SSH
# keys applied at boot 5, which runs on a network of the test's own without DHCP: a tap in a
# network namespace made here (root, /dev/net/tun), where qemu and the checks run; nothing of it
# reaches beyond this machine.
# --direct: one boot of the kernel and initramfs next to the image instead (no firmware needed).
# Exit status: 0 pass, 1 fail, 77 skipped (qemu, firmware or the image missing; the message says which).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
arch=amd64
out=/var/tmp/fieldgate-image
uefi=1
accel=tcg
timeout=600
key=${HOME:-/root}/.config/fieldgate/update-key.pem
while [ $# -gt 0 ]; do
  case "$1" in
    --arch) arch=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --uefi) uefi=1; shift ;;
    --direct) uefi=0; shift ;;
    --timeout) timeout=$2; shift 2 ;;
    --key) key=$2; shift 2 ;;
    -h|--help) sed -n '2,22p' "$0"; exit 0 ;;
    *) echo "test.sh: unknown option $1" >&2; exit 2 ;;
  esac
done

case "$arch" in
  amd64) qemu=qemu-system-x86_64; machine=(-machine q35); fw=/usr/share/ovmf/OVMF.fd; pkg=qemu-system-x86; fwpkg=ovmf ;;
  arm64) qemu=qemu-system-aarch64; machine=(-machine virt -cpu cortex-a57); fw=/usr/share/qemu-efi-aarch64/QEMU_EFI.fd; pkg=qemu-system-arm; fwpkg=qemu-efi-aarch64 ;;
  *) echo "test.sh: --arch amd64|arm64" >&2; exit 2 ;;
esac
skip() { echo "test.sh: SKIPPED: $*"; exit 77; }
command -v "$qemu" >/dev/null || skip "$qemu is missing (Debian: apt-get install $pkg)"
command -v node >/dev/null || skip "node is missing"
img=$out/fieldgate-$arch.img
[ -f "$img" ] || skip "no image at $img (build it: sudo image/build.sh --arch $arch --out $out; needs mmdebstrap)"
if [ "$uefi" = 1 ]; then
  [ -f "$fw" ] || skip "no UEFI firmware $fw (Debian: apt-get install $fwpkg); --direct boots without"
  command -v qemu-img >/dev/null || skip "qemu-img is missing (Debian: apt-get install qemu-utils)"
  command -v debugfs >/dev/null && command -v mkfs.ext4 >/dev/null || skip "debugfs or mkfs.ext4 is missing (Debian: apt-get install e2fsprogs)"
  command -v mcopy >/dev/null && command -v qemu-io >/dev/null && command -v sfdisk >/dev/null || skip "mtools, qemu-io or sfdisk is missing (Debian: apt-get install mtools qemu-utils fdisk)"
  [ -f "$out/fieldgate-$arch.fgu" ] || skip "no update bundle at $out/fieldgate-$arch.fgu (image/build.sh makes it)"
  [ -f "$key" ] || skip "no signing key $key (the --key image/build.sh signed the bundle with)"
fi

tmp=$(mktemp -d /var/tmp/fieldgate-boot.XXXXXX)
t_test=$(date +%s)
qemu_pid=""
netns=""
cleanup() {
  if [ -n "$qemu_pid" ] && kill -0 "$qemu_pid" 2>/dev/null; then kill "$qemu_pid"; wait "$qemu_pid" 2>/dev/null || true; fi
  if [ -n "$netns" ]; then ip netns del "$netns" 2>/dev/null || true; fi
  rm -rf "$tmp"
}
trap cleanup EXIT

# The image stays untouched: the guest writes to a copy-on-write overlay that is larger than the
# image, so the first boot has a bigger "card" to grow the data partition onto.
raw_mib=$(( $(stat -c %s "$img") / 1048576 ))
disk_mib=$((raw_mib + 1024))
if command -v qemu-img >/dev/null; then
  qemu-img create -q -f qcow2 -F raw -b "$img" "$tmp/disk.qcow2" "${disk_mib}M"
  drive="file=$tmp/disk.qcow2,format=qcow2"
else
  cp --sparse=always "$img" "$tmp/disk.img"; truncate -s "${disk_mib}M" "$tmp/disk.img"
  drive="file=$tmp/disk.img,format=raw"
fi

if [ "$uefi" = 1 ]; then
  # --- The bundles of N+1: the image's root file system with another version stamp. -----------
  bundle=node
  here_bundle() { node "$here/bundle.mjs" "$@"; }
  version=$(node -e 'const m = JSON.parse(require("child_process").execFileSync("node", [process.argv[1], "show", "--bundle", process.argv[2]])); console.log(m.version)' "$here/bundle.mjs" "$out/fieldgate-$arch.fgu")
  next=$version.1
  echo "test.sh: bundles of $next from the root file system of $version"
  t_bundles=$(date +%s)
  fs=$tmp/rootfs.ext4
  here_bundle extract --bundle "$out/fieldgate-$arch.fgu" --payload rootfs --out "$fs"
  here_bundle extract --bundle "$out/fieldgate-$arch.fgu" --payload kernel --out "$tmp/vmlinuz"
  here_bundle extract --bundle "$out/fieldgate-$arch.fgu" --payload initrd --out "$tmp/initrd"
  cmdline=$(node "$here/bundle.mjs" show --bundle "$out/fieldgate-$arch.fgu" | node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>console.log(JSON.parse(s).cmdline))')
  history=$(node "$here/bundle.mjs" show --bundle "$out/fieldgate-$arch.fgu" | node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>{const h=JSON.parse(s).historySchema;console.log(`${h.version}:${h.readableFrom}`)})')
  # os-release with IMAGE_VERSION=$next, written with debugfs (no loop device, no mount).
  debugfs -R "cat /usr/lib/os-release" "$fs" 2>/dev/null | sed "s/^IMAGE_VERSION=.*/IMAGE_VERSION=$next/" > "$tmp/os-release"
  grep -q "^IMAGE_VERSION=$next$" "$tmp/os-release" || { echo "test.sh: no IMAGE_VERSION in the image's os-release" >&2; exit 1; }
  chmod 0644 "$tmp/os-release"
  printf 'cd /usr/lib\nrm os-release\nwrite %s os-release\n' "$tmp/os-release" | debugfs -w -f - "$fs" >/dev/null 2>&1
  [ "$(debugfs -R "cat /usr/lib/os-release" "$fs" 2>/dev/null | grep '^IMAGE_VERSION=')" = "IMAGE_VERSION=$next" ] || { echo "test.sh: debugfs did not restamp os-release" >&2; exit 1; }
  stick=$tmp/stick
  mkdir -p "$stick"
  make() { here_bundle create --key "$1" --out "$2" --arch "$arch" --version "$next" --rootfs "$3" --kernel "$tmp/vmlinuz" --initrd "$tmp/initrd" --cmdline "$cmdline" --history "$history" --level 1; }
  make "$key" "$stick/next.fgu" "$fs"
  # Signed with a key the gateway does not trust.
  here_bundle keygen --key "$tmp/other-key.pem" >/dev/null
  make "$tmp/other-key.pem" "$stick/badsig.fgu" "$fs"
  # Broken: the same N+1 whose server throws when it starts (fieldgate fails to start; its
  # other commands, `fieldgate update` among them, still work). The gateway runs FieldgateServer
  # from its bundle (dist/bundle, src/build/bundle.ts): the chunk that defines it is looked for.
  bundle_dir=/usr/lib/fieldgate/dist/bundle
  server=
  # Each file is read out whole before grep looks at it: under pipefail, `debugfs cat | grep -q`
  # fails when grep stops at a match before debugfs has written the rest (SIGPIPE), which a
  # 560 KB chunk with the class near its end did in CI.
  for f in $(debugfs -R "ls -p $bundle_dir" "$fs" 2>/dev/null | awk -F/ '$6 ~ /\.js$/ { print $6 }'); do
    debugfs -R "cat $bundle_dir/$f" "$fs" 2>/dev/null > "$tmp/server.js"
    if grep -q -E 'var FieldgateServer ?= ?class ?\{' "$tmp/server.js"; then server=$bundle_dir/$f; break; fi
  done
  [ -n "$server" ] || { echo "test.sh: no file of $bundle_dir defines FieldgateServer" >&2; exit 1; }
  # The bundle has no whitespace (src/build/bundle.ts): the class and its start() are found in
  # the text, not by line.
  node -e '
    const fs = require("fs");
    const file = process.argv[1];
    const text = fs.readFileSync(file, "utf8");
    const cls = text.search(/var FieldgateServer ?= ?class ?\{/);
    const start = /async start\(\) ?\{/g;
    start.lastIndex = Math.max(cls, 0);
    const m = cls < 0 ? null : start.exec(text);
    if (m) fs.writeFileSync(file, text.slice(0, m.index + m[0].length) + "throw new Error(\"broken on purpose by image/test.sh\");" + text.slice(m.index + m[0].length));
  ' "$tmp/server.js"
  grep -q 'broken on purpose' "$tmp/server.js" || { echo "test.sh: could not break $server (no 'async start() {' line in FieldgateServer)" >&2; exit 1; }
  # Seen once in about five runs when this check piped debugfs into grep -q (likely the SIGPIPE
  # above): the write seemed not to take. Its output is kept, and it is tried again.
  for attempt in 1 2; do
    printf 'cd %s\nrm %s\nwrite %s %s\n' "$(dirname "$server")" "$(basename "$server")" "$tmp/server.js" "$(basename "$server")" | debugfs -w -f - "$fs" >"$tmp/debugfs.log" 2>&1 || true
    debugfs -R "cat $server" "$fs" 2>/dev/null > "$tmp/server.js.written"
    grep -q 'broken on purpose' "$tmp/server.js.written" && break
    echo "test.sh: debugfs did not write the broken server.js (attempt $attempt):" >&2
    sed 's/^/  /' "$tmp/debugfs.log" >&2
    [ "$attempt" = 2 ] && exit 1
  done
  make "$key" "$stick/broken.fgu" "$fs"
  rm -f "$fs"
  # The "USB stick" the bundles come on: a second disk, ext4 made from the folder.
  stick_mib=$(( $(du -sm "$stick" | cut -f1) + 64 ))
  mkfs.ext4 -q -F -d "$stick" "$tmp/stick.img" "${stick_mib}M"
  echo "test.sh: bundles made in $(( $(date +%s) - t_bundles )) s: $(ls -l "$stick" | awk 'NR > 1 { printf "%s %.1f MiB  ", $9, $5 / 1048576 }')"
  rm -rf "$stick"
fi
port=$(node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')

if [ "$uefi" = 1 ]; then
  # Each boot is its own qemu process (update-check.mjs): the guest's reboots end it.
  common=("${machine[@]}" -accel "$accel" -m 1024 -smp 1 -display none -monitor none -no-reboot -bios "$fw"
    -drive "$drive,if=virtio" -drive "file=$tmp/stick.img,format=raw,if=virtio,readonly=on")
  # The hardware watchdog that system.conf arms (a hung trial boot is reset).
  [ "$arch" = amd64 ] && common+=(-device i6300esb)
  if [ "$arch" = amd64 ]; then
    shell=(-chardev "socket,id=shell,path=@SOCK@,server=on,wait=off" -serial chardev:shell); shell_tty=ttyS1
  else
    shell=(-device virtio-serial-pci -chardev "socket,id=shell,path=@SOCK@,server=on,wait=off" -device virtconsole,chardev=shell); shell_tty=hvc0
  fi
  json() { node -e 'console.log(JSON.stringify(process.argv.slice(1)))' -- "$@"; }
  # The test's own network for the boot with a static address: a namespace with a tap whose
  # other end is the gateway's port (192.168.77.1 here, no DHCP server anywhere on it). The
  # whole test runs in it: qemu's user network forwards opc.tcp to 127.0.0.1 there as elsewhere.
  in_ns=()
  tap=""
  tap_error=""
  if [ "$(id -u)" != 0 ] || ! command -v ip >/dev/null; then
    tap_error="needs root and iproute2 (ip)"
  elif [ ! -c /dev/net/tun ]; then
    tap_error="no /dev/net/tun"
  else
    netns=fieldgate-test-$$
    if ip netns add "$netns" && ip -n "$netns" link set lo up && ip netns exec "$netns" ip tuntap add dev fgtap0 mode tap \
      && ip -n "$netns" addr add 192.168.77.1/24 dev fgtap0 && ip -n "$netns" link set fgtap0 up; then
      in_ns=(ip netns exec "$netns"); tap=fgtap0
    else
      tap_error="could not make a network namespace with a tap"
    fi
  fi
  echo "test.sh: the update test of $img ($arch, $accel, UEFI), $version -> $next${tap:+; the static-address boot on tap $tap in namespace $netns}"
  set +e
  "${in_ns[@]}" node "$here/update-check.mjs" --qemu "$qemu" --args "$(json "${common[@]}")" --shell "$(json "${shell[@]}")" --shell-tty "$shell_tty" \
    --disk "$tmp/disk.qcow2" --work "$tmp" --timeout "$timeout" --version "$version" --next "$next" \
    --image "$img" --tap "$tap" --tap-error "$tap_error" 2>&1 \
    | grep --line-buffered -v -E '^[0-9:.]+Z :|^ \.\.\. '
  status=${PIPESTATUS[0]}
  set -e
  echo "test.sh: bundle $(( $(stat -c %s "$out/fieldgate-$arch.fgu") / 1048576 )) MiB; the test took $(( $(date +%s) - t_test )) s"
  if [ "$status" != 0 ]; then
    for f in "$tmp"/console-*.log; do
      echo "test.sh: FAILED; the last lines of $(basename "$f"):"
      tail -n 40 "$f" | sed 's/^/  | /'
    done
  fi
  exit "$status"
fi

args=("${machine[@]}" -accel "$accel" -m 1024 -smp 1 -display none -monitor none -no-reboot
  -drive "$drive,if=virtio" -netdev "user,id=n0,restrict=on,hostfwd=tcp:127.0.0.1:$port-:4840"
  -device virtio-net-pci,netdev=n0 -serial "file:$tmp/console.log")
# --direct: the kernel and initramfs next to the image, with the debug shell on its command line.
cmdline=$(cat "$out/fieldgate-$arch.cmdline")
shell_sock=$tmp/shell.sock
# systemd's debug shell (root, no password) on a second console, for the figures below: a
# second serial port on the PC, a virtio console on arm64 (qemu's virt machine has one UART).
if [ "$arch" = amd64 ]; then
  console=ttyS0; shell_tty=ttyS1
  args+=(-chardev "socket,id=shell,path=$shell_sock,server=on,wait=off" -serial chardev:shell)
else
  console=ttyAMA0; shell_tty=hvc0
  args+=(-device virtio-serial-pci -chardev "socket,id=shell,path=$shell_sock,server=on,wait=off"
    -device virtconsole,chardev=shell)
fi
args+=(-kernel "$out/fieldgate-$arch.vmlinuz" -initrd "$out/fieldgate-$arch.initrd"
  -append "$cmdline console=$console systemd.debug_shell=/dev/$shell_tty")

echo "test.sh: booting $img ($arch, $accel, direct kernel), opc.tcp on 127.0.0.1:$port"
t0=$(date +%s%3N)
"$qemu" "${args[@]}" &
qemu_pid=$!

# node-opcua's own warnings about its client certificate are noise here.
set +e
node "$here/boot-check.mjs" --url "opc.tcp://127.0.0.1:$port" --t0 "$t0" --timeout "$timeout" \
  ${shell_sock:+--shell "$shell_sock"} --console "$tmp/console.log" 2>&1 \
  | grep --line-buffered -v -E '^[0-9:.]+Z :|^ \.\.\. '
status=${PIPESTATUS[0]}
set -e
if [ "$status" != 0 ]; then
  echo "test.sh: FAILED; the last lines of the serial console:"
  tail -n 60 "$tmp/console.log" | sed 's/^/  | /'
fi
exit "$status"
