#!/bin/sh
# Writes the go build -overlay file that adds the runtime patch set to the
# runtime of the go command's GOROOT:
#
#   PATCHES/*.go, *.s    new files added to package runtime
#   PATCHES/*.diff       diffs against upstream runtime files (a/ b/ paths
#                        from GOROOT/src, e.g. "+++ b/runtime/proc.go"); each
#                        is applied to a copy in OUTDIR, and one that no
#                        longer applies stops the build naming the diff
#
# usage: tools/overlay.sh PATCHES OUTDIR   (prints OUTDIR/overlay.json)
set -eu
patches=$(cd "$1" && pwd)
build=$2
goroot=$(go env GOROOT)
rt=$goroot/src/runtime
rm -rf "$build"
mkdir -p "$build"

{
  printf '{"Replace":{'
  sep=''
  for f in "$patches"/*.go "$patches"/*.s; do
    [ -e "$f" ] || continue
    name=$(basename "$f")
    if [ -e "$rt/$name" ]; then
      echo "runtime patch $name would replace upstream runtime/$name; use a .diff" >&2
      exit 1
    fi
    printf '%s"%s":"%s"' "$sep" "$rt/$name" "$f"
    sep=','
  done
  for d in "$patches"/*.diff; do
    [ -e "$d" ] || continue
    target=$(sed -n 's|^+++ b/\(runtime/[^	 ]*\).*|\1|p' "$d" | head -n1)
    if [ -z "$target" ] || [ ! -e "$goroot/src/$target" ]; then
      echo "runtime patch $(basename "$d"): no '+++ b/runtime/FILE' header naming an upstream file" >&2
      exit 1
    fi
    copy=$build/$(basename "$target")
    cp "$goroot/src/$target" "$copy"
    if ! patch -s -p1 --fuzz=0 --no-backup-if-mismatch -r - "$copy" < "$d" >/dev/null 2>&1; then
      echo "runtime patch $(basename "$d") no longer applies to $target of $(go env GOVERSION)" >&2
      exit 1
    fi
    printf '%s"%s":"%s"' "$sep" "$goroot/src/$target" "$copy"
    sep=','
  done
  printf '}}\n'
} > "$build/overlay.json"
echo "$build/overlay.json"
