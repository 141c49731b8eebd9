#!/bin/sh
# The emulated-hardware matrix (make hwtest, issue 16): every machine,
# firmware, processor, interrupt controller, network card, disk
# controller, console and memory layout QEMU can give Shortbread that a
# physical server may have, one QEMU at a time, each through the test
# script that owns it (boottest, apictest, crashtest, netcheck, memtest,
# screentest, and the user suite's disk tests on each controller). It
# prints one line per configuration (name, result, seconds, what was
# booted), then a summary table (also in build/hwtest/summary.md), and
# fails if any configuration failed. Each configuration's output is in
# build/hwtest/NAME.log. About 20 minutes on a quiet two-core host:
# not part of make test, which boots one configuration of each kind.
# usage: [HWTEST_ONLY="name..."] tools/hwtest.sh   (names may be globs: 'nic-*')
# Needs: make kernel build/stub.elf build/initramfs.cpio user.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
build=$root/build
out=$build/hwtest
tools=$root/tools
mkdir -p "$out"
cd "$root"
summary=$out/summary.md
: > "$out/rows"
failed=0

# picked NAME: whether HWTEST_ONLY (default: every row) names it.
picked() {
  [ -z "${HWTEST_ONLY:-}" ] && return 0
  for pat in $HWTEST_ONLY; do
    case $1 in $pat) return 0 ;; esac
  done
  return 1
}

# row NAME CONFIG COMMAND...: runs one configuration.
row() {
  name=$1 config=$2
  shift 2
  picked "$name" || return 0
  start=$(date +%s)
  if "$@" > "$out/$name.log" 2>&1; then res=pass; else res=FAIL failed=1; fi
  secs=$(( $(date +%s) - start ))
  printf '%-22s %-4s %5ss  %s\n' "$name" "$res" "$secs" "$config"
  printf '| %s | %s | %s | %s s |\n' "$name" "$config" "$res" "$secs" >> "$out/rows"
  [ "$res" = pass ] || tail -n 15 "$out/$name.log" | sed 's/^/    /'
}

# disk NAME IMAGES-ENV... -- KERNEL-ARGS: the user suite's disk tests
# (t_blk writes and reads back a pattern and wants EIO from the bad
# sector; t_mount uses ext4; t_part reads GPT and MBR tables; t_blkerr
# sees injected errors) on a fresh set of images, checked on the host
# afterwards.
disk() {
  kargs=$1
  shift
  "$tools/mkiso.sh" "$build/hwtest-disk.iso" "$build/stub.elf" "$build/kernel.elf" \
    "init=/init loglevel=warn RUNNER_TIMEOUT=200 $kargs" "$build/user/initramfs.cpio" || return 1
  env "$@" "$tools/qemu.sh" "$build/hwtest-disk.iso" 2 600
}
t=$build/user/tests
img=$build/hwtest-img
disk_virtio() {
  mkdir -p "$img" && rm -f "$img"/* && truncate -s 64M "$img/vda" && mke2fs -q -t ext4 -F "$img/vdb" 64M &&
    disk "RUNNER_ONLY=t_blk,t_mount BLK_DISK=vda EXT4_DISK=vdb" DISK="$img/vda" DISK2="$img/vdb" &&
    "$t/t_blk" --check-image "$img/vda" && "$t/t_mount" --check-image "$img/vdb"
}
disk_ahci() {
  mkdir -p "$img" && rm -f "$img"/* && truncate -s 64M "$img/sata" &&
    "$t/t_part" --make-images "$img/gpt" "$img/mbr" && "$t/t_blkerr" --make-image "$img/err.cfg" "$img/err" &&
    disk "RUNNER_ONLY=t_blk,t_part,t_blkerr BLK_DISK=sata:65536 PART_DISKS=sata:40960,sata:49152 ERR_DISK=sata:24576" \
      SATA="$img/sata $img/gpt $img/mbr blkdebug:$img/err.cfg:$img/err" &&
    "$t/t_blk" --check-image "$img/sata" && "$t/t_part" --check-images "$img/gpt" "$img/mbr" &&
    "$t/t_blkerr" --check-image "$img/err"
}
disk_nvme() {
  mkdir -p "$img" && rm -f "$img"/* && truncate -s 64M "$img/nvme" &&
    printf '[inject-error]\nevent = "read_aio"\nerrno = "5"\nsector = "24576"\n' > "$img/nvme.conf" &&
    disk "RUNNER_ONLY=t_blk BLK_DISK=nvme0n1 BLK_BAD_SECTOR=24576" NVME="blkdebug:$img/nvme.conf:$img/nvme" &&
    "$t/t_blk" --check-image "$img/nvme"
}

# user ISO-NAME CMDLINE CPUS [VAR=value...]: user programs on one machine.
user() {
  iso=$build/hwtest-$1.iso cmd=$2 cpus=$3
  shift 3
  "$tools/mkiso.sh" "$iso" "$build/stub.elf" "$build/kernel.elf" "init=/init loglevel=info RUNNER_TIMEOUT=300 $cmd" \
    "$build/user/initramfs.cpio" || return 1
  env "$@" "$tools/qemu.sh" "$iso" "$cpus" 900
}
# The programs that depend on the processor (as make cpu-test), and those
# that keep many CPUs busy at once (threads, futexes, signals, pipes).
cputests=RUNNER_ONLY=t_fpu,t_signal,t_loadcpu,t_misc,t_time,t_vdso,t_auxv
smptests=RUNNER_ONLY=t_thread,t_futexpi,t_signal,t_pipe,t_sched,t_clone3,t_loadcpu

echo "hwtest: $(qemu-system-x86_64 --version | head -n1), commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown), $(date -u '+%Y-%m-%d %H:%M UTC')"
# Machines and firmware (the kernel's self-tests).
row boot-q35-bios-1  "q35, SeaBIOS, -cpu max, 1 CPU: self-tests" "$tools/boottest.sh" 1
row boot-q35-bios-4  "q35, SeaBIOS, -cpu max, 4 CPUs: self-tests" "$tools/boottest.sh" 4
row boot-pc-bios-2   "pc (i440FX, no ECAM), SeaBIOS, 2 CPUs: self-tests" env MACHINE=pc "$tools/boottest.sh" 2
row boot-q35-uefi-2  "q35, OVMF (UEFI), 2 CPUs: self-tests" env FIRMWARE=uefi "$tools/boottest.sh" 2
row boot-pc-uefi-2   "pc, OVMF (UEFI), 2 CPUs: self-tests" env FIRMWARE=uefi MACHINE=pc "$tools/boottest.sh" 2
row crash-serial     "q35, crash=nil: panic, traceback, registers on the serial port, failing power-off" "$tools/crashtest.sh"
# Interrupt controllers and CPU counts.
row apic-x2apic-32   "q35, 32 CPUs, x2APIC: every CPU runs goroutines and takes NMIs, IPIs" "$tools/apictest.sh" 600 x2apic-32
row apic-x2apic-64   "q35, 64 CPUs, x2APIC" "$tools/apictest.sh" 900 x2apic-64
row apic-x2apic-ids  "q35, 3 CPUs with APIC IDs 0, 256, 261 (MADT x2APIC entries)" "$tools/apictest.sh" 600 x2apic-ids
row apic-xapic-gaps  "q35, -cpu max,-x2apic, 2 sockets x 3 cores: xAPIC, APIC IDs 0-2, 4-6" "$tools/apictest.sh" 600 xapic-gaps
row user-smp-32      "q35, 32 CPUs, x2APIC: threads, futexes, signals, pipes, scheduling" user smp32 "$smptests" 32
# Processors without the newest features.
row cpu-qemu64       "-cpu qemu64 (no RDRAND, RDTSCP, XSAVE, AVX, x2APIC, FSGSBASE, SMEP/SMAP): self-tests" env CPU=qemu64 "$tools/boottest.sh" 2
row cpu-no-hpet      "q35,hpet=off: TSC from the PIT, profiler from the LAPIC timer: self-tests" env MACHINE=q35,hpet=off "$tools/boottest.sh" 2
row cpu-no-x2apic     "-cpu max,-x2apic: xAPIC MMIO, one-shot LAPIC timer (TCG has no TSC-deadline): self-tests" env CPU=max,-x2apic "$tools/boottest.sh" 2
row cpu-no-xsave     "-cpu max without XSAVE, AVX, RDRAND, RDSEED, RDTSCP, PCID, INVPCID, 1 GiB pages: self-tests" \
  env CPU=max,-xsave,-avx,-avx2,-rdrand,-rdseed,-rdtscp,-pcid,-invpcid,-pdpe1gb "$tools/boottest.sh" 2
for c in qemu64 Nehalem Skylake-Server EPYC; do
  row "user-cpu-$c" "-cpu $c, 2 CPUs: FPU, signals, cpuinfo, getrandom, clocks, vDSO, auxv" user cpu "$cputests" 2 CPU=$c
done
row user-no-hpet     "q35,hpet=off, 2 CPUs: the same user programs" user cpu "$cputests" 2 MACHINE=q35,hpet=off
# Network cards (a 4 MB download, a page served, a link flap, counters).
row nic-virtio       "virtio-net-pci on q35, 2 CPUs, DHCP" env NIC=virtio-net-pci CPUS=2 IPCONF=dhcp "$tools/netcheck.sh"
row nic-e1000        "e1000 (82540EM) on pc, 2 CPUs, DHCP" env NIC=e1000 CPUS=2 IPCONF=dhcp "$tools/netcheck.sh"
row nic-e1000e       "e1000e (82574L) on q35, 2 CPUs, DHCP" env NIC=e1000e CPUS=2 IPCONF=dhcp "$tools/netcheck.sh"
row nic-igb          "igb (82576) on q35, 2 CPUs, DHCP" env NIC=igb CPUS=2 IPCONF=dhcp "$tools/netcheck.sh"
row nic-igb-1cpu     "igb (82576) on q35, 1 CPU, static address" env NIC=igb CPUS=1 IPCONF=static "$tools/netcheck.sh"
# Disk controllers.
row disk-virtio      "virtio-blk, 2 CPUs: t_blk (with discard), ext4 t_mount" disk_virtio
row disk-ahci        "ICH9 AHCI, 4 SATA disks, 2 CPUs: t_blk, GPT/MBR t_part, injected errors t_blkerr" disk_ahci
row disk-nvme        "NVMe, 2 CPUs: t_blk with an injected read error" disk_nvme
# Consoles (with no serial port unless said).
row screen-vga       "VGA text + PS/2 keyboard, SeaBIOS, no serial port: shell typed at and read back" "$tools/screentest.sh" bios
row screen-gop       "UEFI GOP framebuffer + PS/2 keyboard, OVMF, no serial port" "$tools/screentest.sh" uefi
row screen-tty0      "console=tty0 beside a serial port: the log stays off the serial port" "$tools/screentest.sh" tty0
row screen-both      "serial port and screen both consoles (the default)" "$tools/screentest.sh" both
row screen-crash-vga "kernel panic on the VGA text screen, no serial port" "$tools/screentest.sh" crash-bios
row screen-crash-gop "kernel panic on the GOP framebuffer, no serial port" "$tools/screentest.sh" crash-uefi
# Memory layouts and NUMA (Shortbread; make mem-test adds Linux).
row mem-numa         "q35, 2 NUMA nodes (SRAT/SLIT), 4 CPUs, 2 GiB" env LINUX=0 "$tools/memtest.sh" numa
row mem-split        "q35, 6 GiB around the PCI hole, SeaBIOS: 5 GiB touched" env LINUX=0 "$tools/memtest.sh" split
row mem-big          "q35, 16 GiB, SeaBIOS: all counted, 2 GiB touched" env LINUX=0 "$tools/memtest.sh" big
row mem-uefi         "q35, 6 GiB, OVMF's memory map" env LINUX=0 "$tools/memtest.sh" uefi

{
  echo "| configuration | what | result | time |"
  echo "|---|---|---|---|"
  cat "$out/rows"
} > "$summary"
pass=$(grep -c '| pass |' "$out/rows")
fail=$(grep -c '| FAIL |' "$out/rows")
echo
cat "$summary"
echo
echo "hwtest: $pass passed, $fail failed (logs in $out)"
exit $failed
