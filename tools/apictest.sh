#!/bin/sh
# APIC test: boots with CPU layouts the ordinary boot tests do not have
# and runs the self-tests that need every CPU (goroutines and the
# profiler's NMIs on each, the APIC mode, a device interrupt, user
# processes with signals and threads: wake-up and TLB IPIs):
#   x2apic-32   -smp 32, x2APIC mode
#   x2apic-ids  one CPU in socket 0 plus two in socket 1 of a 2 x 256-core
#               layout: APIC IDs 0, 256 and 261, which only the MADT's
#               x2APIC entries (type 9) can name
#   xapic-gaps  x2APIC hidden from the CPU, 2 sockets of 3 cores: xAPIC
#               mode, APIC IDs 0-2 and 4-6
#   x2apic-64   -smp 64, x2APIC mode (only when named: make hwtest)
# Each must start every CPU, report the APIC mode it expects and pass.
# Needs QEMU 10 or later (x2APIC under TCG); with an older QEMU only
# xapic-gaps runs.
# usage: tools/apictest.sh [TIMEOUT_SECONDS [NAME...]]
#   (default: x2apic-32 x2apic-ids xapic-gaps)
set -u
limit=${1:-300}
[ $# -gt 0 ] && shift
names=${*:-x2apic-32 x2apic-ids xapic-gaps}
root=$(cd "$(dirname "$0")/.." && pwd)
build=$root/build
iso=$build/apictest.iso
"$root/tools/mkiso.sh" "$iso" "$build/stub.elf" "$build/kernel.elf" \
  "test=every-cpu,apic-mode,device-interrupt,user-hello,user-fork loglevel=info" || exit 1
major=$(qemu-system-x86_64 --version | sed -n 's/^QEMU emulator version \([0-9][0-9]*\)\..*/\1/p')

failed=0 ran=0
# boot NAME CPUS MODE SMP [qemu args...]: only the boots named.
boot() {
  name=$1 want=$2 mode=$3 smp=$4
  shift 4
  case " $names " in *" $name "*) ran=$((ran + 1)) ;; *) return ;; esac
  log=$build/apictest-$name.log
  start=$(date +%s)
  "$root/tools/qemu.sh" "$iso" "$smp" "$limit" "$@" > "$log" 2>&1
  status=$?
  secs=$(( $(date +%s) - start ))
  ready=$(grep -a 'kernel ready:' "$log" | tr -d '\r')
  result=$(grep -aE '^[0-9]+ passed, [0-9]+ failed' "$log" | tail -n1 | tr -d '\r')
  if [ "$status" -ne 0 ] || ! echo "$result" | grep -q ' 0 failed' ||
    ! echo "$ready" | grep -q "ready: $want CPU(s) ($mode)"; then
    sed -n '/Shortbread: machine layer/,$p' "$log" | grep -aE 'kernel ready|cpu:|PASS|FAIL|passed|panic|fatal'
    echo "apic test $name FAILED: kernel status $status, '${ready#*info: }', '${result:-no result}' (want $want CPUs, $mode); log in $log"
    failed=1
    return
  fi
  echo "apic test $name passed in ${secs}s: $want CPUs ($mode), $result"
}

if [ "${major:-0}" -ge 10 ]; then
  boot x2apic-32 32 x2APIC 32
  boot x2apic-64 64 x2APIC 64
  boot x2apic-ids 3 x2APIC 1,maxcpus=512,sockets=2,cores=256 \
    -device max-x86_64-cpu,socket-id=1,core-id=0,thread-id=0 \
    -device max-x86_64-cpu,socket-id=1,core-id=5,thread-id=0
else
  echo "apic test: QEMU $major has no x2APIC under TCG; x2APIC boots skipped"
fi
boot xapic-gaps 6 xAPIC 6,sockets=2,cores=3 -cpu max,-x2apic
[ "$ran" -gt 0 ] || { echo "apic test: none of '$names' ran"; exit 1; }
exit $failed
