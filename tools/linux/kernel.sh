#!/bin/sh
# Fetches Debian's stock x86-64 kernel (the Linux reference for the user-space
# tests) through apt only, and copies it to OUTDIR/vmlinuz.
# usage: tools/linux/kernel.sh OUTDIR
#
# Needs (installed when missing): apt, dpkg (apt-get download, dpkg-deb).
# The kernel is cached: nothing is downloaded when OUTDIR/vmlinuz was taken
# from the package apt would pick now (OUTDIR/vmlinuz.version records it).
#
# Debian's kernel builds virtio, ata and most drivers as modules; none are
# needed, because the initramfs is the root file system. What the tests do
# need is built in, and checked below from the package's config file:
# initramfs support, devtmpfs, tmpfs, the 8250 serial console and /dev/port
# (CONFIG_DEVPORT, used by the runner to reach QEMU's isa-debug-exit).
set -eu
[ $# -eq 1 ] || { echo "usage: $0 OUTDIR" >&2; exit 2; }
here=$(cd "$(dirname "$0")/../.." && pwd)
"$here/tools/deps.sh" apt dpkg

out=$1
mkdir -p "$out"
out=$(cd "$out" && pwd)

# The metapackage names the versioned image package apt would install now.
meta_version=$(apt-cache policy linux-image-amd64 | sed -n 's/^ *Candidate: //p')
if [ -z "$meta_version" ] || [ "$meta_version" = "(none)" ]; then
  SUDO=; [ "$(id -u)" -eq 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  meta_version=$(apt-cache policy linux-image-amd64 | sed -n 's/^ *Candidate: //p')
fi
if [ -f "$out/vmlinuz" ] && [ "$(cat "$out/vmlinuz.version" 2>/dev/null)" = "linux-image-amd64 $meta_version" ]; then
  echo "kernel: $out/vmlinuz is up to date (linux-image-amd64 $meta_version)"
  exit 0
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# apt downloads as the unprivileged _apt user when it can write the directory.
chmod 0777 "$tmp"
cd "$tmp"
apt-get download -q "linux-image-amd64=$meta_version" >/dev/null
meta_deb=$(ls linux-image-amd64_*.deb)
# Depends: linux-image-6.1.0-NN-amd64 (= VERSION)
dep=$(dpkg-deb -f "$meta_deb" Depends | tr ',' '\n' | sed -n 's/^ *\(linux-image-[0-9][^ ]*-amd64\) *(= *\([^)]*\)).*/\1=\2/p' | head -n 1)
[ -n "$dep" ] || { echo "kernel: cannot find the image package in: $(dpkg-deb -f "$meta_deb" Depends)" >&2; exit 1; }
echo "kernel: downloading $dep"
apt-get download -q "$dep" >/dev/null
pkg=${dep%%=*}
img_deb=$(ls "$pkg"_*.deb)
dpkg-deb -x "$img_deb" root

vmlinuz=$(ls root/boot/vmlinuz-* | head -n 1)
config=$(ls root/boot/config-* | head -n 1)
missing=
for opt in CONFIG_BLK_DEV_INITRD CONFIG_DEVTMPFS CONFIG_TMPFS CONFIG_PROC_FS CONFIG_SYSFS \
           CONFIG_SERIAL_8250 CONFIG_SERIAL_8250_CONSOLE CONFIG_DEVPORT CONFIG_BINFMT_ELF \
           CONFIG_EPOLL CONFIG_EVENTFD CONFIG_FUTEX; do
  grep -q "^$opt=y" "$config" || missing="$missing $opt"
done
if [ -n "$missing" ]; then
  echo "kernel: $pkg lacks built-in:$missing" >&2
  exit 1
fi
cp "$vmlinuz" "$out/vmlinuz.tmp"
cp "$config" "$out/config"
mv "$out/vmlinuz.tmp" "$out/vmlinuz"
echo "linux-image-amd64 $meta_version" >"$out/vmlinuz.version"
echo "kernel: $out/vmlinuz from $pkg ($(basename "$vmlinuz")), CONFIG_DEVPORT=y"
