#!/bin/sh
# The system-call fuzzer for a long time (make fuzz-soak; not in make
# test): each boot of Shortbread runs f_fuzz (root, then uid 65534 with
# its file-integrity and ID checks) with a new seed, again and again for
# MINUTES per CPU count. Half the fuzzing processes work on tmpfs (/tmp),
# half on a fresh ext4 disk (mke2fs on the host, /dev/vda at /mnt), whose
# files are kept; after the boot the host's e2fsck must find the image
# clean. Every other boot's disk is 8 MiB instead of 64, so that the
# fuzzer can fill it and ext4's out-of-space paths run too (ENOSPC came
# up in 6 of 114 boots on 2026-11-30: its writes are small). A boot
# fails on a panic, a hang (TIMEOUT), a non-zero fuzzer status, an
# integrity failure, a failed unmount or an e2fsck complaint.
# Boots run with sysstat, and the union of the (system call, outcome)
# pairs over all boots is the run's coverage.
# The table of boots and failures goes to bench/results/fuzz-soak-DATE.md;
# failing serial logs and images are kept in build/fuzz-soak/.
# usage: [MINUTES=60] [CPUS="2 4"] [TIMEOUT=300] [PROCS=4] [CALLS=3000] tools/fuzz-soak.sh
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
minutes=${MINUTES:-60} cpus_list=${CPUS:-2 4} procs=${PROCS:-4} calls=${CALLS:-3000}
out=$root/build/fuzz-soak
mkdir -p "$out"
rm -f "$out"/cov-*.txt
date=$(date -u +%Y-%m-%d)
res=$root/bench/results/fuzz-soak-$date.md
# A day's later soaks go to DATE-2.md, DATE-3.md, ...
n=2
while [ -e "$res" ]; do res=$root/bench/results/fuzz-soak-$date-$n.md; n=$((n + 1)); done
commit=$(git -C "$root" rev-parse --short HEAD)
img=$out/ext4.img
# the fuzzer, then the file system unmounted for the host's e2fsck, then
# the coverage table between markers
cmd="mkdir -p /mnt && mount -t ext4 /dev/vda /mnt || exit 9
FUZZ_KEEP=1 /tests/f_fuzz $procs $calls SEED /tmp:/mnt; s=\$?
umount /mnt || s=8
echo '--- sysstat'; cat /proc/shortbread/syscalls; echo '--- end'
exit \$s"
{
  echo "# fuzz-soak $date, commit $commit"
  echo
  echo "Each boot: \`f_fuzz $procs $calls SEED /tmp:/mnt\` ($procs processes x $calls calls as root, then as uid 65534 with root's files checked; half the processes in a directory on tmpfs, half on a fresh ext4 disk, 64 MiB and 8 MiB in turn, checked by the host's \`e2fsck -fn\` after the boot). Coverage: distinct (system call, outcome) pairs over all boots, an outcome being success or one error number (the \`sysstat\` boot option)."
  echo
  echo "| CPUs | minutes | boots | failed | e2fsck failures | fuzzer calls | calls that succeeded | outcomes |"
  echo "|---|---|---|---|---|---|---|---|"
} > "$res.new"
for cpus in $cpus_list; do
  end=$(( $(date +%s) + minutes * 60 ))
  boots=0 failed=0 fsckfail=0 seed=$(date +%s)
  while [ "$(date +%s)" -lt "$end" ]; do
    seed=$((seed + 1)) boots=$((boots + 1))
    rm -f "$img"
    size=64M
    [ $((boots % 2)) = 0 ] && size=8M
    truncate -s $size "$img" && mke2fs -q -t ext4 -F "$img"
    ok=1
    if ! DISK=$img KARGS=sysstat CPUS=$cpus TIMEOUT=${TIMEOUT:-300} LOG="$out/boot.log" \
      "$root/tools/run-cmd.sh" - "$(printf '%s' "$cmd" | sed "s/SEED/$seed/")" >/dev/null 2>&1; then
      ok=0
    fi
    sed -n '/^--- sysstat/,/^--- end/p' "$out/boot.log" > "$out/cov-$cpus-$seed.txt"
    if ! e2fsck -fn "$img" > "$out/fsck.log" 2>&1; then
      ok=0 fsckfail=$((fsckfail + 1))
      cp "$img" "$out/fail-$cpus-$seed.img"
      cat "$out/fsck.log" >> "$out/boot.log"
    fi
    if [ $ok = 0 ]; then
      failed=$((failed + 1))
      cp "$out/boot.log" "$out/fail-$cpus-$seed.log"
      echo "fuzz-soak: $cpus CPUs, seed $seed failed (build/fuzz-soak/fail-$cpus-$seed.log)"
    fi
  done
  # union of the pairs: "name ok" for a call that succeeded, "name errno"
  # for each error number it returned
  cov=$(cat "$out"/cov-"$cpus"-*.txt | awk '$2 ~ /^[0-9]+$/ && $1 != "syscall" {
      if ($3 > 0) pair[$1 " ok"] = 1
      if (NF >= 4) { n = split($4, e, ","); for (i = 1; i <= n; i++) pair[$1 " " e[i]] = 1 }
      if ($3 > 0) okc[$1] = 1
    } END { p = 0; for (k in pair) p++; c = 0; for (k in okc) c++; print c, p }')
  set -- $cov
  echo "| $cpus | $minutes | $boots | $failed | $fsckfail | $((boots * 2 * procs * calls)) | $1 | $2 |" >> "$res.new"
  echo "fuzz-soak: $cpus CPUs: $boots boots, $failed failed ($fsckfail by e2fsck); coverage: $1 calls succeeded, $2 outcomes"
done
mv "$res.new" "$res"
echo "fuzz-soak: results in $res"
