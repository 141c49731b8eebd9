#!/bin/sh
# Prints where each virtual CPU of a running QEMU is, through its monitor
# (a pipe: chardev, MON.in and MON.out), for a guest that is about to be
# killed for taking too long: three samples of every CPU's instruction
# pointer, stack pointer, flags and halt state, half a second apart, each
# kernel address followed by its Go function and line from ELF. A CPU
# halted in every sample with nothing to do is idle (a wait nobody ends,
# or a timer never armed); the same function in every sample is a spin.
# Nothing here can stop the guest: it only reads.
#
# usage: tools/qemu-dump.sh MON [ELF]
set -u
mon=$1 elf=${2:-}
[ -p "$mon.in" ] && [ -p "$mon.out" ] || exit 0
# Drain what the monitor printed so far (its banner), then ask.
timeout 0.3 cat "$mon.out" > /dev/null 2>&1
out=$(mktemp)
trap 'rm -f "$out"' EXIT
for i in 1 2 3; do
  # (timeout: a FIFO nobody reads would block the open forever)
  timeout 1 sh -c 'printf "info registers -a\n" > "$1"' _ "$mon.in" || exit 0
  sleep 0.5
  timeout 0.3 cat "$mon.out" >> "$out" 2>/dev/null
done
printf 'qemu-dump: where the CPUs were, three samples 0.5 s apart:\n'
# HMP prints "CPU#n" and then that CPU's registers, RSP on the line
# before RIP.
awk '/^CPU#/ { cpu = $1 } / RSP=/ { sub(/.* RSP=/, ""); rsp = $1 } /^RIP=/ { print cpu, $1, "RSP=" rsp, $2, $4, $NF }' "$out" |
  while read -r cpu rip rest; do
    where=
    if [ -n "$elf" ] && [ -f "$elf" ] && command -v go > /dev/null; then
      where=$(printf '0x%s\n' "${rip#RIP=}" | go tool addr2line "$elf" 2>/dev/null | paste -sd' ')
    fi
    printf '%s %s %s  %s\n' "$cpu" "$rip" "$rest" "$where"
  done
# Each CPU's local APIC timer: a CPU halted with no count left (and no
# interrupt pending, IRR/ISR) waits for something only another CPU or a
# device can send.
for cpu in $(awk '/^CPU#/ { sub(/CPU#/, ""); print $1 }' "$out" | sort -un); do
  : > "$out"
  timeout 1 sh -c 'printf "cpu %s\ninfo lapic\n" "$2" > "$1"' _ "$mon.in" "$cpu" || exit 0
  sleep 0.3
  timeout 0.3 cat "$mon.out" >> "$out" 2>/dev/null
  printf 'CPU#%s APIC %s\n' "$cpu" "$(grep -E '^(LVTT[[:space:]]|Timer|ISR|IRR)' "$out" | tr -s '\t ' ' ' | paste -sd';')"
done
