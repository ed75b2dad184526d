#!/usr/bin/env bash
# mmdebstrap --customize-hook of image/build.sh: runs on the build machine with $1 = the target
# root, while mmdebstrap has /proc, /sys and /dev mounted in it; commands in `chroot "$1"` run
# as the target architecture (natively, or under qemu-user through binfmt_misc).
# Inputs from build.sh: FIELDGATE_APP (staged app), FIELDGATE_REPO, FIELDGATE_NATIVE (packages
# with a binding.gyp, space-separated), FIELDGATE_VERSION (the image's version), FIELDGATE_UPDATE_KEY
# (the public key that update bundles must be signed with).
set -euo pipefail
root=$1
app=$FIELDGATE_APP
repo=$FIELDGATE_REPO
in_root() { chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 "$@"; }
log() { printf '[%s] customize: %s\n' "$(date +%T)" "$*"; }

log "app into /usr/lib/fieldgate"
mkdir -p "$root/usr/lib/fieldgate" "$root/usr/share/fieldgate" "$root/usr/libexec/fieldgate" "$root/usr/share/doc/fieldgate"
cp -a "$app/package.json" "$app/package-lock.json" "$app/dist" "$app/node_modules" "$root/usr/lib/fieldgate/"
cp -a "$app/config" "$root/usr/share/fieldgate/config"
cp "$repo/README.md" "$root/usr/share/doc/fieldgate/README.md"
chown -R 0:0 "$root/usr/lib/fieldgate" "$root/usr/share/fieldgate"
chmod 0755 "$root/usr/lib/fieldgate/dist/src/cli.js"
ln -sf ../lib/fieldgate/dist/src/cli.js "$root/usr/bin/fieldgate"

if [ -n "${FIELDGATE_NATIVE// /}" ]; then
  # Compilers and headers only for this step: whatever it installs is purged afterwards.
  log "native addons ($FIELDGATE_NATIVE): build tools in"
  in_root dpkg-query -W -f '${Package}\n' | sort > "$root/tmp/before"
  in_root apt-get install -y -qq --no-install-recommends build-essential python3 npm libnode-dev node-gyp >/dev/null
  log "native addons: npm rebuild from source"
  # build_from_source: no prebuilt binary is fetched (none could be, and it would be for another
  # libc or Node build); nodedir: Debian's headers, nothing downloaded by node-gyp.
  # shellcheck disable=SC2086
  in_root sh -c "cd /usr/lib/fieldgate && npm_config_build_from_source=true npm_config_nodedir=/usr \
    npm rebuild --foreground-scripts --no-audit --no-fund $FIELDGATE_NATIVE"
  for pkg in $FIELDGATE_NATIVE; do
    found=$(find "$root/usr/lib/fieldgate/node_modules/$pkg" -name '*.node' -path '*Release*' | head -1)
    [ -n "$found" ] || { echo "customize: $pkg: no compiled .node file" >&2; exit 1; }
    log "native addons: $(file -b "$found" 2>/dev/null | cut -d, -f1-2 || echo "$found")"
  done
  # Smoke test in the target: the addons load with Debian's node.
  in_root sh -c "cd /usr/lib/fieldgate && node -e '
    const { createRequire } = require(\"node:module\");
    const r = createRequire(\"/usr/lib/fieldgate/package.json\");
    for (const p of process.argv.slice(1)) { r(p); console.log(\"loads:\", p); }' $FIELDGATE_NATIVE"
  in_root dpkg-query -W -f '${Package}\n' | sort > "$root/tmp/after"
  added=$(comm -13 "$root/tmp/before" "$root/tmp/after" | tr '\n' ' ')
  log "native addons: build tools out"
  # shellcheck disable=SC2086
  in_root apt-get purge -y -qq $added >/dev/null
  rm -f "$root/tmp/before" "$root/tmp/after"
  # Object files and sources of the addons are not needed at run time.
  for pkg in $FIELDGATE_NATIVE; do
    d=$root/usr/lib/fieldgate/node_modules/$pkg
    rm -rf "$d/build/Release/obj.target" "$d/build/Release/.deps" "$d/deps" "$d/src"
  done
  rm -rf "$root/root/.npm" "$root/root/.cache"
fi

# The version this root file system is (os-release's IMAGE_ID/IMAGE_VERSION, as systemd and
# `hostnamectl` read them): what `fieldgate update` compares and the System object shows.
log "version $FIELDGATE_VERSION, update key"
sed -i '/^IMAGE_ID=/d; /^IMAGE_VERSION=/d' "$root/usr/lib/os-release"
printf 'IMAGE_ID=fieldgate\nIMAGE_VERSION=%s\n' "$FIELDGATE_VERSION" >> "$root/usr/lib/os-release"
install -D -m 0644 "$FIELDGATE_UPDATE_KEY" "$root/usr/share/fieldgate/update-keys/update-key.pem"

log "units"
install -m 0644 "$repo/systemd/fieldgate.service" "$root/usr/lib/systemd/system/fieldgate.service"
install -m 0644 "$repo/systemd/fieldgate-firstboot.service" "$root/usr/lib/systemd/system/fieldgate-firstboot.service"
install -m 0755 "$repo/systemd/fieldgate-firstboot" "$root/usr/libexec/fieldgate/firstboot"
for u in fieldgate-trial.service fieldgate-update.service fieldgate-update.path fieldgate-update.timer \
         fieldgate-network-request.path fieldgate-network-request.service; do
  install -m 0644 "$repo/systemd/$u" "$root/usr/lib/systemd/system/$u"
done
install -m 0755 "$repo/systemd/fieldgate-trial" "$root/usr/libexec/fieldgate/trial"
install -m 0644 "$repo/systemd/fieldgate-settings.service" "$root/usr/lib/systemd/system/fieldgate-settings.service"
install -m 0755 "$repo/systemd/fieldgate-settings" "$root/usr/libexec/fieldgate/settings"
mkdir -p "$root/etc/systemd/system.conf.d"
install -m 0644 "$repo/systemd/system.conf" "$root/etc/systemd/system.conf.d/fieldgate.conf"
install -m 0644 "$repo/systemd/sysusers.conf" "$root/usr/lib/sysusers.d/fieldgate.conf"
install -m 0644 "$repo/systemd/tmpfiles.conf" "$root/usr/lib/tmpfiles.d/fieldgate.conf"
mkdir -p "$root/etc/systemd/journald.conf.d"
install -m 0644 "$repo/systemd/journald.conf" "$root/etc/systemd/journald.conf.d/fieldgate.conf"
# A freshly formatted data partition gets the default config back (tmpfiles C: copy if absent).
for f in "$root"/usr/share/fieldgate/config/*; do
  n=$(basename "$f")
  printf 'C /etc/fieldgate/%s 0640 root fieldgate - /usr/share/fieldgate/config/%s\n' "$n" "$n"
done > "$root/usr/lib/tmpfiles.d/fieldgate-defaults.conf"

in_root systemd-sysusers
in_root systemctl enable fieldgate.service fieldgate-firstboot.service fieldgate-settings.service systemd-networkd.service \
  systemd-resolved.service systemd-timesyncd.service ssh.service \
  fieldgate-trial.service fieldgate-update.path fieldgate-update.timer fieldgate-network-request.path
# Nothing writes the read-only root: no package timers, no interactive first-boot questions.
in_root systemctl mask apt-daily.timer apt-daily-upgrade.timer dpkg-db-backup.timer e2scrub_all.timer \
  e2scrub_reap.service systemd-firstboot.service ssh.socket 2>/dev/null || true
in_root passwd -l root >/dev/null
log "systemd-analyze verify (the target's systemd)"
in_root systemd-analyze verify --man=no fieldgate.service fieldgate-firstboot.service fieldgate-settings.service fieldgate-trial.service \
  fieldgate-update.service fieldgate-update.path fieldgate-update.timer fieldgate-network-request.path fieldgate-network-request.service
