#!/bin/sh
# Debugging Shortbread with gdb (make gdb): boots the ISO in QEMU with its
# gdb stub on 127.0.0.1:$PORT, the CPUs stopped before the first
# instruction, the serial console going to build/gdb-serial.log, and
# attaches gdb with the kernel's symbols and the Go runtime's gdb helpers
# (info goroutines, goroutine N bt). QEMU ends with gdb.
#
# usage: [CPUS=1] [MEM=512M] [PORT=1234] [ISO=build/shortbread.iso] tools/gdb.sh [gdb arguments...]
#   e.g. tools/gdb.sh -ex 'hbreak main.main' -ex continue
# A user program's symbols: (gdb) add-symbol-file build/user/tests/t_file
# (static programs load at the addresses in their ELF headers); a software
# breakpoint in one needs its address space loaded, so break in the kernel
# first (proc.(*Thread).syscall) and use hbreak in user code.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
iso=${ISO:-$root/build/shortbread.iso}
port=${PORT:-1234}
log=$root/build/gdb-serial.log
qemu-system-x86_64 -machine q35 -cpu max -m "${MEM:-512M}" -smp "${CPUS:-1}" -display none \
  -serial "file:$log" -monitor none -no-reboot -device isa-debug-exit,iobase=0xf4,iosize=0x04 \
  -cdrom "$iso" -S -gdb "tcp:127.0.0.1:$port" &
qemu=$!
trap 'kill $qemu 2>/dev/null || true' EXIT INT TERM
echo "gdb: QEMU (pid $qemu) waits on 127.0.0.1:$port; serial console in $log"
gdb -q "$root/build/kernel.elf" \
  -ex "set pagination off" \
  -ex "add-auto-load-safe-path $(go env GOROOT)/src/runtime" \
  -ex "source $(go env GOROOT)/src/runtime/runtime-gdb.py" \
  -ex "target remote 127.0.0.1:$port" "$@"
