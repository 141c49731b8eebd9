#!/bin/sh
# Boots Linux (the reference) with an initramfs in the QEMU configuration
# Shortbread uses, serial console on stdout, under a hard time limit.
# usage: tools/linux/run.sh VMLINUZ INITRAMFS CPUS TIMEOUT_SECONDS
#   APPEND="..."  extra kernel parameters, e.g. RUNNER_ONLY=t_file (passed
#                 to the runner as environment) or rdinit=/sbin/init (a shell)
#   MEM=512M      guest memory
#   MACHINE=q35   QEMU's machine type (pc: the i440FX board, e1000's home)
#   QEMU_EXTRA="..." more QEMU arguments, split at spaces (e.g. a -drive)
#   DISK=IMAGE    attaches a raw image as a virtio-blk disk (/dev/vda), as
#                 tools/qemu.sh does, and appends Debian's virtio modules
#                 (tools/linux/modules.sh, cached beside VMLINUZ) to the
#                 initramfs for the runner to load
#   DISK2=IMAGE   a second disk (/dev/vdb; with DISK, else /dev/vda), and
#                 Debian's ext4 modules with their dependencies
#   SATA="IMAGE..." SATA disks on q35's AHCI controller (/dev/sda, ...),
#                 as tools/qemu.sh attaches them, with Debian's ahci and
#                 sd_mod modules
#   NVME=IMAGE    attaches a raw image as an NVMe controller's namespace 1
#                 (/dev/nvme0n1), as tools/qemu.sh does, with the nvme module
# Exit status: the guest's status (isa-debug-exit, written by the runner),
# 124 on timeout, 125 if QEMU exited without a status (e.g. a kernel panic).
#
# Needs (installed when missing): qemu-system-x86 coreutils (timeout).
set -u
[ $# -eq 4 ] || { echo "usage: $0 VMLINUZ INITRAMFS CPUS TIMEOUT_SECONDS" >&2; exit 2; }
here=$(cd "$(dirname "$0")/../.." && pwd)
"$here/tools/deps.sh" qemu-system-x86 coreutils cpio || exit 2
kernel=$1 initrd=$2 cpus=$3 limit=$4
for f in "$kernel" "$initrd"; do
  [ -f "$f" ] || { echo "run: $f: no such file" >&2; exit 2; }
done
. "$here/tools/sata.sh"
disk=
if [ -n "${DISK:-}${DISK2:-}${SATA:-}${NVME:-}" ]; then
  kdir=$(dirname "$kernel")
  # The one module set all guests use (modules.sh caches one).
  "$here/tools/linux/modules.sh" "$kdir" >&2 || exit 2
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  mkdir -p "$tmp/root/lib/modules"
  cp "$kdir"/modules/*.ko "$kdir/modules/load-order" "$tmp/root/lib/modules/"
  # Linux unpacks concatenated newc archives in turn.
  (cd "$tmp/root" && find . | cpio -o -H newc --quiet) | cat "$initrd" - > "$tmp/initrd.cpio"
  initrd=$tmp/initrd.cpio
  [ -z "${DISK:-}" ] || disk="-drive file=$DISK,if=none,id=vd0,format=raw,discard=unmap -device virtio-blk-pci,drive=vd0"
  [ -z "${DISK2:-}" ] || disk="$disk -drive file=$DISK2,if=none,id=vd1,format=raw,discard=unmap -device virtio-blk-pci,drive=vd1"
  disk="$disk $(tools_sata_args | tr '\n' ' ')"
  [ -z "${NVME:-}" ] || disk="$disk -drive file=$NVME,if=none,id=nv0,format=raw,discard=unmap -device nvme,serial=sbnvme0,drive=nv0"
fi
# no_timer_check: Linux's boot-time check that the timer interrupt reaches
# the I/O APIC counts ticks against a busy-wait; on a loaded host under TCG
# the vCPU loses the race and the kernel panics ("IO-APIC + timer doesn't
# work!", seen with a host load of 17). Cloud images boot VMs with it too.
timeout --foreground -k 5 "$limit" qemu-system-x86_64 -machine "${MACHINE:-q35}" -cpu max -m "${MEM:-512M}" \
  -smp "$cpus" -display none -serial stdio -monitor none -no-reboot \
  -device isa-debug-exit,iobase=0xf4,iosize=0x04 \
  -kernel "$kernel" -initrd "$initrd" -append "console=ttyS0 panic=-1 quiet no_timer_check ${APPEND:-}" $disk ${QEMU_EXTRA:-} </dev/null
s=$?
case $s in
  124|137) echo "run: timed out after ${limit}s" >&2; exit 124 ;;
  0) echo "run: QEMU exited without a guest status" >&2; exit 125 ;;
esac
# isa-debug-exit makes QEMU exit with status*2+1.
if [ $((s % 2)) -eq 1 ]; then
  exit $(( (s - 1) / 2 ))
fi
echo "run: QEMU failed (exit $s)" >&2
exit 125
