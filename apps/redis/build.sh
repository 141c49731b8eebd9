#!/bin/sh
# Builds redis-server, redis-cli and redis-benchmark as static x86-64 musl
# binaries from Debian's redis source package (7.0, Debian's patches
# applied), with musl-gcc: the server and load generator Shortbread is
# measured with.
#
# usage: apps/redis/build.sh OUTDIR   -> OUTDIR/redis-server, redis-cli,
#                                        redis-benchmark (stripped), plus
#                                        redis.stamp, redis.version, redis.log
#        apps/redis/build.sh --stamp  prints the cache key (source version +
#                                     recipe hash), fetches nothing
#
# Build choices: MALLOC=libc (Debian builds against its system jemalloc;
# the bundled one is not needed and musl's malloc is enough here),
# BUILD_TLS=no, USE_SYSTEMD=no, LDFLAGS=-static. The bundled deps (hiredis,
# lua, linenoise, hdr_histogram) build unchanged with musl-gcc.
# Reproducible: mkreleasehdr.sh takes the build id from SOURCE_DATE_EPOCH
# (debian/changelog) and there is no git tree, so the sha reads 00000000.
set -eu
APP=redis
. "$(dirname "$0")/../lib.sh"
here=$root/apps/redis

stamp() {
  echo "redis-source=$(src_version redis) recipe=$(script_hash "$here/build.sh" "$root/apps/lib.sh")"
}

[ $# -eq 1 ] || { echo "usage: $0 OUTDIR | --stamp" >&2; exit 2; }
begin_build "$1" musl-tools dpkg-dev make gcc libc6-dev file binutils
echo "redis: apt-get source redis ($key)"
src=$(fetch_source redis "$tmp/src")
source_epoch "$src"

echo "redis: building with musl-gcc (log: $LOG)"
run make nice make -C "$src" -j2 V=1 CC=musl-gcc MALLOC=libc BUILD_TLS=no \
  USE_SYSTEMD=no LDFLAGS=-static

for b in redis-server redis-cli redis-benchmark; do
  check_static "$src/src/$b"
  strip -o "$out/$b.tmp" "$src/src/$b"
  mv "$out/$b.tmp" "$out/$b"
done
run version "$out/redis-server" --version
sed -n 's/^redis //p' "$tmp/src/.versions" >"$out/redis.version"
echo "$key" >"$out/redis.stamp"
echo "redis: $out/redis-server ($(stat -c %s "$out/redis-server") bytes), redis-cli, redis-benchmark; $(cat "$out/redis.version"), $(( $(date +%s) - start )) s"
