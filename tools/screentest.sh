#!/bin/sh
# The screen console test: boots busybox's shell with the screen and the
# PS/2 keyboard as the console and types on it through QEMU's QMP
# (tools/screentest). short (make test): BIOS, no serial port, the kernel
# log on the screen, a pipeline, Ctrl-C, exit status; then a kernel panic
# (crash=nil) with no serial port, whose message, faulting function and
# registers must reach the VGA screen (about 15 s). full (make
# screen-test): the first with scrolling, clear and line editing, under
# BIOS (VGA text) and UEFI (GOP framebuffer, read back by screendump),
# then console=tty0 with a serial port (the kernel's log must stay off
# it), both consoles (the shell's output on the serial port too), and the
# panic on the VGA screen and the GOP framebuffer.
# One configuration alone (make hwtest): bios, uefi, tty0, both,
# crash-bios, crash-uefi.
# usage: tools/screentest.sh [short|full|CONFIG]
set -eu
mode=${1:-short}
root=$(cd "$(dirname "$0")/.." && pwd)
build=$root/build
cd "$root"
go build -o "$build/screentest" ./tools/screentest
iso() { # NAME CMDLINE
  tools/mkiso.sh "$build/screen-$1.iso" "$build/stub.elf" "$build/kernel.elf" "init=/bin/sh loglevel=info $2" "$build/user/initramfs.cpio"
}
run() {
  case $1 in
  short | bios)
    steps=full
    [ "$1" = short ] && steps=short
    iso plain ""
    echo "screen test: BIOS, VGA text, no serial port ($steps)"
    "$build/screentest" -iso "$build/screen-plain.iso" -steps "$steps" ;;
  uefi)
    iso plain ""
    echo "screen test: UEFI, GOP framebuffer, no serial port (full)"
    "$build/screentest" -iso "$build/screen-plain.iso" -uefi -steps full -timeout 600s ;;
  tty0)
    echo "screen test: console=tty0 with a serial port: the kernel log stays off it"
    iso tty0 "console=tty0"
    rm -f "$build/screen-serial.log"
    "$build/screentest" -iso "$build/screen-tty0.iso" -serial "$build/screen-serial.log" \
      -expect-serial "Shortbread: machine layer" -reject-serial "kernel ready,SUM=42" ;;
  both)
    echo "screen test: serial port and screen both consoles (the default)"
    iso plain ""
    rm -f "$build/screen-serial.log"
    "$build/screentest" -iso "$build/screen-plain.iso" -serial "$build/screen-serial.log" \
      -expect-serial "kernel ready,SUM=42,rc=130" ;;
  crash-bios | crash-uefi)
    fw=${1#crash-}
    echo "screen test: a kernel panic on the screen, $fw, no serial port"
    iso crash "crash=nil"
    flag=
    [ "$fw" = uefi ] && flag=-uefi
    "$build/screentest" -iso "$build/screen-crash.iso" $flag -steps crash -timeout 600s ;;
  *)
    echo "screentest.sh: unknown configuration $1" >&2
    exit 2 ;;
  esac
}
case $mode in
short) run short; run crash-bios ;;
full) for c in bios uefi tty0 both crash-bios crash-uefi; do run $c; done ;;
*) run "$mode" ;;
esac
echo "screen test ($mode): passed"
