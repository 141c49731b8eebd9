#!/bin/sh
# Builds the Go kernel ELF: the stock toolchain (pinned by go.mod's
# toolchain line) with runtime-patches/ applied through go build -overlay
# (see tools/overlay.sh) and netstack-patches/ applied to a copy of gVisor's
# module (see tools/netstack.sh). The vDSO is compiled from C
# (tools/build-vdso.sh) and added to package kernel/vdso by the same
# overlay.
#
# usage: tools/build-kernel.sh OUT.elf
set -eu
out=$1
root=$(cd "$(dirname "$0")/.." && pwd)
# In build/_overlay: go vet ./... and go test ./... skip directories named
# _*, and the patched copies of upstream runtime files carry no shortbread
# tag that would keep those commands out of them.
overlay=$("$root/tools/overlay.sh" "$root/runtime-patches" "$root/build/_overlay")
vdso=$("$root/tools/build-vdso.sh" "$root/build/_overlay/vdso")
sed -i "s|^{\"Replace\":{|{\"Replace\":{\"$root/kernel/vdso/image_shortbread.go\":\"$vdso\",|" "$overlay"
# Beside OUT, so builds into different directories do not share it.
modfile=$("$root/tools/netstack.sh" "$root/netstack-patches" "$(dirname "$out")/netstack")

# -tags shortbread: the patch files carry it so that go vet/test ./...
# skip them (they are package runtime and only build inside GOROOT).
# -T: link at 0xffffffff81001000 (the flag takes it as a signed number):
# the top 2 GiB, whose image the boot stub puts at physical 16 MiB + 4 KiB
# (the ELF headers take the first page), far above where GRUB puts
# modules, and leaves the whole lower half to user programs; -E: start in
# the machine layer.
CGO_ENABLED=0 GOOS=linux GOARCH=amd64 go build -tags shortbread -overlay "$overlay" -modfile "$modfile" \
  -ldflags "-T -2130702336 -E runtime.sbStart" -o "$out" "$root/kernel"
