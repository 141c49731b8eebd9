#!/bin/sh
# Builds busybox as a static x86-64 musl binary from Debian's busybox source
# package (apt-get source, Debian's patches applied), with musl-gcc.
#
# usage: user/busybox/build.sh OUTDIR     -> OUTDIR/busybox (+ busybox.config,
#                                            busybox.stamp, busybox.log)
#        user/busybox/build.sh --stamp    prints the cache key of the build
#                                         that would happen now (source
#                                         version + this script), fetches
#                                         nothing
#
# Needs (installed when missing): musl-tools dpkg-dev make gcc libc6-dev
# linux-libc-dev bzip2 xz-utils file.
# If apt has no deb-src entry, one for bookworm is added in
# /etc/apt/sources.list.d/shortbread-deb-src.sources (then apt-get update).
#
# Configuration: `make defconfig`, static. musl ships no Linux UAPI headers
# (<linux/*.h>, <asm/*.h>, <mtd/*.h>), which about twenty defconfig applets
# and libbb itself include, so Debian's linux-libc-dev copies are put on the
# include path with -idirafter (after musl's own headers, so musl always
# wins; this is what Alpine does with its linux-headers package). With them
# the whole defconfig builds under musl and nothing has to be disabled.
# The build date comes from debian/changelog (SOURCE_DATE_EPOCH), so the
# binary is reproducible.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
SUDO=
[ "$(id -u)" -eq 0 ] || SUDO=sudo

ensure_deb_src() { "$root/tools/deb-src.sh"; }

# The source version apt-get source would fetch now.
source_version() {
  v=$(apt-get source --print-uris busybox 2>/dev/null | sed -n "s/.*'[^']*busybox_\([^']*\)\.dsc'.*/\1/p" | sed 's/%2[bB]/+/g; s/%3[aA]/:/g; s/%7[eE]/~/g' | head -n 1)
  if [ -z "$v" ]; then
    $SUDO apt-get update -qq
    v=$(apt-get source --print-uris busybox 2>/dev/null | sed -n "s/.*'[^']*busybox_\([^']*\)\.dsc'.*/\1/p" | sed 's/%2[bB]/+/g; s/%3[aA]/:/g; s/%7[eE]/~/g' | head -n 1)
  fi
  [ -n "$v" ] || { echo "busybox: apt knows no busybox source package" >&2; exit 1; }
  echo "$v"
}

stamp() {
  echo "busybox-source=$(source_version) script=$(sha256sum "$here/build.sh" | cut -c1-16)"
}

[ $# -eq 1 ] || { echo "usage: $0 OUTDIR | --stamp" >&2; exit 2; }
"$root/tools/deps.sh" musl-tools dpkg-dev make gcc libc6-dev linux-libc-dev bzip2 xz-utils file
ensure_deb_src
if [ "$1" = --stamp ]; then
  stamp
  exit 0
fi

out=$1
mkdir -p "$out"
out=$(cd "$out" && pwd)
key=$(stamp)
start=$(date +%s)

tmp=$(mktemp -d /tmp/sb-busybox.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
chmod 0755 "$tmp"
mkdir "$tmp/src"
# apt downloads as the unprivileged _apt user when it can write there.
chmod 0777 "$tmp/src"
cd "$tmp/src"
echo "busybox: apt-get source busybox ($key)"
apt-get source -q busybox >"$tmp/source.log" 2>&1 || { cat "$tmp/source.log" >&2; exit 1; }
src=$(find "$tmp/src" -mindepth 1 -maxdepth 1 -type d -name 'busybox-*' | sed 's/%2[bB]/+/g; s/%3[aA]/:/g; s/%7[eE]/~/g' | head -n 1)
[ -n "$src" ] || { echo "busybox: no source tree unpacked" >&2; exit 1; }
SOURCE_DATE_EPOCH=$(dpkg-parsechangelog -l "$src/debian/changelog" -STimestamp)
export SOURCE_DATE_EPOCH

# Linux UAPI headers for musl-gcc (see the top of this file).
kh=$tmp/kernel-headers
mkdir "$kh"
multiarch=$(gcc -print-multiarch)
for d in linux asm asm-generic mtd; do
  if [ -d "/usr/include/$multiarch/$d" ]; then
    ln -s "/usr/include/$multiarch/$d" "$kh/$d"
  elif [ -d "/usr/include/$d" ]; then
    ln -s "/usr/include/$d" "$kh/$d"
  else
    echo "busybox: /usr/include/$d missing (linux-libc-dev)" >&2
    exit 1
  fi
done

cd "$src"
log=$out/busybox.log
: >"$log"
make CC=musl-gcc HOSTCC=gcc defconfig >>"$log" 2>&1
# static; UAPI headers after musl's
sed -i \
  -e 's|^# CONFIG_STATIC is not set|CONFIG_STATIC=y|' \
  -e "s|^CONFIG_EXTRA_CFLAGS=.*|CONFIG_EXTRA_CFLAGS=\"-idirafter $kh\"|" \
  .config
make CC=musl-gcc HOSTCC=gcc oldconfig </dev/null >>"$log" 2>&1
grep -q '^CONFIG_STATIC=y' .config || { echo "busybox: CONFIG_STATIC not set" >&2; exit 1; }
echo "busybox: building with musl-gcc on $(nproc) CPUs (log: $log)"
if ! make -j"$(nproc)" CC=musl-gcc HOSTCC=gcc >>"$log" 2>&1; then
  grep -E 'error|Error' "$log" | head -n 30 >&2
  echo "busybox: build failed, see $log" >&2
  exit 1
fi

# Checks: static x86-64, runs, has the applets the tests and users need.
info=$(file -b busybox)
case $info in
  *ELF\ 64-bit*x86-64*statically\ linked*) ;;
  *) echo "busybox: not a static x86-64 ELF: $info" >&2; exit 1 ;;
esac
./busybox --list >"$tmp/applets"
missing=
for a in sh ash ls cat cp mv rm mkdir ln echo test ps free uptime top mount umount \
         sort head wc grep sed awk find xargs tar gzip md5sum dd seq yes sleep kill init; do
  grep -qx "$a" "$tmp/applets" || missing="$missing $a"
done
[ -z "$missing" ] || { echo "busybox: applets missing:$missing" >&2; exit 1; }

cp busybox "$out/busybox.tmp"
mv "$out/busybox.tmp" "$out/busybox"
cp .config "$out/busybox.config"
echo "$key" >"$out/busybox.stamp"
echo "busybox: $out/busybox, $(wc -l <"$tmp/applets") applets, $(stat -c %s "$out/busybox") bytes, $(( $(date +%s) - start )) s"
