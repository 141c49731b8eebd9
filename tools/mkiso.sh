#!/bin/sh
# Builds a GRUB2 (BIOS) bootable ISO: the multiboot2 stub as the kernel,
# the Go kernel ELF as its first module.
# The initramfs (newc cpio) is the second module; it defaults to
# build/initramfs.cpio next to the kernel, and "none" leaves it out (a
# kernel that mounts its root from a disk, root=, needs none).
# usage: tools/mkiso.sh OUT.iso STUB.elf KERNEL.elf "CMDLINE" [INITRAMFS.cpio|none]
set -eu
out=$1 stub=$2 kernel=$3 cmdline=${4:-}
initramfs=${5:-$(dirname "$kernel")/initramfs.cpio}
root=$(cd "$(dirname "$0")/.." && pwd)
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
mkdir -p "$dir/boot/grub"
cp "$stub" "$dir/boot/stub.elf"
cp "$kernel" "$dir/boot/kernel.elf"
if [ "$initramfs" = none ]; then
  sed -e "s|@CMDLINE@|$cmdline|" -e '/module2 .*initramfs/d' "$root/boot/grub.cfg" > "$dir/boot/grub/grub.cfg"
else
  cp "$initramfs" "$dir/boot/initramfs.cpio"
  sed "s|@CMDLINE@|$cmdline|" "$root/boot/grub.cfg" > "$dir/boot/grub/grub.cfg"
fi
grub-mkrescue -o "$out" "$dir" >/dev/null 2>&1 || grub-mkrescue -o "$out" "$dir"
