#!/bin/sh
# One entry point for the user-space side: busybox (static musl, cached),
# the test programs, the runner and the test initramfs.
#
# usage: user/build.sh OUTDIR [--gzip]
#
#   OUTDIR/busybox           static musl busybox (rebuilt only when the
#                            Debian source version or user/busybox/build.sh
#                            changed: OUTDIR/busybox.stamp)
#   OUTDIR/tests/t_*, h_*    test programs and helpers (musl-gcc -static)
#   OUTDIR/tests/f_fuzz      the system call fuzzer, run before the tests
#   OUTDIR/runner            the guest runner (/init)
#   OUTDIR/bench/*           the micro-, scaling and block benchmarks
#                            (user/bench; not in the initramfs: bench/sysbench,
#                            bench/scale and bench/blkbench add them)
#   OUTDIR/initramfs.cpio    newc cpio (OUTDIR/initramfs.cpio.gz with --gzip)
#
# Needs (installed when missing): musl-tools cpio gzip file, plus what
# user/busybox/build.sh needs.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
[ $# -ge 1 ] && [ $# -le 2 ] || { echo "usage: $0 OUTDIR [--gzip]" >&2; exit 2; }
out=$1
gz=${2:-}
mkdir -p "$out"
out=$(cd "$out" && pwd)
# One build of OUTDIR at a time: make test starts one in the background
# (tools/prebuild.sh), and a second waits for it, then finds it done.
if [ -z "${SB_USER_LOCKED:-}" ]; then
  flock -n "$out/.build.lock" true || echo "user: waiting for the build already running (see prebuild.log)"
  SB_USER_LOCKED=1 exec flock "$out/.build.lock" "$0" "$@"
fi
"$root/tools/deps.sh" musl-tools cpio gzip file

CC=musl-gcc
CFLAGS="-static -O2 -Wall -Werror"

# 1. busybox, cached by source version + build script
t0=$(date +%s)
want=$("$here/busybox/build.sh" --stamp)
if [ -x "$out/busybox" ] && [ "$(cat "$out/busybox.stamp" 2>/dev/null)" = "$want" ]; then
  echo "busybox: cached ($want)"
else
  "$here/busybox/build.sh" "$out"
fi
t1=$(date +%s)

# Steps 2-4 are skipped when nothing they read changed: every file under
# user/, the busybox build, the compiler and the options (OUTDIR/user.stamp).
# (make test's background build and the targets after it then cost a hash.)
ustamp=$( (cat "$out/busybox.stamp"; $CC --version 2>&1 | head -n 1; dpkg-query -W musl-dev 2>/dev/null; echo "$gz";
  cd "$here" && find . -type f | LC_ALL=C sort | xargs sha256sum) | sha256sum | cut -c1-16)
initramfs=$out/initramfs.cpio
[ "$gz" = --gzip ] && initramfs=$out/initramfs.cpio.gz
if [ -f "$initramfs" ] && [ "$(cat "$out/user.stamp" 2>/dev/null)" = "$ustamp" ]; then
  echo "user: up to date ($ustamp)"
  exit 0
fi
rm -f "$out/user.stamp"

# 2. tests and helpers, in parallel; 3. the runner
rm -rf "$out/tests.new"
mkdir -p "$out/tests.new"
export CC CFLAGS out
find "$here/tests" -maxdepth 1 \( -name 't_*.c' -o -name 'h_*.c' \) -print0 | sort -z |
  xargs -0 -P "$(nproc)" -n 1 sh -c '
    name=$(basename "$1" .c)
    $CC $CFLAGS -o "$out/tests.new/$name" "$1" -lpthread || { echo "cc: $1 failed" >&2; exit 255; }' sh
# h_layout again with 64 KiB segment alignment (t_proc execs both).
$CC $CFLAGS -Wl,-z,max-page-size=0x10000 -Wl,-z,relro -o "$out/tests.new/h_layout64k" "$here/tests/h_layout.c"
# The system call fuzzer runs first (f_ sorts before t_).
$CC $CFLAGS -o "$out/tests.new/f_fuzz" "$here/smoke/fuzz.c"
# The scaling workloads as a helper: t_scale checks they run and print
# well-formed results on both kernels.
$CC $CFLAGS -o "$out/tests.new/h_scale" "$here/bench/scale.c" -lpthread
rm -rf "$out/tests"
mv "$out/tests.new" "$out/tests"
$CC $CFLAGS -o "$out/runner" "$here/runner/runner.c"
# The micro-benchmark, and variants carrying 1 or 8 MiB of initialized
# data (.data) or of zeros (.bss) for the exec-cost benchmark.
mkdir -p "$out/bench"
ub="$here/bench/ubench.c $here/bench/blob.S -lpthread"
$CC $CFLAGS -o "$out/bench/ubench" $ub
for mb in 1 8; do
  size=$((mb << 20))
  $CC $CFLAGS -DBLOB_DATA -DBLOB_SIZE=$size -o "$out/bench/ubench-data${mb}m" $ub
  $CC $CFLAGS -DBLOB_SIZE=$size -o "$out/bench/ubench-bss${mb}m" $ub
done
# The scaling workloads (bench/scale).
$CC $CFLAGS -o "$out/bench/scale" "$here/bench/scale.c" -lpthread
# The block-device benchmark (bench/blkbench).
$CC $CFLAGS -o "$out/bench/blkbench" "$here/bench/blkbench.c" -lpthread
for f in "$out"/tests/* "$out/runner" "$out"/bench/*; do
  case $(file -b "$f") in
    *ELF\ 64-bit*x86-64*statically\ linked*) ;;
    *) echo "build: $f is not a static x86-64 ELF" >&2; exit 1 ;;
  esac
done
t2=$(date +%s)

# 4. the initramfs
if [ "$gz" = --gzip ]; then
  "$here/mkinitramfs.sh" --gzip --runner "$out/runner" "$out/initramfs.cpio.gz" "$out/busybox" "$out/tests"
else
  "$here/mkinitramfs.sh" --runner "$out/runner" "$out/initramfs.cpio" "$out/busybox" "$out/tests"
fi
t3=$(date +%s)
echo "$ustamp" > "$out/user.stamp"
echo "build: busybox $((t1 - t0)) s, tests+runner $((t2 - t1)) s ($(ls "$out"/tests | wc -l) programs), initramfs $((t3 - t2)) s"
