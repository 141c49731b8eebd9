# Applications as static x86-64 musl binaries: redis, nginx, wrk from
# Debian bookworm source packages, and our mailbench (apps/README.md).
# Included by the top-level Makefile.
#   make apps          build what is missing or stale into build/apps
#   make apps-check    build, then run them on this host (apps/check.sh)
#   make apps-smoke    build, then check them inside Linux and inside
#                      Shortbread in QEMU (apps/smoke.sh; correctness
#                      only, short runs)
#   make bench-apps    the in-guest benchmark (bench/apps), Linux, 1 and
#                      2 CPUs, results in bench/results/
#   make bench-wire   the wire mode of bench/apps: a Linux client guest
#                      against a Shortbread and then a Linux server guest,
#                      two QEMUs on one socket netdev (WIRE_NIC=virtio-net-pci,
#                      WIRE_CPUS=1,2, WIRE_REPS=3); bench/results/wire-DATE.{md,json}
#   make bench-allocs  kernel heap objects and bytes allocated per request
#                      of redis, nginx and mail on Shortbread at 1 CPU
#                      (bench/allocs/run.sh; counts, not times)
#   make leak-soak     mail and redis rounds on tmpfs in one Shortbread
#                      guest for MINUTES (30), free memory and kernel heap
#                      sampled each round, plotted in bench/results/

APPS_BUILD := $(or $(BUILD),build)/apps

.PHONY: apps apps-check apps-smoke wire-check wire-test bench-apps bench-wire bench-allocs hlltax-app leak-soak

# apps/build.sh decides what to rebuild (stamps), so this always runs it.
apps:
	OUTDIR=$(APPS_BUILD) apps/build.sh

apps-check: apps
	apps/check.sh $(APPS_BUILD)

apps-smoke: apps user $(KERNEL) $(STUB)
	tools/linux/kernel.sh $(LINUX_BUILD)
	KERNEL=linux apps/smoke.sh $(APPS_BUILD)
	KERNEL=shortbread CPUS=2 apps/smoke.sh $(APPS_BUILD)

# Shortbread and Linux on one wire (tools/wiretest.sh), each the other's
# client (ping, files by hash, redis-benchmark, wrk). make test runs every
# card once (WIRE_CHECK_RUNS in the Makefile: card:CPUs, the CPU counts
# net-check-test does not use); wire-test every card at 1 and 2 CPUs
# (about 10 minutes).
wire-check: apps user $(KERNEL) $(STUB)
	tools/linux/kernel.sh $(LINUX_BUILD)
	@s=0; for r in $(WIRE_CHECK_RUNS); do \
	  NIC=$${r%:*} CPUS=$${r#*:} tools/wiretest.sh $(APPS_BUILD) || s=1; done; exit $$s

wire-test: apps user $(KERNEL) $(STUB)
	tools/linux/kernel.sh $(LINUX_BUILD)
	@s=0; for nic in $(NICS); do for c in 1 2; do \
	  NIC=$$nic CPUS=$$c tools/wiretest.sh $(APPS_BUILD) || s=1; done; done; exit $$s

bench-apps: apps user
	tools/linux/kernel.sh $(LINUX_BUILD)
	go run ./bench/apps -apps $(APPS_BUILD)

# Not in make test: a benchmark, a few minutes per pair of boots.
WIRE_NIC ?= virtio-net-pci
WIRE_CPUS ?= 1,2
WIRE_REPS ?= 3
bench-wire: apps user $(KERNEL) $(STUB)
	tools/linux/kernel.sh $(LINUX_BUILD)
	go run ./bench/apps -mode wire -kernels shortbread,linux -nic $(WIRE_NIC) \
	  -cpus $(WIRE_CPUS) -reps $(WIRE_REPS) -apps $(APPS_BUILD)

# The HLL-tax table of one real workload: make hlltax-app WORKLOAD=redis|nginx|mail
hlltax-app: apps user $(KERNEL) $(STUB)
	tools/hlltax-apps.sh $(or $(WORKLOAD),redis) $(APPS_BUILD)

bench-allocs: apps user $(KERNEL) $(STUB)
	bench/allocs/run.sh $(APPS_BUILD)

leak-soak: apps user $(KERNEL) $(STUB)
	go run ./bench/leaksoak -minutes $(or $(MINUTES),30) -apps $(APPS_BUILD)
