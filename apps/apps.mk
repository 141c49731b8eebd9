# Applications as static x86-64 musl binaries built from Debian bookworm
# source packages: redis, nginx, wrk (apps/README.md). Included by the
# top-level Makefile.
#   make apps          build what is missing or stale into build/apps
#   make apps-check    build, then run them on this host (apps/check.sh)

APPS_BUILD := $(or $(BUILD),build)/apps

.PHONY: apps apps-check

# apps/build.sh decides what to rebuild (stamps), so this always runs it.
apps:
	OUTDIR=$(APPS_BUILD) apps/build.sh

apps-check: apps
	apps/check.sh $(APPS_BUILD)
