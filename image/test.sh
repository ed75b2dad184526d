#!/usr/bin/env bash
# Boots the appliance image under qemu (software emulation: no KVM needed) with opc.tcp forwarded
# to a free port on 127.0.0.1, waits for the service, and talks to it with node-opcua-client:
# GetEndpoints, a session, ServerStatus and a device tag (image/boot-check.mjs). Then reads the
# service's RSS, `systemd-analyze security fieldgate.service` and the boot figures on the booted
# gateway through systemd's debug shell on a second serial port (direct-kernel boot only: the
# image's own boot entry cannot be edited, so the shell exists only in this test).
#
#   image/test.sh [--arch amd64|arm64] [--out DIR] [--uefi] [--timeout SECONDS]
#
# --uefi boots the disk image through its own boot partition (OVMF/AAVMF firmware and
# systemd-boot) instead of the kernel and initramfs next to it; slower, and without the shell.
# Exit status: 0 pass, 1 fail, 77 skipped (qemu or the image missing; the message says which).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
arch=amd64
out=/var/tmp/fieldgate-image
uefi=0
accel=tcg
timeout=600
while [ $# -gt 0 ]; do
  case "$1" in
    --arch) arch=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --uefi) uefi=1; shift ;;
    --timeout) timeout=$2; shift 2 ;;
    -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
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
if [ "$uefi" = 1 ]; then [ -f "$fw" ] || skip "no UEFI firmware $fw (Debian: apt-get install $fwpkg)"; fi

tmp=$(mktemp -d /var/tmp/fieldgate-boot.XXXXXX)
qemu_pid=""
cleanup() {
  if [ -n "$qemu_pid" ] && kill -0 "$qemu_pid" 2>/dev/null; then kill "$qemu_pid"; wait "$qemu_pid" 2>/dev/null || true; fi
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
port=$(node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')

args=("${machine[@]}" -accel "$accel" -m 1024 -smp 1 -display none -monitor none -no-reboot
  -drive "$drive,if=virtio" -netdev "user,id=n0,hostfwd=tcp:127.0.0.1:$port-:4840"
  -device virtio-net-pci,netdev=n0 -serial "file:$tmp/console.log")
shell_sock=""
if [ "$uefi" = 1 ]; then
  args+=(-bios "$fw")
else
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
fi

echo "test.sh: booting $img ($arch, $accel, $([ "$uefi" = 1 ] && echo UEFI || echo direct kernel)), opc.tcp on 127.0.0.1:$port"
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
