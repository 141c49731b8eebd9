# Shortbread: every entry point. `make run` and `make test` are the two a
# new user needs; both install missing Debian packages first.

GO_PIN     := $(shell sed -n 's/^toolchain //p' go.mod)
# Build with exactly the pinned release; the go command fetches it through
# the module proxy (golang.org/toolchain) when the local go differs.
export GOTOOLCHAIN := $(GO_PIN)

BUILD      := build
KERNEL     := $(BUILD)/kernel.elf
STUB       := $(BUILD)/stub.elf
INITRAMFS  := $(BUILD)/initramfs.cpio
USER_BUILD := $(BUILD)/user
LINUX_BUILD := $(BUILD)/linux
ISO        := $(BUILD)/shortbread.iso
# make run starts busybox's shell as the first program; CMDLINE="" gives
# the kernel console instead.
CMDLINE    ?= init=/bin/sh
CPUS       ?= 1
MEM        ?= 512M
# make run NET=user adds a network card (NIC=, virtio-net-pci by default)
# on QEMU's user networking, with nginx and redis running in the guest and
# reached from the host at 127.0.0.1:HTTP_PORT and 127.0.0.1:REDIS_PORT
# (tools/netuser.sh builds its ISO).
NET        ?=
NIC        ?= virtio-net-pci
HTTP_PORT  ?= 8080
REDIS_PORT ?= 6380
# QEMU places the e1000 on the i440FX (pc) machine, as tools/netcheck.sh does.
RUN_MACHINE := $(if $(filter e1000,$(NIC)),pc,q35)
QEMU_FLAGS := -machine $(RUN_MACHINE) -cpu max -m $(MEM) -smp $(CPUS) -nographic -no-reboot \
              -device isa-debug-exit,iobase=0xf4,iosize=0x04
NET_ISO    := $(BUILD)/shortbread-net.iso
# make run DISK=IMAGE boots with the root file system on IMAGE's first
# partition (virtio-blk, root=/dev/vda1 rw) and no initramfs; make disk
# builds build/disk.img (tools/mkdisk.sh: GPT, ext4 by mke2fs -d from the
# user tree, DISK_SIZE sparse bytes).
DISK       ?=
DISK_IMG   := $(BUILD)/disk.img
DISK_SIZE  ?= 1G
DISK_ISO   := $(BUILD)/shortbread-disk.iso
ifeq ($(NET),user)
RUN_ISO    := $(NET_ISO)
RUN_NET    := -netdev user,id=n0,hostfwd=tcp:127.0.0.1:$(HTTP_PORT)-:80,hostfwd=tcp:127.0.0.1:$(REDIS_PORT)-:6379 \
              -device $(NIC),netdev=n0
else ifneq ($(DISK),)
RUN_ISO    := $(DISK_ISO)
else
RUN_ISO    := $(ISO)
endif
comma      := ,
RUN_DISK   := $(if $(DISK),-drive file=$(DISK)$(comma)if=none$(comma)id=root$(comma)format=raw$(comma)discard=unmap -device virtio-blk-pci$(comma)drive=root -boot order=d)

DEB_PACKAGES := qemu-system-x86 grub-pc-bin grub-efi-amd64-bin grub-common xorriso mtools nasm ovmf musl-tools cpio e2fsprogs python3 curl gdisk fdisk

# make TIMES=1 ...: each recipe line's time, target and the host's load,
# on stderr and appended to build/times.log (tools/timesh.sh); how the
# slow parts of make test are found. Set after every $$(shell) above.
ifdef TIMES
SHELL := $(CURDIR)/tools/timesh.sh
.SHELLFLAGS = $@ -c
endif

.PHONY: all disk root-test prebuild net-check-test net-user-check run run-cmd hwtest screen-smoke screen-test net-check net-inject test iso kernel deps host-test boot-test user-test cpu-test numa-test mem-test linux-test powercut-test powercut crash-test powercut-control debian-test exhaust-test user usertest-shortbread vet bench-boot bench-sys bench-scale fuzz-soak soak-test gdb hlltax hlltax-exact gc-headroom clean

all: iso

deps:
	@tools/deps.sh $(DEB_PACKAGES)

kernel: $(KERNEL)

$(KERNEL): FORCE
	@mkdir -p $(BUILD)
	tools/build-kernel.sh $@

$(STUB): boot/stub.asm boot/stub.ld
	@mkdir -p $(BUILD)
	nasm -f elf32 -o $(BUILD)/stub.o boot/stub.asm
	ld -m elf_i386 --no-warn-rwx-segments -T boot/stub.ld -o $@ $(BUILD)/stub.o

$(INITRAMFS): $(wildcard user/smoke/*.c) tools/smoke-initramfs.sh
	@mkdir -p $(BUILD)
	tools/smoke-initramfs.sh $@

iso: $(ISO)

# The ISO make run boots carries the user initramfs: busybox, the test
# programs and the smoke programs.
$(ISO): $(KERNEL) $(STUB) user boot/grub.cfg tools/mkiso.sh
	tools/mkiso.sh $@ $(STUB) $(KERNEL) "$(CMDLINE)" $(USER_BUILD)/initramfs.cpio

# make run DISK=...'s ISO: no initramfs, the root on the disk (rebuilt
# each time: CMDLINE is baked in).
$(DISK_ISO): $(KERNEL) $(STUB) boot/grub.cfg tools/mkiso.sh FORCE
	tools/mkiso.sh $@ $(STUB) $(KERNEL) "$(CMDLINE) root=/dev/vda1 rw" none

# A bootable disk image (make run DISK=build/disk.img): made when missing,
# never overwritten (make disk FRESH=1 replaces it with a fresh one).
disk: deps
	@if [ -f $(DISK_IMG) ] && [ "$(FRESH)" != 1 ]; then echo "$(DISK_IMG) exists, kept (make disk FRESH=1 makes a fresh one)"; \
	else $(MAKE) --no-print-directory user && tools/mkdisk.sh $(DISK_IMG) $(USER_BUILD)/initramfs.cpio $(DISK_SIZE); fi

# make run NET=user's ISO: the user initramfs, nginx and redis (make apps)
# and the script that starts them (tools/netuser.sh).
$(NET_ISO): $(KERNEL) $(STUB) user apps tools/netuser.sh
	tools/netuser.sh $@ $(APPS_BUILD) $(HTTP_PORT) $(REDIS_PORT)

# One command on Shortbread (or Linux with LINUX=1) with a host directory
# merged into the initramfs; the exit status is the command's.
#   make run-cmd EXTRA=dir CMD='ls -l /'
run-cmd: deps $(KERNEL) $(STUB) user
	@if [ "$(LINUX)" = 1 ]; then tools/linux/kernel.sh $(LINUX_BUILD) >/dev/null; fi
	LINUX=$(LINUX) CPUS=$(CPUS) tools/run-cmd.sh "$(or $(EXTRA),-)" '$(CMD)'


run: deps
	@case "$(NET)" in ""|user) ;; *) echo "make run: NET=$(NET): only NET=user is known" >&2; exit 2 ;; esac
	@if [ -n "$(DISK)" ] && [ ! -f "$(DISK)" ]; then echo "make run: DISK=$(DISK): no such file (make disk builds $(DISK_IMG))" >&2; exit 2; fi
	@$(MAKE) --no-print-directory $(RUN_ISO)
	$(if $(RUN_NET),@echo "make run NET=user: host 127.0.0.1:$(HTTP_PORT) -> guest nginx :80; 127.0.0.1:$(REDIS_PORT) -> guest redis :6379")
	qemu-system-x86_64 $(QEMU_FLAGS) $(if $(filter uefi,$(FIRMWARE)),-bios /usr/share/ovmf/OVMF.fd) $(RUN_NET) $(RUN_DISK) -cdrom $(RUN_ISO); \
	  s=$$?; [ $$s -eq 1 ] || [ $$s -eq 0 ] || echo "QEMU exited with $$s (kernel status $$(( ($$s - 1) / 2 )))"

# Everything: 18 minutes on a quiet two-core host from a fresh clone
# (.ci/run at fd1312e, 2026-12-02; 27 minutes before guests ran two at a
# time); make TIMES=1 test shows where the time goes.
test: deps prebuild vet host-test boot-test root-test cpu-test numa-test screen-smoke suite-test exhaust-test powercut-test debian-test net-check-test net-inject apps-smoke wire-check

# make test's head start (tools/prebuild.sh): the user programs and the
# applications build in the background at the lowest priority while the
# first tests run; user and apps wait for that build, then find it done.
prebuild: deps
	tools/prebuild.sh $(USER_BUILD) $(APPS_BUILD)

vet:
	go vet ./...
	@test -z "$$(gofmt -l kernel bench tools runtime-patches 2>/dev/null)" || { gofmt -l kernel bench tools runtime-patches; echo "gofmt needed"; exit 1; }

# With the netstack the kernel is built with (tools/netstack.sh), and the
# tests that netstack-patches/ adds to it.
host-test:
	m=$$(tools/netstack.sh netstack-patches $(BUILD)/netstack-test) && \
	  go test -modfile "$$m" -tags sbnetstack ./... gvisor.dev/gvisor/pkg/tcpip gvisor.dev/gvisor/pkg/tcpip/stack gvisor.dev/gvisor/pkg/tcpip/transport/tcp gvisor.dev/gvisor/pkg/tcpip/network/ipv4 \
	    gvisor.dev/gvisor/pkg/sync gvisor.dev/gvisor/pkg/buffer

boot-test: $(KERNEL) $(STUB) $(INITRAMFS)
	tools/overlaytest.sh
	tools/boottest.sh 1
	tools/boottest.sh 4
	FIRMWARE=uefi tools/boottest.sh 2
	tools/crashtest.sh
	tools/apictest.sh

# The root file system on a disk (root=/dev/vda1), with and without an
# initramfs, switch_root from an initramfs, left clean at power-off
# (tools/roottest.sh; five short boots).
root-test: user $(KERNEL) $(STUB) $(INITRAMFS)
	tools/roottest.sh

# Memory layouts of physical servers (tools/memtest.sh): two NUMA nodes
# in make test (about 30 s, both kernels); mem-test adds 6 GiB split
# around the PCI hole (SeaBIOS and OVMF) and 16 GiB.
numa-test: user $(KERNEL) $(STUB)
	tools/linux/kernel.sh $(LINUX_BUILD)
	tools/memtest.sh numa
mem-test: user $(KERNEL) $(STUB)
	tools/linux/kernel.sh $(LINUX_BUILD)
	tools/memtest.sh

# Machines with less than -cpu max: the self-tests (whose profiler test
# takes the NMI path) on qemu64 (no RDRAND, RDTSCP, XSAVE, AVX) and on q35
# without an HPET, then the user programs that depend on the processor
# (FPU state and signal frames, /proc/cpuinfo, getrandom, clocks) on
# qemu64, Nehalem, Skylake-Server (AVX-512), EPYC and without an HPET,
# two models at a time (tools/par.sh).
CPU_TESTS := t_fpu,t_signal,t_loadcpu,t_misc,t_time,t_vdso,t_auxv
cpu-test: user $(KERNEL) $(STUB) $(INITRAMFS)
	CPU=qemu64 tools/boottest.sh 2
	MACHINE=q35,hpet=off tools/boottest.sh 2
	tools/mkiso.sh $(BUILD)/cputest.iso $(STUB) $(KERNEL) "init=/init loglevel=info RUNNER_TIMEOUT=120 RUNNER_ONLY=$(CPU_TESTS)" $(USER_BUILD)/initramfs.cpio
	@MAKE="$(MAKE)" tools/par.sh cpu-qemu64 cpu-Nehalem
	@MAKE="$(MAKE)" tools/par.sh cpu-Skylake-Server cpu-EPYC
	@$(MAKE) --no-print-directory cpu-nohpet
# One boot of build/cputest.iso each (cpu-test makes it): cpu-MODEL on
# that processor, cpu-nohpet on q35 without an HPET.
CPU_BOOTS := cpu-qemu64 cpu-Nehalem cpu-Skylake-Server cpu-EPYC cpu-nohpet
.PHONY: $(CPU_BOOTS)
$(filter-out cpu-nohpet,$(CPU_BOOTS)):
	CPU=$(patsubst cpu-%,%,$@) tools/qemu.sh $(BUILD)/cputest.iso 2 600
cpu-nohpet:
	MACHINE=q35,hpet=off tools/qemu.sh $(BUILD)/cputest.iso 2 600

# The screen console: busybox's shell on the VGA text screen with no
# serial port, typed at through QEMU's QMP and read back from video memory
# (tools/screentest.sh; about a minute), and a kernel panic drawn on the
# screen (crash=nil, no serial port). screen-test adds scrolling, clear
# and line editing, the UEFI framebuffer (read back by screendump),
# console=tty0 beside a serial port, both consoles at once, and the panic
# on the UEFI framebuffer.
screen-smoke: user $(KERNEL) $(STUB)
	tools/screentest.sh short

screen-test: deps user $(KERNEL) $(STUB)
	tools/screentest.sh full

# The emulated-hardware matrix (tools/hwtest.sh, about 20 minutes; not in
# make test): machines, firmware, CPU counts and APIC layouts, processors
# without optional features, every NIC and disk controller, the screen
# consoles and a panic on them, NUMA and large memory; a line per
# configuration and a summary table. HWTEST_ONLY="nic-* disk-*" picks rows.
hwtest: deps user $(KERNEL) $(STUB) $(INITRAMFS)
	tools/hwtest.sh

bench-boot: deps $(KERNEL) $(STUB) $(INITRAMFS)
	go run ./bench/boottime -runs 3

# Micro-benchmarks (null system call, pipe ping-pong, page faults, process
# lifecycle with growing data, multi-threaded malloc on 1/2/4 CPUs),
# Shortbread vs Linux in the same QEMU configuration.
# gdb on the kernel in QEMU (tools/gdb.sh; README: When something hangs).
gdb: deps
	@$(MAKE) --no-print-directory iso
	CPUS=$(CPUS) MEM=$(MEM) tools/gdb.sh

# Every kind of kernel memory exhausted at once in a 128 MiB guest
# (user/tests/h_exhaust.c), at 1 and 2 CPUs; about 20 s each.
exhaust-test: deps user $(KERNEL) $(STUB)
	tools/exhausttest.sh 1
	tools/exhausttest.sh 2

# The flake hunt: N (default 20) rounds of the boot self-tests and the
# user suite with 1, 2 and 4 CPUs, failures counted per test (not in make test).
# The user suite's boots get the suite's disks, made afresh each time and
# checked on the host afterwards (soak-disks, below).
soak-test: deps user $(KERNEL) $(STUB) $(INITRAMFS)
	N=$(or $(N),20) SOAK_ARGS="$(DISK_ARGS)" tools/soak.sh

# For tools/soak.sh: soak-disks D=DIR makes the suite's fresh images in
# DIR and prints their QEMU variables; soak-disks-check D=DIR runs the
# host's checks of what the guest wrote to them.
soak-disks:
	@{ $(call NEW_DISK,$(D)); } >&2 && echo '$(call DISKS,$(D))'
soak-disks-check:
	@$(call CHECK_DISKS,$(D))

# The system-call fuzzer for MINUTES (default 60) per CPU count, boot
# after boot with new seeds, root and unprivileged (not in make test).
fuzz-soak: deps user $(KERNEL) $(STUB)
	tools/fuzz-soak.sh

bench-sys: deps user $(KERNEL) $(STUB)
	tools/linux/kernel.sh $(LINUX_BUILD)
	go run ./bench/sysbench -cpus 1,2,4

# The scaling matrix (issue 21): each workload of user/bench/scale.c with
# one worker and one per CPU, on 1 and 2 CPUs, Shortbread vs Linux in
# interleaved boots (~10-15 min here; LONG=1: 6 boots of 3 s runs, and 4
# CPUs where the host has them; FS=ext4: the file workloads on a fresh
# ext4 image over virtio-blk instead of tmpfs). Not in make test.
bench-scale: deps user $(KERNEL) $(STUB)
	tools/linux/kernel.sh $(LINUX_BUILD)
	go run ./bench/scale $(if $(LONG),-long) $(if $(FS),-fs $(FS))

# Block devices (NVMe and virtio-blk, 4 KiB O_DIRECT sequential/random,
# queue depth 1 and 32, fsync latency), Shortbread vs Linux, 1 and 2 CPUs.
bench-blk: deps user $(KERNEL) $(STUB)
	tools/linux/kernel.sh $(LINUX_BUILD)
	go run ./bench/blkbench -cpus 1,2

# The user-space suite (user/tests, busybox from Debian's source, the
# runner as /init) on Linux, the reference: Debian's stock kernel in the
# same QEMU configuration. Every test must pass there.
user:
	user/build.sh $(USER_BUILD)

# Both kernels get a zeroed 64 MiB scratch disk (virtio-blk, /dev/vda)
# for t_blk, made afresh for each boot; afterwards t_blk, run on the
# host, checks the image holds what the guest wrote.
#
# A second 64 MiB disk (/dev/vdb) holds a fresh ext4 file system for
# t_mount, t_fmap and t_dirpos; afterwards e2fsck -fn must find it clean and
# debugfs must show the files the guest wrote (t_mount and t_fmap
# --check-image).
#
# Five SATA disks on q35's AHCI controller: a zeroed 64 MiB one for
# t_blk, and a GPT disk (sgdisk, 40 MiB) and an MBR one (sfdisk, 48 MiB)
# made by t_part --make-images for t_part (t_part --check-images checks
# them afterwards), and a 24 MiB one behind QEMU's blkdebug that fails
# reads of sector 1000 and writes of sector 2000 (t_blkerr
# --make-image), and a 12 MiB ext2 file system (no journal) for t_mount,
# checked as its ext4 disk is. The tests find SATA disks by size (Linux
# names them in the order their ports finish probing).
#
# Each boot of the suite is a target of its own (suite-KERNEL-CPUS,
# nvme-KERNEL-CPUS) with its images in its own directory
# ($(SUITE_DIR)/TARGET), so that make test can run two at once
# (tools/par.sh). They have no prerequisites: user-test, linux-test and
# suite-test build what they boot first.
SUITE_DIR := $(BUILD)/suite
# Each program's time limit in seconds, on Shortbread and on Linux; and,
# to rerun part of the suite on both kernels with the disks (make
# suite-test SUITE_ONLY=t_fmap,t_churn), what RUNNER_ONLY is to the runner
# (the host's image checks then are left out: they need every program).
# The limits catch hangs, not slowness: two guests share the host's cores
# in make test, and the slowest programs take a minute on a quiet host.
SUITE_TIMEOUT ?= 300
LINUX_SUITE_TIMEOUT ?= 300
# and the whole boot's, in seconds (tools/qemu.sh, tools/linux/run.sh)
SUITE_LIMIT ?= 1200
LINUX_SUITE_LIMIT ?= 900
SUITE_ONLY ?=
SUITE_RUNNER = $(if $(SUITE_ONLY),RUNNER_ONLY=$(SUITE_ONLY) )$(DISK_ARGS)
# $(call NEW_DISK,DIR): fresh images in DIR; $(call DISKS,DIR): them for
# tools/qemu.sh and tools/linux/run.sh; $(call CHECK_DISKS,DIR): the
# host's checks of what the guest wrote.
NEW_DISK = rm -rf $(1) && mkdir -p $(1) && truncate -s 64M $(1)/disk.img $(1)/sata.img && \
  mke2fs -q -t ext4 -F $(1)/ext4.img 256M && mke2fs -q -t ext2 -F $(1)/ext2.img 12M && \
  $(USER_BUILD)/tests/t_part --make-images $(1)/gpt.img $(1)/mbr.img && \
  $(USER_BUILD)/tests/t_blkerr --make-image $(1)/blkdebug.cfg $(1)/err.img
DISKS = DISK=$(1)/disk.img DISK2=$(1)/ext4.img SATA="$(1)/sata.img $(1)/gpt.img $(1)/mbr.img blkdebug:$(1)/blkdebug.cfg:$(1)/err.img $(1)/ext2.img"
DISK_ARGS := BLK_DISK=vda,sata:65536 EXT4_DISK=vdb EXT2_DISK=sata:12288 PART_DISKS=sata:40960,sata:49152 ERR_DISK=sata:24576
CHECK_DISKS = $(USER_BUILD)/tests/t_blk --check-image $(1)/disk.img $(1)/sata.img && \
  $(USER_BUILD)/tests/t_mount --check-image $(1)/ext4.img $(1)/ext2.img && $(USER_BUILD)/tests/t_fmap --check-image $(1)/ext4.img && \
  $(USER_BUILD)/tests/t_part --check-images $(1)/gpt.img $(1)/mbr.img && \
  $(USER_BUILD)/tests/t_blkerr --check-image $(1)/err.img

# t_blk alone once more, on namespace 1 of an NVMe controller
# (/dev/nvme0n1), with a fresh zeroed 64 MiB image checked the same way;
# QEMU's blkdebug makes reads of sector NVME_BAD fail (t_blk wants EIO).
NVME_BAD := 24576
NVME_T_BLK = $(NEW_NVME) && NVME=blkdebug:$(1)/nvme-bad.conf:$(1)/nvme.img
NEW_NVME = rm -rf $(1) && mkdir -p $(1) && truncate -s 64M $(1)/nvme.img && \
	printf '[inject-error]\nevent = "read_aio"\nerrno = "5"\nsector = "$(NVME_BAD)"\n' > $(1)/nvme-bad.conf
CHECK_NVME = $(USER_BUILD)/tests/t_blk --check-image $(1)/nvme.img
NVME_ARGS := RUNNER_ONLY=t_blk BLK_DISK=nvme0n1 BLK_BAD_SECTOR=$(NVME_BAD)

LINUX_RUN := tools/linux/run.sh $(LINUX_BUILD)/vmlinuz $(USER_BUILD)/initramfs.cpio
SUITE_BOOTS := suite-shortbread-1 suite-shortbread-2 suite-linux-1 suite-linux-2
NVME_BOOTS := nvme-shortbread-1 nvme-shortbread-2 nvme-linux-1 nvme-linux-2
.PHONY: soak-disks soak-disks-check suite-test $(SUITE_BOOTS) $(NVME_BOOTS) usertest-isos linux-kernel
$(SUITE_BOOTS) $(NVME_BOOTS): d = $(SUITE_DIR)/$@
$(SUITE_BOOTS) $(NVME_BOOTS): cpus = $(lastword $(subst -, ,$@))
suite-shortbread-1 suite-shortbread-2:
	$(call NEW_DISK,$(d)) && $(call DISKS,$(d)) tools/qemu.sh $(BUILD)/usertest.iso $(cpus) $(SUITE_LIMIT)
	$(if $(SUITE_ONLY),,$(call CHECK_DISKS,$(d)))
suite-linux-1 suite-linux-2:
	$(call NEW_DISK,$(d)) && $(call DISKS,$(d)) APPEND="RUNNER_TIMEOUT=$(LINUX_SUITE_TIMEOUT) $(SUITE_RUNNER)" $(LINUX_RUN) $(cpus) $(LINUX_SUITE_LIMIT)
	$(if $(SUITE_ONLY),,$(call CHECK_DISKS,$(d)))
nvme-shortbread-1 nvme-shortbread-2:
	$(call NVME_T_BLK,$(d)) tools/qemu.sh $(BUILD)/nvmetest.iso $(cpus) 300
	$(call CHECK_NVME,$(d))
nvme-linux-1 nvme-linux-2:
	$(call NVME_T_BLK,$(d)) APPEND="$(NVME_ARGS)" $(LINUX_RUN) $(cpus) 300
	$(call CHECK_NVME,$(d))

# What the suite's boots need: Shortbread's ISOs, and Linux's kernel with
# the modules run.sh adds to the initramfs (made here, once, not by two
# boots at once).
usertest-isos: user $(KERNEL) $(STUB)
	tools/mkiso.sh $(BUILD)/usertest.iso $(STUB) $(KERNEL) "init=/init loglevel=warn RUNNER_TIMEOUT=$(SUITE_TIMEOUT) $(SUITE_RUNNER)" $(USER_BUILD)/initramfs.cpio
	tools/mkiso.sh $(BUILD)/nvmetest.iso $(STUB) $(KERNEL) "init=/init loglevel=warn RUNNER_TIMEOUT=120 $(NVME_ARGS)" $(USER_BUILD)/initramfs.cpio
linux-kernel:
	tools/linux/kernel.sh $(LINUX_BUILD)
	tools/linux/modules.sh $(LINUX_BUILD) >/dev/null

linux-test: user linux-kernel
	@$(MAKE) --no-print-directory suite-linux-1 suite-linux-2 nvme-linux-1 nvme-linux-2

# Power cuts (tools/powercut): the guest's disk served over NBD from a
# model of a disk with a volatile write cache; h_durable changes files on
# a fresh mke2fs -t ext4 image and reports each change once durable; QEMU
# is killed at a random moment, a random part of the unflushed writes
# lands, and a second boot must find every durable change after journal
# recovery (then e2fsck -fn clean, and the files debugfs copies out
# checked again). Three processes change files at once (-workers 3), so
# that their fsyncs meet in the journal as a mail server's do. make test:
# four cuts, each kernel recovering its own crash and then the other's
# (about a minute), then two with mail deliveries as the workload (each
# kernel recovering its own; about 25 s), a write landing in part
# in whole 512-byte sectors, so that the 1024-byte superblocks of the
# file system and of the journal can be torn (kernel/fs/ext4's
# torn_test.go: Shortbread writes the first home only at mount and
# unmount, or as the checkpoint of a logged copy; the second's changes
# all lie in its first sector). make powercut CUTS=N is the long run
# (KERNELS=shortbread, RECOVER=same|other|both, ATOM=4096, WORKERS=1..8) on images
# with 4 KiB and 1 KiB blocks in turn, counts in
# bench/results/powercut-DATE.txt (DATE-2.txt, ... for a day's later runs).
powercut-test: user $(KERNEL) $(STUB)
	tools/linux/kernel.sh $(LINUX_BUILD)
	go run ./tools/powercut -cuts 4 -kernels shortbread,linux -recover both -max-delay 6s -atom 512 -workers 3
	go run ./tools/powercut -cuts 2 -kernels shortbread,linux -recover same -max-delay 6s -atom 512 -workers 3 -workload mail

# The negative control: Linux mounted with barrier=0 sends no flushes, so
# its durable files are lost at cuts and the harness must say so.
powercut-control: user
	tools/linux/kernel.sh $(LINUX_BUILD)
	! go run ./tools/powercut -cuts 2 -kernels linux -recover same -linux-opts barrier=0 -max-delay 8s

CUTS ?= 100
KERNELS ?= shortbread,linux
powercut: deps user $(KERNEL) $(STUB)
	tools/linux/kernel.sh $(LINUX_BUILD)
	@mkdir -p bench/results
	r=bench/results/powercut-$$(date -u +%Y-%m-%d).txt; n=1; \
	while [ -e "$$r" ]; do n=$$((n+1)); r=bench/results/powercut-$$(date -u +%Y-%m-%d)-$$n.txt; done; \
	go run ./tools/powercut -cuts $(CUTS) -kernels $(KERNELS) -recover $(or $(RECOVER),both) \
	  -atom $(or $(ATOM),512) -workers $(or $(WORKERS),3) -workload $(or $(WORKLOAD),files) -sizes 600M,200M -results "$$r"

# The long run under the name crash-safety work knows it by: make crash-test CUTS=1000.
crash-test: powercut

# The same suite on Shortbread, with 1 and 2 CPUs: every program must
# pass (the runner's status becomes the kernel's power-off status).
user-test: usertest-isos
	@$(MAKE) --no-print-directory suite-shortbread-1 suite-shortbread-2 nvme-shortbread-1 nvme-shortbread-2
	tools/watchdogtest.sh

# make test's user-test and linux-test in one: each boot on Shortbread at
# once with one on Linux (tools/par.sh; a one-CPU guest leaves one of
# CI's two cores idle), each log printed whole when both have ended. A
# one-CPU guest goes with a two-CPU one: three virtual CPUs on two cores.
suite-test: usertest-isos linux-kernel
	@MAKE="$(MAKE)" tools/par.sh suite-shortbread-1,nvme-shortbread-1 suite-linux-2,nvme-linux-2
	@MAKE="$(MAKE)" tools/par.sh suite-shortbread-2,nvme-shortbread-2 suite-linux-1,nvme-linux-1
	tools/watchdogtest.sh

usertest-shortbread: user-test

# Debian's own dynamically linked programs, unchanged: bash, coreutils,
# glibc's loader and libraries fetched with apt-get download
# (user/debian/build.sh), merged into the test initramfs only for these
# boots; t_debian on Shortbread and Linux with 1 and 2 CPUs.
DEBIAN_BUILD := $(BUILD)/debian
DEBIAN_BOOTS := debian-shortbread-1 debian-shortbread-2 debian-linux-1 debian-linux-2
.PHONY: $(DEBIAN_BOOTS)
$(DEBIAN_BOOTS): cpus = $(lastword $(subst -, ,$@))
debian-shortbread-1 debian-shortbread-2:
	CPUS=$(cpus) TIMEOUT=300 tools/run-cmd.sh $(DEBIAN_BUILD)/root /debian/t_debian
debian-linux-1 debian-linux-2:
	LINUX=1 CPUS=$(cpus) TIMEOUT=300 tools/run-cmd.sh $(DEBIAN_BUILD)/root /debian/t_debian
# Each Shortbread boot at once with one on Linux (tools/par.sh), as
# suite-test pairs them.
debian-test: deps user $(KERNEL) $(STUB)
	user/debian/build.sh $(DEBIAN_BUILD)
	tools/linux/kernel.sh $(LINUX_BUILD)
	@MAKE="$(MAKE)" tools/par.sh debian-shortbread-1 debian-linux-2
	@MAKE="$(MAKE)" tools/par.sh debian-shortbread-2 debian-linux-1

# Every network card model over QEMU user networking at 1 and 2 CPUs
# (tools/netcheck.sh, ~25 s a run, each bounded at 300 s: a 4 MB download
# checked by hash, a page served to the host, a link flap seen by the
# guest, /proc/net/dev's counts). NICS="e1000e" checks one model.
NICS ?= virtio-net-pci e1000 e1000e igb
net-check: deps $(KERNEL) $(STUB) user
	@s=0; for nic in $(NICS); do for c in 1 2; do ip=static; [ $$c = 2 ] && ip=dhcp; \
	  NIC=$$nic CPUS=$$c IPCONF=$$ip tools/netcheck.sh || s=1; done; done; exit $$s

# make test splits each card's CPU counts between the two network tests:
# a card runs net-check at one count and the two-guest wire test
# (wire-check, apps/apps.mk) at the other, so every card is seen at 1 and
# 2 CPUs, statically configured and by DHCP, in about the time of
# net-check alone. Then net-check-test checks make run NET=user once
# (tools/netusercheck.sh, as net-user-check below).
NET_CHECK_RUNS := virtio-net-pci:2 e1000:1 e1000e:2 igb:1
WIRE_CHECK_RUNS := virtio-net-pci:1 e1000:2 e1000e:1 igb:2
net-check-test: deps $(KERNEL) $(STUB) user apps
	@s=0; for r in $(NET_CHECK_RUNS); do c=$${r#*:}; ip=static; [ $$c = 2 ] && ip=dhcp; \
	  NIC=$${r%:*} CPUS=$$c IPCONF=$$ip tools/netcheck.sh || s=1; done; \
	  tools/netusercheck.sh $(APPS_BUILD) || s=1; exit $$s

# make run NET=user as a user meets it (tools/netusercheck.sh, one boot,
# bounded at 300 s, part of net-check-test): from the host, curl fetches
# a file from the guest's nginx (by SHA-256) and redis-cli SETs and GETs
# a value in its redis, through the two host forwards. NIC=, CPUS= as for run.
net-user-check: deps $(KERNEL) $(STUB) user apps
	NIC=$(NIC) CPUS=$(CPUS) tools/netusercheck.sh $(APPS_BUILD)

# Malformed and hostile frames on a guest's wire for a bounded time while it
# serves HTTP (tools/netinject; INJECT_SECONDS=15): the kernel stays up, the server answers,
# memory and goroutines come back. NIC= picks the card (virtio-net-pci).
net-inject: deps $(KERNEL) $(STUB) user
	go run ./tools/netinject -nic $(or $(NIC),virtio-net-pci) -cpus 2 -seconds $(or $(INJECT_SECONDS),15)

# redis, nginx, wrk (static musl, from Debian's sources) and mailbench.
include apps/apps.mk

# The HLL-tax report and the GC-headroom experiment (README: Measuring).
hlltax: deps $(KERNEL) $(STUB) $(INITRAMFS)
	tools/hlltax.sh

# Exact per-instruction counts from a QEMU TCG plugin, next to the samples.
hlltax-exact: deps $(KERNEL) $(STUB) $(INITRAMFS)
	BASELINE=1 tools/tcgcount/hlltax-exact.sh

gc-headroom: deps $(KERNEL) $(STUB) $(INITRAMFS)
	go run ./bench/gcheadroom

clean:
	rm -rf $(BUILD)

FORCE:
