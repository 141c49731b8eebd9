#!/bin/sh
# The system-call fuzzer for a long time (make fuzz-soak; not in make
# test): each boot of Shortbread runs f_fuzz (root, then uid 65534 with
# its file-integrity and ID checks) with a new seed, again and again for
# MINUTES per CPU count, and a boot fails on a panic, a hang (TIMEOUT), a
# non-zero fuzzer status or an integrity failure. The table of boots and
# failures goes to bench/results/fuzz-soak-DATE.md; failing serial logs are
# kept in build/fuzz-soak/.
# usage: [MINUTES=60] [CPUS="2 4"] [TIMEOUT=300] tools/fuzz-soak.sh
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
minutes=${MINUTES:-60} cpus_list=${CPUS:-2 4}
out=$root/build/fuzz-soak
mkdir -p "$out"
date=$(date -u +%Y-%m-%d)
res=$root/bench/results/fuzz-soak-$date.md
commit=$(git -C "$root" rev-parse --short HEAD)
{
  echo "# fuzz-soak $date, commit $commit"
  echo
  echo "Each boot: \`f_fuzz 4 3000 SEED\` (4 processes x 3000 random calls as root, then as uid 65534 with root's files checked)."
  echo
  echo "| CPUs | minutes | boots | failed | fuzzer calls |"
  echo "|---|---|---|---|---|"
} > "$res.new"
for cpus in $cpus_list; do
  end=$(( $(date +%s) + minutes * 60 ))
  boots=0 failed=0 seed=$(date +%s)
  while [ "$(date +%s)" -lt "$end" ]; do
    seed=$((seed + 1)) boots=$((boots + 1))
    if ! CPUS=$cpus TIMEOUT=${TIMEOUT:-300} LOG="$out/boot.log" "$root/tools/run-cmd.sh" - "/tests/f_fuzz 4 3000 $seed" >/dev/null 2>&1; then
      failed=$((failed + 1))
      cp "$out/boot.log" "$out/fail-$cpus-$seed.log"
      echo "fuzz-soak: $cpus CPUs, seed $seed failed (build/fuzz-soak/fail-$cpus-$seed.log)"
    fi
  done
  echo "| $cpus | $minutes | $boots | $failed | $((boots * 2 * 4 * 3000)) |" >> "$res.new"
  echo "fuzz-soak: $cpus CPUs: $boots boots, $failed failed"
done
mv "$res.new" "$res"
echo "fuzz-soak: results in $res"
