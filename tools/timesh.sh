#!/bin/sh
# make's shell under `make TIMES=1 ...` (Makefile): runs each recipe line
# as /bin/sh would, then prints how long it took, with its target and the
# host's load, to stderr and to build/times.log (appended; TIMES_LOG=FILE
# for another), e.g.
#   times: cpu-test 14.2 s, cpu 20.5 s (status 0, load 1.9): CPU=qemu64 tools/boottest.sh 2
# which is how the slow parts of make test are found: the host is shared,
# so compare a line with its neighbours (proportions), not across runs.
# "cpu" is the processor time the line's processes used (QEMU's included):
# near its wall time, the line keeps one core busy; near twice, both.
# usage (by make): tools/timesh.sh TARGET -c 'COMMAND'
target=$1
shift
start=$(date +%s.%N)
/bin/sh "$@"
s=$?
end=$(date +%s.%N)
# the second line of `times` (run in this shell, not a subshell): the
# children's user and system time
tf=$(mktemp)
times > "$tf"
cpu=$(sed -n 2p "$tf" | awk '{ t = 0; for (i = 1; i <= 2; i++) { split($i, a, "m"); t += a[1] * 60 + a[2] } printf "%.1f", t }')
rm -f "$tf"
load=$(cut -d' ' -f1 /proc/loadavg)
cmd=$(printf '%s\n' "$2" | sed -n '1{s/^[[:space:]]*//;p;}' | cut -c1-110)
msg=$(awk -v a="$start" -v b="$end" -v t="$target" -v s="$s" -v l="$load" -v c="$cmd" -v u="$cpu" \
  'BEGIN { printf "times: %s %.1f s, cpu %s s (status %d, load %s): %s", t, b - a, u, s, l, c }')
echo "$msg" >&2
log=${TIMES_LOG:-build/times.log}
mkdir -p "$(dirname "$log")" && echo "$(date -u +%H:%M:%S) $msg" >> "$log"
exit $s
