#!/bin/sh
# Boots an ISO in QEMU (TCG; KVM is used only if present and asked for)
# with the serial console on stdout and a hard time limit.
# usage: [FIRMWARE=uefi] [MEM=512M] tools/qemu.sh ISO CPUS TIMEOUT_SECONDS [extra qemu args...]
# FIRMWARE=uefi boots through OVMF instead of SeaBIOS.
# MACHINE=pc boots the i440FX machine instead of q35 (MACHINE=q35,hpet=off:
# q35 without an HPET).
# CPU=MODEL is the processor QEMU emulates (default max: every feature TCG
# has; qemu64 has the fewest; `qemu-system-x86_64 -cpu help` lists them).
# DISK=IMAGE attaches a raw image as a virtio-blk disk (/dev/vda).
# DISK2=IMAGE attaches a second one (/dev/vdb; /dev/vda without DISK).
# SATA="IMAGE..." attaches raw images as SATA disks on q35's AHCI
# controller (/dev/sda, sdb, ...: ports 0, 1, 3, 4, 5; -cdrom is port 2).
# NVME=IMAGE attaches a raw image as an NVMe controller's namespace 1
# (/dev/nvme0n1).
# Every disk is attached with discard=unmap: a discard (BLKDISCARD, TRIM,
# Dataset Management, an ext4 FITRIM) punches a hole in its image.
# The CD-ROM is booted first (-boot order=d): a disk with a partition
# table carries a boot signature the firmware would otherwise try.
# Exit status: the kernel's status (isa-debug-exit), 124 on timeout.
set -u
. "$(dirname "$0")/sata.sh"
iso=$1 cpus=$2 limit=$3
shift 3
# QEMU that cannot start exits with 1, which is also how a kernel status of
# 0 comes out (below): a missing ISO must not read as a passing boot.
[ -f "$iso" ] || { echo "qemu: $iso: no such file" >&2; exit 2; }
# Prepended, so DISK2 goes first to come after DISK on the command line
# (and on the PCI bus).
if [ -n "${NVME:-}" ]; then
  set -- -drive "file=$NVME,if=none,id=nv0,format=raw,discard=unmap" -device nvme,serial=sbnvme0,drive=nv0 "$@"
fi
if [ -n "${DISK2:-}" ]; then
  set -- -drive "file=$DISK2,if=none,id=vd1,format=raw,discard=unmap" -device virtio-blk-pci,drive=vd1 "$@"
fi
if [ -n "${DISK:-}" ]; then
  set -- -drive "file=$DISK,if=none,id=vd0,format=raw,discard=unmap" -device virtio-blk-pci,drive=vd0 "$@"
fi
set -- $(tools_sata_args) "$@"
if [ "${FIRMWARE:-bios}" = uefi ]; then
  set -- -bios /usr/share/ovmf/OVMF.fd "$@"
fi
# A guest still running 8 s before its limit is about to be killed for
# a hang: first tools/qemu-dump.sh prints, through the monitor (a pipe),
# where each CPU is, with KERNEL_ELF's function names (default: the
# build's kernel).
mon=$(mktemp -d)
mkfifo "$mon/m.in" "$mon/m.out"
(
  i=8
  while [ $i -lt "$limit" ] && [ ! -e "$mon/done" ]; do sleep 1; i=$((i + 1)); done
  if [ ! -e "$mon/done" ] && [ "$limit" -ge 20 ]; then
    "$(dirname "$0")/qemu-dump.sh" "$mon/m" "${KERNEL_ELF:-$(dirname "$0")/../build/kernel.elf}" >&2
  fi
) &
watcher=$!
timeout --foreground -k 5 "$limit" qemu-system-x86_64 -machine "${MACHINE:-q35}" -cpu "${CPU:-max}" -m "${MEM:-512M}" \
  -smp "$cpus" -display none -serial stdio -monitor "pipe:$mon/m" -no-reboot \
  -device isa-debug-exit,iobase=0xf4,iosize=0x04 -cdrom "$iso" -boot order=d "$@" </dev/null
s=$?
touch "$mon/done"
wait "$watcher"
rm -rf "$mon"
case $s in
  124|137) echo "qemu: timed out after ${limit}s" >&2; exit 124 ;;
  0) echo "qemu: exited without a kernel status" >&2; exit 125 ;;
esac
# isa-debug-exit makes QEMU exit with status*2+1.
exit $(( (s - 1) / 2 ))
