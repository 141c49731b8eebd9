#!/bin/sh
# Runs make targets at once, each with its own log, for make test's
# independent guests: two one-CPU QEMUs use the two cores of CI's
# machine that one leaves half idle. Nothing is interleaved: when all
# have ended, each target's log is printed whole, in the order given,
# framed by its name, and a last line per target says whether it passed,
# how long it took and where its log is; the status is 0 iff all passed.
# A target run here must not depend on another's timing or files: each
# gets its own disk images (Makefile: SUITE_DIR).
#
# usage: tools/par.sh JOB... (make is $MAKE, with the caller's flags)
#   JOB is a target, or targets joined by commas that one make runs in
#   turn (suite-linux-2,nvme-linux-2). Logs: build/par/JOB.log.
set -u
[ $# -gt 0 ] || { echo "usage: $0 TARGET..." >&2; exit 2; }
dir=build/par
mkdir -p "$dir"
pids=
# Interrupted: every job goes, with its make, scripts and QEMU.
trap 'for p in $pids; do kill -TERM "-$p" 2>/dev/null; done; exit 130' INT TERM
for t in "$@"; do
  rm -f "$dir/$t.log" "$dir/$t.status"
  # Each job in a session of its own: its process group is its pid.
  setsid sh -c '
    start=$(date +%s)
    ${MAKE:-make} --no-print-directory $(echo "$1" | tr , " ") > "$2.log" 2>&1
    echo "$? $(( $(date +%s) - start ))" > "$2.status"' sh "$t" "$dir/$t" &
  pids="$pids $!"
done
wait
status=0
summary=
for t in "$@"; do
  echo "==== $t (log $dir/$t.log) ===="
  cat "$dir/$t.log"
  read -r s secs < "$dir/$t.status" 2>/dev/null || { s=1 secs=?; }
  if [ "$s" = 0 ]; then
    summary="$summary
par: $t passed in $secs s"
  else
    summary="$summary
par: $t FAILED (status $s) after $secs s; its log is above, under '==== $t', and in $dir/$t.log"
    status=1
  fi
done
echo "$summary" | sed 1d
exit $status
