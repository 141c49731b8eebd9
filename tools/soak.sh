#!/bin/sh
# The flake hunt (make soak-test; not in make test): N rounds of the boot
# self-tests and of the user-space suite on Shortbread, with 1, 2 and 4
# CPUs each, counting failures per test. A test that fails once in N is
# a kernel race to find, not noise. The table goes to
# bench/results/soak-DATE.md and failing serial logs to build/soak/.
# With SOAK_ARGS (the suite's disk options, as make soak-test passes
# them) each user boot gets the suite's disks, made by make soak-disks,
# and the host's image checks count as a test (disk-images).
# usage: [N=20] [CPUS="1 2 4"] [SOAK_ARGS=...] tools/soak.sh
# Needs: build/kernel.elf, build/stub.elf, build/initramfs.cpio, build/user (make soak-test builds them).
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
build=$root/build
n=${N:-20} cpus_list=${CPUS:-1 2 4}
out=$build/soak
mkdir -p "$out"
date=$(date -u +%Y-%m-%d)
res=$root/bench/results/soak-$date.md
commit=$(git -C "$root" rev-parse --short HEAD)
tally=$out/tally
: > "$tally"
"$root/tools/mkiso.sh" "$build/soak-boot.iso" "$build/stub.elf" "$build/kernel.elf" "test loglevel=info" >/dev/null || exit 1
"$root/tools/mkiso.sh" "$build/soak-user.iso" "$build/stub.elf" "$build/kernel.elf" "init=/init loglevel=warn RUNNER_TIMEOUT=120 ${SOAK_ARGS:-}" "$build/user/initramfs.cpio" >/dev/null || exit 1
t0=$(date +%s)
i=0
while [ "$i" -lt "$n" ]; do
  i=$((i + 1))
  for cpus in $cpus_list; do
    for kind in boot user; do
      log=$out/$kind-$cpus-$i.log
      disks=
      if [ "$kind" = user ] && [ -n "${SOAK_ARGS:-}" ]; then
        # The suite's disks (make soak-disks), fresh for each boot.
        disks=$(make -s --no-print-directory -C "$root" soak-disks D="$out/disks") || exit 1
      fi
      eval "$disks \"\$root/tools/qemu.sh\" \"\$build/soak-\$kind.iso\" \"\$cpus\" 1200" > "$log" 2>&1
      status=$?
      keep=
      if [ -n "$disks" ]; then
        # What the guest wrote, checked on the host as make test does.
        if make -s --no-print-directory -C "$root" soak-disks-check D="$out/disks" >> "$log" 2>&1; then
          echo "$kind $cpus disk-images pass" >> "$tally"
        else
          echo "$kind $cpus disk-images fail" >> "$tally"
          keep=1
        fi
      fi
      # Per test: the self-tests print "PASS NAME" / "FAIL NAME (...)"; the
      # runner "=== NAME: PASS" / "=== NAME: FAIL ...".
      tr -d '\r' < "$log" | sed -n -e "s/^PASS \([a-z0-9-]*\) .*/$kind $cpus \1 pass/p" -e "s/^FAIL \([a-z0-9-]*\) .*/$kind $cpus \1 fail/p" \
        -e "s/^=== \([a-z_0-9]*\): PASS.*/$kind $cpus \1 pass/p" -e "s/^=== \([a-z_0-9]*\): FAIL.*/$kind $cpus \1 fail/p" >> "$tally"
      if [ "$status" -ne 0 ]; then
        echo "$kind $cpus (boot) fail" >> "$tally"
        echo "soak: round $i, $kind tests, $cpus CPUs: status $status (log kept: $log)"
      elif [ -n "$keep" ]; then
        echo "soak: round $i, $kind tests, $cpus CPUs: disk images wrong (log kept: $log)"
      else
        rm -f "$log"
      fi
    done
  done
  echo "soak: round $i of $n done ($(( $(date +%s) - t0 )) s)"
done
{
  echo "# soak $date, commit $commit"
  echo
  echo "$n rounds of the boot self-tests and the user suite (Shortbread, QEMU TCG, q35, 512 MiB) per CPU count; $(( ($(date +%s) - t0) / 60 )) minutes."
  echo
  echo "| suite | CPUs | test | runs | failures |"
  echo "|---|---|---|---|---|"
  sort "$tally" | awk '{k=$1" "$2" "$3; runs[k]++; if ($4=="fail") f[k]++} END {for (k in runs) {split(k,a," "); printf "| %s | %s | %s | %d | %d |\n", a[1], a[2], a[3], runs[k], f[k]+0}}' | sort
} > "$res"
fails=$(grep -c ' fail$' "$tally")
echo "soak: $fails failures; table in $res"
[ "$fails" -eq 0 ]
