#!/bin/sh
# The system-call fuzzer for a long time (make fuzz-soak; not in make
# test): each boot of Shortbread runs f_fuzz (root, then uid 65534 with
# its file-integrity and ID checks) with a new seed, again and again for
# MINUTES per CPU count. Half the fuzzing processes work on tmpfs (/tmp),
# half on a fresh ext4 disk (mke2fs on the host, /dev/vda at /mnt), whose
# files are kept; after the boot the host's e2fsck must find the image
# clean. The boots take three kinds of disk in turn:
#   - 64 MiB;
#   - 8 MiB, easier to fill (ENOSPC came up in 6 of 114 boots on
#     2026-11-30, when the fuzzer's writes were all small; since, its
#     children on the disk sometimes write a file until the disk is full
#     or the file 32 MiB, FUZZ_FILL, so that the rest of their calls meet
#     a full file system);
#   - 64 MiB served by tools/faultdisk over NBD, which fails one request
#     in 4, 16 or 64 (in turn; none of the mount's first 40) with EIO,
#     so that ext4's device-error paths run under the fuzzer. Such a
#     mount may be refused (then the fuzzer works on tmpfs alone, and the
#     boot counts as refused, not failed) or go read-only, and the
#     journal is replayed (e2fsck -E journal_only) before the check: a
#     failed device may lose data, never the file system's consistency.
# A boot fails on a panic, a hang (TIMEOUT), a non-zero fuzzer status, an
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
sock=$out/nbd.sock
(cd "$root" && go build -o "$out/faultdisk" ./tools/faultdisk)
# the fuzzer, then the file system unmounted for the host's e2fsck, then
# the coverage table between markers
# (MOUNTFAIL: what a refused mount does: fail the boot, or on a faulty
# disk say so and fuzz tmpfs alone)
cmd="mkdir -p /mnt
if mount -t ext4 /dev/vda /mnt; then d=/tmp:/mnt; else MOUNTFAIL; fi
FUZZ_KEEP=1 FUZZ_FILL=/mnt /tests/f_fuzz $procs $calls SEED \$d; s=\$?
[ \$d = /tmp ] || umount /mnt || s=8
echo '--- sysstat'; cat /proc/shortbread/syscalls; echo '--- end'
exit \$s"
{
  echo "# fuzz-soak $date, commit $commit"
  echo
  echo "Each boot: \`f_fuzz $procs $calls SEED /tmp:/mnt\` ($procs processes x $calls calls as root, then as uid 65534 with root's files checked; half the processes in a directory on tmpfs, half on a fresh ext4 disk that they now and then fill (\`FUZZ_FILL\`): 64 MiB, 8 MiB, and 64 MiB served by \`tools/faultdisk\` failing 1 request in 4, 16 or 64 with EIO, in turn, checked by the host's \`e2fsck -fn\` after the boot, after \`e2fsck -E journal_only\` for a faulty disk). Coverage: distinct (system call, outcome) pairs over all boots, an outcome being success or one error number (the \`sysstat\` boot option)."
  echo
  echo "| CPUs | minutes | boots | failed | e2fsck failures | boots that met ENOSPC | boots on a faulty disk | errors injected | mounts refused | fuzzer calls | calls that succeeded | outcomes |"
  echo "|---|---|---|---|---|---|---|---|---|---|---|---|"
} > "$res.new"
for cpus in $cpus_list; do
  end=$(( $(date +%s) + minutes * 60 ))
  boots=0 failed=0 fsckfail=0 seed=$(date +%s) faultboots=0 injected=0 refused=0 nospc=0
  while [ "$(date +%s)" -lt "$end" ]; do
    seed=$((seed + 1)) boots=$((boots + 1))
    rm -f "$img"
    size=64M faulty=0
    case $((boots % 3)) in
    2) size=8M ;;
    0) faulty=1 faultboots=$((faultboots + 1)) ;;
    esac
    truncate -s $size "$img" && mke2fs -q -t ext4 -F "$img"
    ok=1
    if [ $faulty = 1 ]; then
      # 1 in 4, 16, 64 in turn: its writes come mostly at commits and the
      # unmount (a boot makes 40-130 requests), so many a boot goes
      # read-only early and fuzzes EROFS paths, others fail at the end
      every=$((4 << (2 * (faultboots % 3))))
      rm -f "$sock"
      "$out/faultdisk" -image "$img" -socket "$sock" -every $every -after 40 -seed "$seed" 2> "$out/faultdisk.log" &
      fpid=$!
      i=0
      while [ ! -S "$sock" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
      disk="-blockdev driver=nbd,server.type=unix,server.path=$sock,export=disk,node-name=fd0 -device virtio-blk-pci,drive=fd0"
      mountfail="echo 'fuzz-soak: mount refused'; d=/tmp"
      DISK= QEMU_EXTRA="$disk" KARGS=sysstat CPUS=$cpus TIMEOUT=${TIMEOUT:-300} LOG="$out/boot.log" \
        "$root/tools/run-cmd.sh" - "$(printf '%s' "$cmd" | sed -e "s/SEED/$seed/" -e "s|MOUNTFAIL|$mountfail|")" >/dev/null 2>&1 || ok=0
      wait $fpid || ok=0
      cat "$out/faultdisk.log" >> "$out/boot.log"
      n=$(sed -n 's/^faultdisk: [0-9]* requests, \([0-9]*\) failed.*/\1/p' "$out/faultdisk.log")
      injected=$((injected + ${n:-0}))
      grep -q '^fuzz-soak: mount refused' "$out/boot.log" && refused=$((refused + 1))
      # what the device lost is replayed from the journal first
      # (status 1: it changed the image)
      rc=0
      e2fsck -fy -E journal_only "$img" >> "$out/boot.log" 2>&1 || rc=$?
      [ $rc -le 1 ] || ok=0
    elif ! DISK=$img KARGS=sysstat CPUS=$cpus TIMEOUT=${TIMEOUT:-300} LOG="$out/boot.log" \
      "$root/tools/run-cmd.sh" - "$(printf '%s' "$cmd" | sed -e "s/SEED/$seed/" -e "s/MOUNTFAIL/exit 9/")" >/dev/null 2>&1; then
      ok=0
    fi
    sed -n '/^--- sysstat/,/^--- end/p' "$out/boot.log" > "$out/cov-$cpus-$seed.txt"
    # a boot whose writes met a full disk (ENOSPC from write, pwrite64 or
    # fallocate)
    if awk '($1 == "write" || $1 == "pwrite64" || $1 == "fallocate") && NF >= 4 {
        n = split($4, e, ","); for (i = 1; i <= n; i++) if (e[i] == 28) full = 1
      } END { exit !full }' "$out/cov-$cpus-$seed.txt"; then
      nospc=$((nospc + 1))
    fi
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
  echo "| $cpus | $minutes | $boots | $failed | $fsckfail | $nospc | $faultboots | $injected | $refused | $((boots * 2 * procs * calls)) | $1 | $2 |" >> "$res.new"
  echo "fuzz-soak: $cpus CPUs: $boots boots, $failed failed ($fsckfail by e2fsck); $nospc met ENOSPC; $faultboots on a faulty disk ($injected errors injected, $refused mounts refused); coverage: $1 calls succeeded, $2 outcomes"
done
mv "$res.new" "$res"
echo "fuzz-soak: results in $res"
