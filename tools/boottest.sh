#!/bin/sh
# Boot test: boots the kernel under QEMU (TCG) with N CPUs and the `test`
# command-line option, and passes only if the in-kernel self-test suite
# reports "N passed, 0 failed" and the kernel powers off with status 0.
# A hung kernel fails by timeout.
# usage: [FIRMWARE=uefi] [CPU=MODEL] [MACHINE=...] tools/boottest.sh CPUS [TIMEOUT_SECONDS]
# (CPU and MACHINE as tools/qemu.sh takes them).
set -u
cpus=$1
limit=${2:-600}
root=$(cd "$(dirname "$0")/.." && pwd)
build=$root/build
iso=$build/test.iso
fw=${FIRMWARE:-bios}
what="$fw firmware, CPU ${CPU:-max}, machine ${MACHINE:-q35}"
log=$build/boottest-$fw-$cpus${CPU:+-$CPU}$(echo "${MACHINE:+-$MACHINE}" | tr ,= -_).log
"$root/tools/mkiso.sh" "$iso" "$build/stub.elf" "$build/kernel.elf" "test loglevel=info" || exit 1
echo "boot test: $cpus CPU(s), $what, log in $log"
"$root/tools/qemu.sh" "$iso" "$cpus" "$limit" > "$log" 2>&1
status=$?
# Show the kernel's output without GRUB's screen control sequences.
sed -n '/Shortbread: machine layer/,$p' "$log"
result=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$log" | tail -n1 | tr -d '\r')
if [ "$status" -ne 0 ] || [ -z "$result" ] || ! echo "$result" | grep -q ' 0 failed'; then
  echo "boot test FAILED with $cpus CPU(s), $what: kernel status $status, result '${result:-none}'"
  exit 1
fi
echo "boot test passed with $cpus CPU(s), $what: $result"
