"""Summarize bench/mailio/run.sh output: per kernel and CPU count, the
median (and range) of messages/s, and the median device writes and
flushes per accepted message (/proc/diskstats: field 5 is writes
completed, field 16 flushes completed)."""
import re
import statistics as st
import sys

runs, cur, before, msgs, rate = {}, None, None, 0, 0.0
for line in open(sys.argv[1]):
    m = re.match(r'== (\S+) cpus=(\d+) rep=\d+ \S+ load (\S+)', line)
    if m:
        cur, before = (m.group(1).split('/')[-1], int(m.group(2))), None
        continue
    m = re.search(r'accepted=(\d+).*msgs_per_s=(\S+)', line)
    if m:
        msgs, rate = int(m.group(1)), float(m.group(2))
        continue
    if ' vda ' in line:
        v = list(map(int, line.split()[3:]))
        if before is None:
            before = v
        elif msgs:
            runs.setdefault(cur, []).append((rate, (v[4] - before[4]) / msgs, (v[15] - before[15]) / msgs))
print('| kernel | CPUs | boots | messages/s median (range) | writes/message | flushes/message |')
print('|---|---:|---:|---:|---:|---:|')
for (k, c), v in sorted(runs.items(), key=lambda kv: (kv[0][1], kv[0][0])):
    r = [x[0] for x in v]
    print('| %s | %d | %d | %.1f (%.1f-%.1f) | %.1f | %.1f |' % (
        k, c, len(v), st.median(r), min(r), max(r), st.median([x[1] for x in v]), st.median([x[2] for x in v])))
