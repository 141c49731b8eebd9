#!/bin/sh
# Makes the copy of gVisor's netstack the kernel is built with: the module
# go.mod requires, as a tree of symbolic links into the module cache, with
# each netstack-patches/*.diff applied to a private copy of the file it
# names ("+++ b/pkg/..." paths from the module's root; several diffs of
# one file apply in turn, in file-name order; "--- /dev/null" adds a
# file, such as a test of a patch). go build -overlay
# refuses files under GOMODCACHE, so the kernel build uses a go.mod copy
# (-modfile) that replaces the module with this tree instead. A diff that
# no longer applies stops the build naming the diff.
#
# usage: tools/netstack.sh PATCHES OUTDIR   (prints OUTDIR/kernel.mod)
set -eu
patches=$(cd "$1" && pwd)
out=$2
root=$(cd "$(dirname "$0")/.." && pwd)
mod=gvisor.dev/gvisor
src=$(cd "$root" && go mod download -json "$mod" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
[ -d "$src" ] || { echo "netstack: module $mod not in the module cache" >&2; exit 1; }
[ ! -d "$out" ] || find "$out" -type d -exec chmod u+w {} +
rm -rf "$out"
mkdir -p "$out"
out=$(cd "$out" && pwd)
cp -rs "$src" "$out/gvisor"
# The module cache is read-only; the copy's directories must not be.
find "$out/gvisor" -type d -exec chmod u+w {} +
for d in "$patches"/*.diff; do
  [ -e "$d" ] || continue
  target=$(sed -n 's|^+++ b/\([^	 ]*\).*|\1|p' "$d" | head -n1)
  if head -n1 "$d" | grep -q '^--- /dev/null'; then
    # A new file (a test of the patches, run by make host-test).
    if [ -z "$target" ] || [ -e "$src/$target" ] || [ ! -d "$(dirname "$src/$target")" ]; then
      echo "netstack patch $(basename "$d"): adds $target, which exists or has no package directory" >&2
      exit 1
    fi
  elif [ -z "$target" ] || [ ! -e "$src/$target" ]; then
    echo "netstack patch $(basename "$d"): no '+++ b/FILE' header naming a file of $mod" >&2
    exit 1
  elif [ -L "$out/gvisor/$target" ]; then
    # The first diff of this file: a private copy to patch (a later diff
    # of the same file patches the same copy, in file-name order).
    rm "$out/gvisor/$target"
    cp "$src/$target" "$out/gvisor/$target"
    chmod u+w "$out/gvisor/$target"
  fi
  if ! patch -s -p1 --fuzz=0 --no-backup-if-mismatch -r - -d "$out/gvisor" "$target" < "$d" >/dev/null 2>&1; then
    echo "netstack patch $(basename "$d") no longer applies to $target of $(basename "$src")" >&2
    exit 1
  fi
done
{ cat "$root/go.mod"; printf '\nreplace %s => %s\n' "$mod" "$out/gvisor"; } > "$out/kernel.mod"
cp "$root/go.sum" "$out/kernel.sum"
echo "$out/kernel.mod"
