#!/bin/sh
# Builds the TCG plugins for the QEMU installed here: pccount (executed
# instructions per PC, tools/tcgcount/pccount.c) and, with plugin API 2 or
# later, evcount (costly instructions and instructions per address-space
# half, evcount.c).
#
# usage: tools/tcgcount/build.sh OUTDIR      -> OUTDIR/libpccount.so, OUTDIR/libevcount.so
#
# Debian ships QEMU with TCG plugin support (plugin API version 1 in QEMU
# 7.2, 4 in QEMU 10) but no qemu-plugin.h. The header comes from Debian's
# source package of the QEMU on PATH (the Debian version its --version
# names): `apt-get source --download-only qemu=VERSION` fetches the source
# archives (24 MB for 7.2, 39 MB for 10) and only
# include/qemu/qemu-plugin.h is taken from the orig tarball (enough of
# the download: apt checks each file's hash as it arrives). The header is
# cached in build/tcgcount/ with the orig tarball's name and fetched again
# when the QEMU on PATH is another upstream release.
#
# Needs (installed when missing): gcc, pkg-config, libglib2.0-dev,
# dpkg-dev (apt-get source), xz-utils, qemu-system-x86. If apt has no
# deb-src entry, one for bookworm is added in
# /etc/apt/sources.list.d/shortbread-deb-src.sources (then apt-get update),
# and tools/backports.sh adds bookworm-backports' source for QEMU 10.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
[ $# -eq 1 ] || { echo "usage: $0 OUTDIR" >&2; exit 2; }
out=$1
SUDO=
[ "$(id -u)" -eq 0 ] || SUDO=sudo

"$root/tools/deps.sh" gcc libc6-dev pkg-config libglib2.0-dev dpkg-dev xz-utils qemu-system-x86

ensure_deb_src() { "$root/tools/deb-src.sh"; "$root/tools/backports.sh"; }

# The QEMU that will load the plugin: its upstream and Debian versions.
ver=$(qemu-system-x86_64 --version | head -n 1)
upstream=$(echo "$ver" | sed -n 's/^QEMU emulator version \([0-9.]*\).*/\1/p')
debver=$(echo "$ver" | sed -n 's/.*(Debian \([^)]*\)).*/\1/p')
[ -n "$upstream" ] && [ -n "$debver" ] || { echo "tcgcount: not a Debian QEMU: $ver" >&2; exit 1; }

# The header, cached: build/tcgcount/qemu-plugin.h, from qemu_UPSTREAM*.
cache=$root/build/tcgcount
hdr=$cache/include/qemu/qemu-plugin.h
case "$(cat "$cache/source" 2>/dev/null)" in
  "qemu_$upstream+"*|"qemu_$upstream.orig"*) ;;
  *) rm -f "$hdr" ;;
esac
if [ ! -s "$hdr" ]; then
  ensure_deb_src
  mkdir -p "$cache"
  dl=$(mktemp -d)
  trap 'rm -rf "$dl"' EXIT
  get() { (cd "$dl" && apt-get source --download-only "qemu=$debver" >"$dl/apt.log" 2>&1) || ls "$dl"/qemu_*.orig.tar.* >/dev/null 2>&1; }
  if ! get; then
    # A stale package list names files the mirror no longer has.
    $SUDO apt-get update -qq
    get || { cat "$dl/apt.log" >&2; echo "tcgcount: apt-get source --download-only qemu=$debver failed" >&2; exit 1; }
  fi
  orig=$(ls "$dl"/qemu_*.orig.tar.* 2>/dev/null | head -n 1)
  [ -n "$orig" ] || { echo "tcgcount: no qemu orig tarball downloaded" >&2; exit 1; }
  tar -xf "$orig" -C "$dl" --wildcards '*/include/qemu/qemu-plugin.h'
  src=$(find "$dl" -path '*/include/qemu/qemu-plugin.h' | head -n 1)
  [ -n "$src" ] || { echo "tcgcount: $orig has no include/qemu/qemu-plugin.h" >&2; exit 1; }
  mkdir -p "$cache/include/qemu"
  cp "$src" "$hdr.tmp" && mv "$hdr.tmp" "$hdr"
  basename "$orig" > "$cache/source"
  echo "tcgcount: qemu-plugin.h from $(basename "$orig") cached in $cache" >&2
fi

mkdir -p "$out"
# shellcheck disable=SC2046
gcc -O2 -g -Wall -Wextra -Werror -std=gnu11 -shared -fPIC \
  -I"$cache/include/qemu" $(pkg-config --cflags glib-2.0) \
  -o "$out/libpccount.so.tmp" "$here/pccount.c" $(pkg-config --libs glib-2.0)
mv "$out/libpccount.so.tmp" "$out/libpccount.so"
echo "$out/libpccount.so"
# evcount (events.sh) needs plugin API 2 (scoreboards): not on QEMU 7.2.
if grep -q qemu_plugin_scoreboard_new "$hdr"; then
  # shellcheck disable=SC2046
  gcc -O2 -g -Wall -Wextra -Werror -std=gnu11 -shared -fPIC \
    -I"$cache/include/qemu" $(pkg-config --cflags glib-2.0) \
    -o "$out/libevcount.so.tmp" "$here/evcount.c" $(pkg-config --libs glib-2.0)
  mv "$out/libevcount.so.tmp" "$out/libevcount.so"
fi
