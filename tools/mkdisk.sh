#!/bin/sh
# Builds a bootable disk image: a GPT with one Linux partition (from 1
# MiB to the end) holding an ext4 file system made by the host's mke2fs
# with Debian's default features, filled (mke2fs -d) with the tree of a
# newc initramfs (the user tree: busybox, the test programs, /etc) and an
# optional directory merged over it. Boot it with root=/dev/vda1 (make
# run DISK=...).
#
# usage: tools/mkdisk.sh OUT.img TREE.cpio [SIZE [EXTRA_DIR]]
#   SIZE     the image's size, as truncate takes it (default 1G; the
#            file is sparse)
#   EXTRA_DIR  merged over the tree last, if given
#
# Files keep the archive's owners (root): the tree is unpacked, and the
# file system made, under fakeroot when not run as root. The image is
# checked with e2fsck -fn before it is kept.
#
# Needs (installed when missing): e2fsprogs fdisk (sfdisk) cpio, and
# fakeroot when not root.
set -eu
if [ $# -lt 2 ] || [ $# -gt 4 ]; then
  echo "usage: $0 OUT.img TREE.cpio [SIZE [EXTRA_DIR]]" >&2
  exit 2
fi
out=$1 tree=$2 size=${3:-1G} extra=${4:-}
here=$(cd "$(dirname "$0")" && pwd)
[ -f "$tree" ] || { echo "mkdisk: $tree: no such file" >&2; exit 1; }
[ -z "$extra" ] || [ -d "$extra" ] || { echo "mkdisk: $extra is not a directory" >&2; exit 1; }
pkgs="e2fsprogs fdisk cpio"
asroot=
if [ "$(id -u)" -ne 0 ]; then
  pkgs="$pkgs fakeroot"
  asroot=fakeroot
fi
"$here/deps.sh" $pkgs
PATH=$PATH:/sbin:/usr/sbin

tmp=$(mktemp -d /tmp/sb-mkdisk.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
img=$tmp/disk.img
truncate -s "$size" "$img"
# One partition, aligned at 1 MiB, filling the disk (GPT keeps its
# backup table in the last 33 sectors).
printf 'label: gpt\nstart=2048, type=linux, name=shortbread-root\n' | sfdisk -q "$img"
# sfdisk --dump: "IMG1 : start=2048, size=N, type=..., uuid=..."
line=$(sfdisk --dump "$img" | grep '^/.*1 : ')
start=$(echo "$line" | sed -n 's/.*start= *\([0-9]*\),.*/\1/p')
sectors=$(echo "$line" | sed -n 's/.*size= *\([0-9]*\),.*/\1/p')
[ -n "$start" ] && [ -n "$sectors" ] || { echo "mkdisk: sfdisk made no partition: $line" >&2; exit 1; }

mkdir "$tmp/root"
treeabs=$(cd "$(dirname "$tree")" && pwd)/$(basename "$tree")
extraabs=
[ -z "$extra" ] || extraabs=$(cd "$extra" && pwd)
# Unpacked and made in one fakeroot session: mke2fs -d copies the owners
# the unpacking set.
$asroot sh -eu -c '
  cd "$1/root"
  cpio --quiet -idm --no-absolute-filenames < "$2"
  if [ -n "$3" ]; then cp -a "$3"/. .; fi
  mke2fs -q -F -t ext4 -L shortbread-root -d . -E offset=$(( $4 * 512 )) "$1/disk.img" $(( $5 / 2 ))k
' mkdisk "$tmp" "$treeabs" "$extraabs" "$start" "$sectors"
e2fsck -fn "$img?offset=$((start * 512))" >"$tmp/fsck.log" 2>&1 || { cat "$tmp/fsck.log" >&2; echo "mkdisk: e2fsck -fn found errors" >&2; exit 1; }
mv "$img" "$out"
echo "disk: $out, $size, partition 1 at sector $start ($((sectors / 2048)) MiB ext4, $(cpio -it < "$tree" 2>/dev/null | wc -l) entries from $(basename "$tree")$( [ -z "$extra" ] || echo " and $extra"))"
