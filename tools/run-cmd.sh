#!/bin/sh
# Boots Shortbread (or, with LINUX=1, Debian's Linux kernel in the same
# QEMU configuration) with the user initramfs (busybox and the test
# programs) plus an extra host directory merged in, runs one shell command
# as the first program and exits with that command's exit status.
#
# usage: [LINUX=1] [CPUS=1] [TIMEOUT=600] tools/run-cmd.sh EXTRA_DIR 'COMMAND'
#   EXTRA_DIR  copied over / in the initramfs ("" or - for none)
#   MEM=512M, QEMU_EXTRA="..." (more QEMU arguments) are passed on to QEMU
#   LOG=FILE keeps the whole serial log (for prof= dumps)
#   KARGS="..." more Shortbread command-line options (prof=997 to profile)
#   SB_KERNEL=FILE boots that Shortbread kernel instead of build/kernel.elf
#   (an A/B comparison of two builds)
# Needs: build/user (make user) and, for LINUX=1, build/linux (tools/linux/kernel.sh).
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
extra=$1 cmd=$2
cpus=${CPUS:-1} limit=${TIMEOUT:-600}
build=$root/build
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
(cd "$stage" && cpio -id --quiet < "$build/user/initramfs.cpio")
if [ -n "$extra" ] && [ "$extra" != - ]; then
  cp -a "$extra"/. "$stage"/
fi
mkdir -p "$stage/etc"
# The command runs under sh; its status goes to QEMU's isa-debug-exit
# device (through /dev/port on Linux; Shortbread turns init's exit status
# into the power-off status itself).
cat > "$stage/etc/run-cmd.sh" <<SCRIPT
#!/bin/sh
mount -t proc proc /proc 2>/dev/null
mount -t devtmpfs dev /dev 2>/dev/null
mkdir -p /sys && mount -t sysfs sysfs /sys 2>/dev/null
mkdir -p /dev/shm && mount -t tmpfs -o mode=1777,nosuid,nodev shm /dev/shm 2>/dev/null
mkdir -p /tmp
sh -c '$(printf '%s' "$cmd" | sed "s/'/'\\\\''/g")'
s=\$?
if [ -c /dev/port ]; then
  printf "\\\\\$(printf %03o \$s)" | dd of=/dev/port bs=1 seek=244 2>/dev/null
fi
exit \$s
SCRIPT
chmod 755 "$stage/etc/run-cmd.sh"
initrd=$stage/initramfs.cpio
(cd "$stage" && find . -mindepth 1 ! -name initramfs.cpio | LC_ALL=C sort | cpio -o -H newc --quiet --owner=0:0) > "$initrd"
if [ "${LINUX:-0}" = 1 ]; then
  APPEND="rdinit=/bin/sh -- /etc/run-cmd.sh" "$root/tools/linux/run.sh" "$build/linux/vmlinuz" "$initrd" "$cpus" "$limit"
else
  iso=$stage/run-cmd.iso
  "$root/tools/mkiso.sh" "$iso" "$build/stub.elf" "${SB_KERNEL:-$build/kernel.elf}" "init=/bin/sh loglevel=warn ${KARGS:-} -- /etc/run-cmd.sh" "$initrd"
  status=0
  # shellcheck disable=SC2086 # QEMU_EXTRA is a list of arguments
  "$root/tools/qemu.sh" "$iso" "$cpus" "$limit" ${QEMU_EXTRA:-} > "$stage/log" 2>&1 || status=$?
  sed -n '/entering the Go runtime/,$p' "$stage/log" | tail -n +2
  if [ -n "${LOG:-}" ]; then cp "$stage/log" "$LOG"; fi
  exit "$status"
fi
