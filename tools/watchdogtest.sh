#!/bin/sh
# Watchdog test: boots Shortbread with 2 CPUs, short thresholds and the
# debug hooks (/proc/shortbread/debug, offered only under debug_hooks),
# and checks the console:
#  1. a CPU spinning with interrupts off (watchdog_thresh=2) is reported
#     as a hard lockup with the CPUs' registers and stacks (the spinning
#     function and the goroutine that called it named), then every
#     goroutine's stack; a thread blocked in a wait no signal ends
#     (hung_task_timeout_secs=2) is reported as a hung task with the
#     goroutines; the machine goes on and the command exits 0;
#  2. with watchdog_panic the same spin powers the machine off with a
#     failing status after the report.
# The spin and the wait last until their report (at most 60 s of guest
# time), so a slow, loaded host (or a clock calibrated wrong under load)
# delays the reports but neither misses them nor makes the test long.
# usage: tools/watchdogtest.sh
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
log=$root/build/watchdogtest.log
fail() { echo "watchdog test FAILED: $1 (log: $log)"; exit 1; }

status=0
KARGS="debug_hooks watchdog_thresh=2 hung_task_timeout_secs=2" CPUS=2 TIMEOUT=400 LOG=$log \
  "$root/tools/run-cmd.sh" - 'echo irqoff 60 > /proc/shortbread/debug && echo after-irqoff &&
    echo hang 60 > /proc/shortbread/debug && echo after-hang' > /dev/null 2>&1 || status=$?
[ "$status" -eq 0 ] || fail "kernel status $status, want 0 (the machine goes on)"
grep -q "watchdog: hard LOCKUP on cpu [01]: no timer interrupt for" "$log" || fail "no hard-lockup report"
grep -q "runtime.sbDebugSpin" "$log" || fail "the locked CPU's stack does not name the spinning function"
grep -q "main.(\*kernel).addDebugHooks" "$log" || fail "the locked CPU's stack does not reach the goroutine that spins"
grep -q "watchdog: goroutines after the hard lockup" "$log" || fail "no goroutine dump after the lockup"
grep -q "after-irqoff" "$log" || fail "the machine did not go on after the lockup"
# (The spinning write is a hung task too; the wait's report comes after it.)
hang=$(sed -n '/after-irqoff/,$p' "$log")
echo "$hang" | grep -q "hung task: .* tid [0-9]* has been in system call 1 " || fail "no hung-task report for the wait"
echo "$hang" | sed -n '/hung task: goroutines/,$p' | grep -q "main.(\*kernel).addDebugHooks" ||
  fail "the hung-task goroutine dump does not show the hung wait"
grep -q "after-hang" "$log" || fail "the machine did not go on after the hung task"
echo "watchdog test: lockup and hung task reported, machine went on"

status=0
KARGS="debug_hooks watchdog_thresh=2 watchdog_panic" CPUS=2 TIMEOUT=400 LOG=$log.panic \
  "$root/tools/run-cmd.sh" - 'echo irqoff 60 > /proc/shortbread/debug; echo survived' > /dev/null 2>&1 || status=$?
[ "$status" -ne 0 ] && [ "$status" -ne 124 ] || fail "kernel status $status with watchdog_panic, want a failing power-off"
grep -q "watchdog: hard LOCKUP on cpu" "$log.panic" || fail "no hard-lockup report before the panic"
grep -q "PANIC: hard LOCKUP (watchdog_panic)" "$log.panic" || fail "no panic message"
! grep -q "^survived" "$log.panic" || fail "the machine went on despite watchdog_panic"
echo "watchdog test passed: reports, stacks, the machine going on, and watchdog_panic (status $status)"
