#!/bin/sh
# Lays out the apps and their data as a directory tree to merge over the
# user initramfs (tools/run-cmd.sh EXTRA_DIR), for in-guest benchmarks
# (bench/apps) and the smoke test (apps/smoke.sh):
#   usr/bin/            redis-server redis-cli redis-benchmark nginx wrk
#                       mailbench mail-enqueue mail-qman mail-deliver
#   etc/nginx/nginx.conf                 apps/nginx/nginx.conf
#   etc/nginx/nginx-workers.conf         the same with a master and a worker per CPU
#   usr/share/nginx/html/index.html      a short page
#   usr/share/nginx/html/1k.bin, 64k.bin 1024 and 65536 bytes of text
#                                        (fixed content, so tests can
#                                        compare hashes)
#
# usage: apps/stage.sh APPS_OUTDIR STAGE_DIR
set -eu
[ $# -eq 2 ] || { echo "usage: $0 APPS_OUTDIR STAGE_DIR" >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
out=$1 stage=$2
mkdir -p "$stage/usr/bin" "$stage/etc/nginx" "$stage/usr/share/nginx/html"
for b in redis-server redis-cli redis-benchmark nginx wrk mailbench mail-enqueue mail-qman mail-deliver; do
  [ -x "$out/$b" ] || { echo "stage: $out/$b missing (make apps)" >&2; exit 1; }
  cp "$out/$b" "$stage/usr/bin/$b"
done
cp "$here/nginx/nginx.conf" "$stage/etc/nginx/nginx.conf"
# nginx as it usually runs: a master process and one worker per CPU
# (bench/apps' nginx/workers-* cases).
sed -e 's/^master_process off;.*/master_process on;     # a master, and workers it forks/' \
    -e 's/^worker_processes 1;/worker_processes auto;  # one per CPU/' \
    "$here/nginx/nginx.conf" >"$stage/etc/nginx/nginx-workers.conf"
grep -q '^master_process on;' "$stage/etc/nginx/nginx-workers.conf" &&
  grep -q '^worker_processes auto;' "$stage/etc/nginx/nginx-workers.conf" ||
  { echo "stage: apps/nginx/nginx.conf no longer has the lines nginx-workers.conf changes" >&2; exit 1; }
html=$stage/usr/share/nginx/html
echo '<html><body>shortbread</body></html>' >"$html/index.html"
# numbered lines, so a misplaced or repeated block changes the bytes
i=0
while [ $i -lt 2000 ]; do
  printf 'shortbread line %05d ..........................................\n' $i
  i=$((i + 1))
done >"$stage/lines.tmp"
head -c 1024 "$stage/lines.tmp" >"$html/1k.bin"
head -c 65536 "$stage/lines.tmp" >"$html/64k.bin"
rm "$stage/lines.tmp"
