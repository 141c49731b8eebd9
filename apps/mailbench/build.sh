#!/bin/sh
# Builds the mailbench programs (mailbench, mail-enqueue, mail-qman,
# mail-deliver; sources in this directory, written for Shortbread) as
# static x86-64 musl binaries: the qmail-style local mail benchmark.
#
# usage: apps/mailbench/build.sh OUTDIR   -> OUTDIR/mailbench, mail-enqueue,
#                                            mail-qman, mail-deliver (stripped),
#                                            mailbench.stamp, mailbench.log
#        apps/mailbench/build.sh --stamp  prints the cache key (hash of the
#                                         sources and this recipe)
set -eu
APP=mailbench
. "$(dirname "$0")/../lib.sh"
here=$root/apps/mailbench

stamp() {
  echo "mailbench-source=local recipe=$(script_hash "$here/build.sh" "$here"/*.c "$here"/*.h "$root/apps/lib.sh")"
}

[ $# -eq 1 ] || { echo "usage: $0 OUTDIR | --stamp" >&2; exit 2; }
begin_build "$1" musl-tools file binutils

echo "mailbench: building with musl-gcc (log: $LOG)"
for b in mailbench mail-enqueue mail-qman mail-deliver; do
  run "$b" nice musl-gcc -static -O2 -Wall -Wextra -Werror -std=c11 -D_GNU_SOURCE \
    -o "$tmp/$b" "$here/$b.c" "$here/common.c"
  check_static "$tmp/$b"
  strip -o "$out/$b.tmp" "$tmp/$b"
  mv "$out/$b.tmp" "$out/$b"
done
echo "$key" >"$out/mailbench.stamp"
echo "mailbench: $out/mailbench, mail-enqueue, mail-qman, mail-deliver"
