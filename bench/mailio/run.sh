#!/bin/sh
# Mail on ext4, per message: mailbench (2 clients, 1 KiB messages, 5 s)
# on a fresh 256 MiB mke2fs -t ext4 image over virtio-blk, and the
# device's writes and flushes per accepted message from /proc/diskstats
# around it (the same file on both kernels). Boots alternate between the
# kernels named, REPS rounds at each CPU count, so host load drifts over
# all of them alike; the summary gives medians and ranges (issue 13/14).
#
# usage: bench/mailio/run.sh [REPS] [CPUS...] > report
#   KERNELS="linux build/kernel.elf OTHER.elf" (default: linux and
#   build/kernel.elf); a Shortbread kernel is named by its file.
# Needs make apps, make user, make kernel and tools/linux/kernel.sh build/linux.
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
reps=${1:-3}
[ $# -gt 0 ] && shift
cpus=${*:-1 2}
kernels=${KERNELS:-linux $root/build/kernel.elf}
tmp=$(mktemp -d /tmp/sb-mailio.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
stage=$tmp/stage
"$root/apps/stage.sh" "$root/build/apps" "$stage" >/dev/null
"$root/tools/linux/modules.sh" "$root/build/linux" >/dev/null
mkdir -p "$stage/lib" && cp -r "$root/build/linux/modules" "$stage/lib/modules"
cmd='if [ -f /lib/modules/load-order ]; then for m in $(cat /lib/modules/load-order); do insmod /lib/modules/$m.ko 2>/dev/null; done; fi
mkdir -p /mnt/disk; mount -t ext4 /dev/vda /mnt/disk || exit 3
grep -w vda /proc/diskstats
mailbench -c 2 -t 5 -s 1024 -m fork -d /mnt/disk 2>&1 | grep MAILBENCH
grep -w vda /proc/diskstats
umount /mnt/disk'
echo "# bench/mailio $(date -u +%FT%TZ) commit $(git -C "$root" rev-parse --short HEAD) reps=$reps cpus=$cpus"
for rep in $(seq "$reps"); do
	for c in $cpus; do
		for k in $kernels; do
			img=$tmp/disk.img
			rm -f "$img"; truncate -s 256M "$img"
			mkfs.ext4 -q -F -E lazy_itable_init=0,lazy_journal_init=0 "$img"
			echo "== $k cpus=$c rep=$rep $(date +%T) load $(cut -d' ' -f1 /proc/loadavg)"
			if [ "$k" = linux ]; then
				LINUX=1 CPUS=$c TIMEOUT=400 QEMU_EXTRA="-drive file=$img,if=virtio,format=raw,cache=unsafe" \
					"$root/tools/run-cmd.sh" "$stage" "$cmd" 2>&1 | grep -E " vda |MAILBENCH" || true
			else
				SB_KERNEL=$k CPUS=$c TIMEOUT=400 QEMU_EXTRA="-drive file=$img,if=virtio,format=raw,cache=unsafe" \
					"$root/tools/run-cmd.sh" "$stage" "$cmd" 2>&1 | grep -E " vda |MAILBENCH" || true
			fi
		done
	done
done
