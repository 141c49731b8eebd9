#!/bin/sh
# Builds the initramfs the boot tests use: the smoke-test programs in
# user/smoke (static, musl) under /bin, plus /bin/broken, a truncated ELF
# that exec must refuse with ENOEXEC.
# usage: tools/smoke-initramfs.sh OUT.cpio
set -eu
out=$1
root=$(cd "$(dirname "$0")/.." && pwd)
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/bin"
for c in "$root"/user/smoke/*.c; do
  musl-gcc -static -O2 -Wall -Werror -o "$stage/bin/$(basename "$c" .c)" "$c"
done
head -c 200 "$stage/bin/hello" > "$stage/bin/broken"
chmod 755 "$stage/bin/broken"
(cd "$stage" && find . -mindepth 1 | LC_ALL=C sort | cpio -o -H newc --quiet --owner=0:0) > "$out.tmp"
mv "$out.tmp" "$out"
