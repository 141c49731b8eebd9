#!/bin/sh
# Copies modules of the Debian kernel that tools/linux/kernel.sh fetched
# (same package and version) out of its linux-image package, with
# everything they depend on, for an initramfs that insmods them: Debian
# builds virtio-blk and ext4 as modules, and the guest has no modprobe.
#
# usage: tools/linux/modules.sh KERNEL_OUTDIR [MODULE...]
#   e.g. tools/linux/modules.sh build/linux virtio_pci virtio_blk crc32c_generic ext4
#   -> KERNEL_OUTDIR/modules/NAME.ko for each module and its dependencies,
#      KERNEL_OUTDIR/modules/load-order (one name a line, dependencies first).
#   Without MODULEs: the set every guest of the project uses (the disks'
#   controllers and ext4, and the network cards Shortbread has drivers
#   for). Callers use that one set: the cache holds a single list, and
#   two callers with different lists would extract it again at each turn.
# Cached: nothing is downloaded when KERNEL_OUTDIR/modules/stamp matches the
# kernel's version and the module list.
#
# Needs (installed when missing): apt dpkg binutils (objcopy reads each
# module's .modinfo "depends=" list, so no kmod is needed on the host).
set -eu
[ $# -ge 1 ] || { echo "usage: $0 KERNEL_OUTDIR [MODULE...]" >&2; exit 2; }
here=$(cd "$(dirname "$0")/../.." && pwd)
"$here/tools/deps.sh" apt dpkg binutils
kdir=$(cd "$1" && pwd)
shift
[ $# -gt 0 ] || set -- virtio_pci virtio_blk crc32c_generic ext4 sd_mod ahci nvme virtio_net e1000 e1000e igb
meta=$(sed -n 's/^linux-image-amd64 //p' "$kdir/vmlinuz.version" 2>/dev/null)
[ -n "$meta" ] || { echo "modules: no $kdir/vmlinuz.version (run tools/linux/kernel.sh $kdir)" >&2; exit 1; }
out=$kdir/modules
want="linux-image-amd64 $meta: $*"
if [ "$(cat "$out/stamp" 2>/dev/null)" = "$want" ]; then
  echo "modules: $out is up to date"
  exit 0
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
chmod 0777 "$tmp"
cd "$tmp"
apt-get download -q "linux-image-amd64=$meta" >/dev/null
dep=$(dpkg-deb -f linux-image-amd64_*.deb Depends | tr ',' '\n' | sed -n 's/^ *\(linux-image-[0-9][^ ]*-amd64\) *(= *\([^)]*\)).*/\1=\2/p' | head -n 1)
[ -n "$dep" ] || { echo "modules: cannot find the image package" >&2; exit 1; }
echo "modules: extracting from $dep"
apt-get download -q "$dep" >/dev/null
dpkg-deb -x "${dep%%=*}"_*.deb root

# find NAME: the module file (names may use - or _ interchangeably)
find_ko() {
  f=$(find root/lib/modules -name "$1.ko" -o -name "$(echo "$1" | tr _ -).ko" | head -n 1)
  [ -n "$f" ] || { echo "modules: no module $1 in $dep" >&2; exit 1; }
  echo "$f"
}

# Depth-first: a module is listed after everything it depends on.
: >order
visit() {
  grep -qx "$1" order && return 0
  ko=$(find_ko "$1")
  deps=$(objcopy -O binary --only-section=.modinfo "$ko" /dev/stdout | tr '\0' '\n' | sed -n 's/^depends=//p' | tr ',' ' ')
  for d in $deps; do visit "$d"; done
  grep -qx "$1" order || echo "$1" >>order
}
for m in "$@"; do visit "$m"; done

rm -rf "$out.new"
mkdir -p "$out.new"
while read -r m; do
  cp "$(find_ko "$m")" "$out.new/$m.ko"
done <order
cp order "$out.new/load-order"
echo "$want" >"$out.new/stamp"
rm -rf "$out"
mv "$out.new" "$out"
echo "modules: $(tr '\n' ' ' <"$out/load-order")-> $out"
