#!/bin/sh
# make test's head start: builds the user programs and then the
# applications in the background at the lowest priority, so that the
# compilers run on the core a one-CPU guest leaves idle instead of in
# front of the tests (on a fresh clone they take about 13 minutes of a
# 2-core machine: busybox, redis, nginx, wrk with OpenSSL and LuaJIT).
#
# usage: tools/prebuild.sh USER_OUTDIR APPS_OUTDIR
#
# user/build.sh and apps/build.sh each hold a lock (flock) while they run,
# so a target that needs them waits for this build and then finds it
# done by its stamps; if this build failed, the target builds again in
# the foreground and shows why. The background log is BUILD/prebuild.log.
# Everything that installs packages or runs apt-get update (the stamps)
# runs here in the foreground, so that apt is never used from two places
# at once.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
[ $# -eq 2 ] || { echo "usage: $0 USER_OUTDIR APPS_OUTDIR" >&2; exit 2; }
user=$1 apps=$2
"$root/tools/deps.sh" util-linux
"$root/user/busybox/build.sh" --stamp >/dev/null
for app in redis nginx wrk mailbench; do
  "$root/apps/$app/build.sh" --stamp >/dev/null
done
mkdir -p "$user" "$apps"
log=$(cd "$user/.." && pwd)/prebuild.log
echo "prebuild: building $user and $apps in the background (log: $log)"
setsid nohup nice -n 19 sh -c '
  "$1/user/build.sh" "$2" && OUTDIR="$3" "$1/apps/build.sh"' sh "$root" "$user" "$apps" \
  >"$log" 2>&1 </dev/null &
