#!/bin/sh
# Builds nginx as a static x86-64 musl binary from Debian's nginx source
# package (1.22, Debian's patches applied), with musl-gcc: a static-file
# web server to measure Shortbread with (wrk as the client).
#
# usage: apps/nginx/build.sh OUTDIR   -> OUTDIR/nginx (stripped),
#                                        OUTDIR/nginx.conf (the sample from
#                                        apps/nginx/), nginx.stamp,
#                                        nginx.version, nginx.log
#        apps/nginx/build.sh --stamp  prints the cache key (source version +
#                                     recipe hash), fetches nothing
#
# Only what static-file serving needs is built, without external
# libraries: no SSL, no PCRE (--without-pcre, so no rewrite module), no
# zlib (no gzip module), no auth_basic (it needs crypt(), which Debian's
# musl lacks), no FastCGI/uwsgi/SCGI, no cache. Keep-alive, sendfile,
# access logs, index, autoindex and proxying remain.
# Source changes: none to nginx's files. nginx's ngx_linux_config.h
# includes <crypt.h> unconditionally and Debian's musl has none, so
# apps/nginx/crypt.h (a declaration only; nothing calls crypt() once
# auth_basic is out) is copied into the generated objs/ directory, which is
# on nginx's include path.
# Compiled-in paths suit a small initramfs: configuration
# /etc/nginx/nginx.conf, errors to stderr, everything written (pid, lock,
# access log, temporary files) directly under /tmp, which needs no
# directories made first; user and group default to root (no nobody
# account needed). apps/nginx/nginx.conf is a matching sample.
# Reproducible: no time stamps or build paths end up in the binary.
set -eu
APP=nginx
. "$(dirname "$0")/../lib.sh"
here=$root/apps/nginx

stamp() {
  echo "nginx-source=$(src_version nginx) recipe=$(script_hash "$here/build.sh" "$here/crypt.h" "$here/nginx.conf" "$root/apps/lib.sh")"
}

[ $# -eq 1 ] || { echo "usage: $0 OUTDIR | --stamp" >&2; exit 2; }
begin_build "$1" musl-tools dpkg-dev make gcc libc6-dev file binutils
echo "nginx: apt-get source nginx ($key)"
src=$(fetch_source nginx "$tmp/src")
source_epoch "$src"

cd "$src"
run configure ./configure \
  --with-cc=musl-gcc --with-cc-opt=-O2 --with-ld-opt=-static \
  --prefix=/usr/share/nginx --sbin-path=/usr/sbin/nginx \
  --modules-path=/usr/lib/nginx/modules \
  --conf-path=/etc/nginx/nginx.conf --error-log-path=stderr \
  --http-log-path=/tmp/nginx-access.log --pid-path=/tmp/nginx.pid \
  --lock-path=/tmp/nginx.lock \
  --http-client-body-temp-path=/tmp/nginx-client-body \
  --http-proxy-temp-path=/tmp/nginx-proxy \
  --user=root --group=root \
  --without-pcre --without-http_rewrite_module \
  --without-http_gzip_module --without-http_auth_basic_module \
  --without-http_fastcgi_module --without-http_uwsgi_module \
  --without-http_scgi_module --without-http-cache
cp "$here/crypt.h" objs/crypt.h
echo "nginx: building with musl-gcc (log: $LOG)"
run make nice make -j2

check_static objs/nginx
strip -o "$out/nginx.tmp" objs/nginx
mv "$out/nginx.tmp" "$out/nginx"
cp "$here/nginx.conf" "$out/nginx.conf"
run version "$out/nginx" -V
# nginx -t creates the temporary directories: keep them in $tmp
sed "s|/tmp/nginx|$tmp/nginx|g" "$here/nginx.conf" >"$tmp/test.conf"
run config-test "$out/nginx" -t -p "$tmp" -c "$tmp/test.conf"
sed -n 's/^nginx //p' "$tmp/src/.versions" >"$out/nginx.version"
echo "$key" >"$out/nginx.stamp"
echo "nginx: $out/nginx ($(stat -c %s "$out/nginx") bytes); $(cat "$out/nginx.version"), $(( $(date +%s) - start )) s"
