#!/bin/sh
# Crash test: boots with crash=nil and checks that an unrecovered fault in
# kernel Go code is reported as it must be (the panic, a Go traceback, the
# registers) and that QEMU exits with a failing status instead of hanging.
# usage: tools/crashtest.sh [TIMEOUT_SECONDS]
set -u
limit=${1:-300}
root=$(cd "$(dirname "$0")/.." && pwd)
build=$root/build
iso=$build/crash.iso
log=$build/crashtest.log
"$root/tools/mkiso.sh" "$iso" "$build/stub.elf" "$build/kernel.elf" "crash=nil" || exit 1
"$root/tools/qemu.sh" "$iso" 1 "$limit" > "$log" 2>&1
status=$?
fail() { sed -n '/Shortbread: machine layer/,$p' "$log"; echo "crash test FAILED: $1"; exit 1; }
[ "$status" -ne 0 ] && [ "$status" -ne 124 ] || fail "kernel status $status, want a failing power-off"
grep -q "nil pointer dereference" "$log" || fail "no panic message"
grep -q "^goroutine 1 .*running" "$log" || fail "no Go traceback"
grep -q "main.crash" "$log" || fail "traceback does not name the faulting function"
grep -q "registers at the thread.s last fault" "$log" && grep -qE "rip=0x" "$log" || fail "no register dump"
echo "crash test passed: panic, traceback and registers reported, kernel status $status"
