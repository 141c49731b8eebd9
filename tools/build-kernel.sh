#!/bin/sh
# Builds the Go kernel ELF: the stock toolchain (pinned by go.mod's
# toolchain line) with runtime-patches/ applied through go build -overlay
# (see tools/overlay.sh).
#
# usage: tools/build-kernel.sh OUT.elf
set -eu
out=$1
root=$(cd "$(dirname "$0")/.." && pwd)
overlay=$("$root/tools/overlay.sh" "$root/runtime-patches" "$root/build/overlay")

# -tags shortbread: the patch files carry it so that go vet/test ./...
# skip them (they are package runtime and only build inside GOROOT).
# -T: link at 16 MiB + 4 KiB (the ELF headers take the first page) far
# above where GRUB puts modules; -E: start in the machine layer.
CGO_ENABLED=0 GOOS=linux GOARCH=amd64 go build -tags shortbread -overlay "$overlay" \
  -ldflags "-T 0x1001000 -E runtime.sbStart" -o "$out" "$root/kernel"
