#!/bin/sh
# Builds the applications Shortbread is measured with, as static x86-64
# musl binaries from Debian bookworm source packages (apps/README.md).
#
# usage: apps/build.sh [APP...]     APP: redis nginx wrk mailbench (default: all)
#        OUTDIR=dir apps/build.sh   output directory (default build/apps)
#
# Each app is rebuilt only when its stamp changed: OUTDIR/APP.stamp holds
# the Debian source version(s) and a hash of the recipe (apps/APP/*,
# apps/lib.sh); `apps/APP/build.sh --stamp` prints the one a build would
# have now.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
out=${OUTDIR:-$root/build/apps}
all="redis nginx wrk mailbench"
[ $# -gt 0 ] || set -- $all

# what each app must leave in OUTDIR
outputs() {
  case $1 in
    redis) echo redis-server redis-cli redis-benchmark ;;
    nginx) echo nginx ;;
    wrk) echo wrk ;;
    mailbench) echo mailbench mail-enqueue mail-qman mail-deliver ;;
  esac
}

for app in "$@"; do
  case " $all " in
    *" $app "*) ;;
    *) echo "apps: unknown app '$app' (known: $all)" >&2; exit 2 ;;
  esac
done

mkdir -p "$out"
# One build of OUTDIR at a time: make test starts one in the background
# (tools/prebuild.sh), and a second waits for it, then finds it done.
if [ -z "${SB_APPS_LOCKED:-}" ]; then
  flock -n "$out/.build.lock" true || echo "apps: waiting for the build already running (see prebuild.log)"
  SB_APPS_LOCKED=1 exec flock "$out/.build.lock" "$0" "$@"
fi
for app in "$@"; do
  want=$("$here/$app/build.sh" --stamp)
  have=yes
  for f in $(outputs "$app"); do
    [ -x "$out/$f" ] || have=
  done
  if [ -n "$have" ] && [ "$(cat "$out/$app.stamp" 2>/dev/null)" = "$want" ]; then
    echo "$app: cached ($want)"
  else
    "$here/$app/build.sh" "$out"
  fi
done
