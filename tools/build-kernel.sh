#!/bin/sh
# Builds the Go kernel ELF: the stock toolchain (pinned by go.mod's
# toolchain line) with runtime-patches/ applied through go build -overlay.
#
#   runtime-patches/*.go, *.s     new files added to package runtime
#   runtime-patches/*.diff        diffs against upstream runtime files; each
#                                 is applied to a copy in the build directory
#
# usage: tools/build-kernel.sh OUT.elf
set -eu
out=$1
root=$(cd "$(dirname "$0")/.." && pwd)
build=$root/build/overlay
goroot=$(go env GOROOT)
rt=$goroot/src/runtime
rm -rf "$build"
mkdir -p "$build"

{
  printf '{"Replace":{'
  sep=''
  for f in "$root"/runtime-patches/*.go "$root"/runtime-patches/*.s; do
    [ -e "$f" ] || continue
    name=$(basename "$f")
    if [ -e "$rt/$name" ]; then
      echo "runtime-patches/$name would replace upstream runtime/$name; use a .diff" >&2
      exit 1
    fi
    printf '%s"%s":"%s"' "$sep" "$rt/$name" "$f"
    sep=','
  done
  for d in "$root"/runtime-patches/*.diff; do
    [ -e "$d" ] || continue
    target=$(sed -n 's|^+++ b/\(runtime/[^	 ]*\).*|\1|p' "$d" | head -n1)
    if [ -z "$target" ]; then
      echo "runtime patch $(basename "$d"): no '+++ b/runtime/...' header" >&2
      exit 1
    fi
    copy=$build/$(basename "$target")
    cp "$goroot/src/$target" "$copy"
    if ! patch -s --no-backup-if-mismatch "$copy" < "$d"; then
      echo "runtime patch $(basename "$d") no longer applies to $target of $(go env GOVERSION)" >&2
      exit 1
    fi
    printf '%s"%s":"%s"' "$sep" "$goroot/src/$target" "$copy"
    sep=','
  done
  printf '}}\n'
} > "$build/overlay.json"

# -tags shortbread: the patch files carry it so that go vet/test ./...
# skip them (they are package runtime and only build inside GOROOT).
# -T: link at 16 MiB + 4 KiB (the ELF headers take the first page) far
# above where GRUB puts modules; -E: start in the machine layer.
CGO_ENABLED=0 GOOS=linux GOARCH=amd64 go build -tags shortbread -overlay "$build/overlay.json" \
  -ldflags "-T 0x1001000 -E runtime.sbStart" -o "$out" "$root/kernel"
