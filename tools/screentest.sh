#!/bin/sh
# The screen console test: boots busybox's shell with the screen and the
# PS/2 keyboard as the console and types on it through QEMU's QMP
# (tools/screentest). short (make test): BIOS, no serial port, the kernel
# log on the screen, a pipeline, Ctrl-C, exit status. full (make
# screen-test): that with scrolling, clear and line editing, under BIOS
# (VGA text) and UEFI (GOP framebuffer, read back by screendump), then
# console=tty0 with a serial port (the kernel's log must stay off it) and
# both consoles (the shell's output on the serial port too).
# usage: tools/screentest.sh [short|full]
set -eu
mode=${1:-short}
root=$(cd "$(dirname "$0")/.." && pwd)
build=$root/build
cd "$root"
go build -o "$build/screentest" ./tools/screentest
iso() { # NAME CMDLINE
  tools/mkiso.sh "$build/screen-$1.iso" "$build/stub.elf" "$build/kernel.elf" "init=/bin/sh loglevel=info $2" "$build/user/initramfs.cpio"
}
iso plain ""
echo "screen test: BIOS, VGA text, no serial port ($mode)"
"$build/screentest" -iso "$build/screen-plain.iso" -steps "$mode"
[ "$mode" = full ] || exit 0
echo "screen test: UEFI, GOP framebuffer, no serial port (full)"
"$build/screentest" -iso "$build/screen-plain.iso" -uefi -steps full -timeout 600s
echo "screen test: console=tty0 with a serial port: the kernel log stays off it"
iso tty0 "console=tty0"
rm -f "$build/screen-serial.log"
"$build/screentest" -iso "$build/screen-tty0.iso" -serial "$build/screen-serial.log" \
  -expect-serial "Shortbread: machine layer" -reject-serial "kernel ready,SUM=42"
echo "screen test: serial port and screen both consoles (the default)"
rm -f "$build/screen-serial.log"
"$build/screentest" -iso "$build/screen-plain.iso" -serial "$build/screen-serial.log" \
  -expect-serial "kernel ready,SUM=42,rc=130"
echo "screen test: all passed"
