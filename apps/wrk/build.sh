#!/bin/sh
# Builds the wrk HTTP load generator as a static x86-64 musl binary from
# Debian's source packages wrk (4.1), luajit (2.1) and openssl (3.0), all
# with Debian's patches applied, with musl-gcc: the client for measuring
# nginx on Shortbread.
#
# usage: apps/wrk/build.sh OUTDIR   -> OUTDIR/wrk (stripped), wrk.stamp,
#                                      wrk.version, wrk.log
#        apps/wrk/build.sh --stamp  prints the cache key (the three source
#                                   versions + recipe hash), fetches nothing
#
# How, and why:
# - wrk links LuaJIT and OpenSSL (its ssl.c is always compiled), so both
#   are built first as static musl libraries, the way Debian's wrk package
#   uses them (WITH_LUAJIT/WITH_OPENSSL, luajit.pc through pkg-config).
# - LuaJIT: `make amalg BUILDMODE=static` with XCFLAGS=-DLUAJIT_NO_UNWIND
#   (a documented LuaJIT build option: Lua errors unwind with LuaJIT's own
#   mechanism instead of the C++/DWARF unwinder). Otherwise the binary needs
#   libgcc_eh.a, and Debian's (built for glibc) calls _dl_find_object,
#   which musl does not have: the link fails. PREFIX=/usr as in Debian, so
#   no build path ends up in package.path.
# - OpenSSL: `Configure linux-x86_64 no-shared no-dso no-engine no-module
#   no-async no-tests` (static libraries only; nothing to load at run time;
#   musl has no makecontext for ASYNC). crypto/mem_sec.c includes
#   <linux/mman.h>, so the linux-libc-dev UAPI headers go after musl's
#   (-idirafter, as in user/busybox/build.sh).
# - wrk loads its own Lua half (src/wrk.lua, compiled to bytecode in
#   obj/bytecode.o) with `require "wrk"`, which LuaJIT resolves with
#   dlsym(); musl's static dlsym always fails, and wrk would panic at start
#   ("attempt to index a nil value"). apps/wrk/dlsym.c, linked ahead of
#   libc.a through LDFLAGS, answers for that one symbol. wrk's sources are
#   not changed.
# - `luajit -b` (the Makefile step for bytecode.o) runs a second LuaJIT,
#   a host tool built from the same source with gcc and
#   -DLUAJIT_SECURITY_PRNG=0: its string hash seed is then fixed, so the
#   order of table constants in the bytecode, and with it the wrk binary,
#   is the same on every build (with the default random seed it is not).
#   The LuaJIT linked into wrk keeps Debian's default security settings.
set -eu
APP=wrk
. "$(dirname "$0")/../lib.sh"
here=$root/apps/wrk

stamp() {
  echo "wrk-source=$(src_version wrk) luajit-source=$(src_version luajit) openssl-source=$(src_version openssl) recipe=$(script_hash "$here/build.sh" "$here/dlsym.c" "$root/apps/lib.sh")"
}

[ $# -eq 1 ] || { echo "usage: $0 OUTDIR | --stamp" >&2; exit 2; }
begin_build "$1" musl-tools dpkg-dev make gcc libc6-dev linux-libc-dev perl pkg-config file binutils
echo "wrk: apt-get source wrk luajit openssl ($key)"
wrk=$(fetch_source wrk "$tmp/src")
luajit=$(fetch_source luajit "$tmp/src")
openssl=$(fetch_source openssl "$tmp/src")
source_epoch "$wrk"
wrkver=$(dpkg-parsechangelog -l "$wrk/debian/changelog" -SVersion)
stage=$tmp/stage
uapi_headers "$tmp/uapi"

echo "wrk: building LuaJIT with musl-gcc (log: $LOG)"
cp -a "$luajit" "$tmp/luajit-host"
run luajit-make nice make -C "$luajit" -j2 amalg HOST_CC=gcc CC=musl-gcc \
  BUILDMODE=static XCFLAGS=-DLUAJIT_NO_UNWIND PREFIX=/usr Q= E=@:
run luajit-install make -C "$luajit" install PREFIX=/usr DESTDIR="$stage" \
  BUILDMODE=static Q= E=@:
run luajit-host-tool nice make -C "$tmp/luajit-host" -j2 HOST_CC=gcc CC=gcc \
  BUILDMODE=static XCFLAGS=-DLUAJIT_SECURITY_PRNG=0 PREFIX=/usr Q= E=@:
mkdir "$tmp/bin"
ln -s "$tmp/luajit-host/src/luajit" "$tmp/bin/luajit"

echo "wrk: building OpenSSL with musl-gcc"
cd "$openssl"
run openssl-configure ./Configure linux-x86_64 no-shared no-dso no-engine \
  no-module no-async no-tests --prefix=/usr --openssldir=/usr/lib/ssl \
  --libdir=lib CC=musl-gcc "-idirafter $tmp/uapi"
run openssl-make nice make -j2 build_libs
run openssl-install make install_dev DESTDIR="$stage"

echo "wrk: building wrk with musl-gcc"
run dlsym-shim musl-gcc -O2 -Wall -c -o "$tmp/dlsym.o" "$here/dlsym.c"
cd "$wrk"
run make env PATH="$tmp/bin:$PATH" LUA_PATH="$tmp/luajit-host/src/?.lua;;" \
  PKG_CONFIG_LIBDIR="$stage/usr/lib/pkgconfig" PKG_CONFIG_SYSROOT_DIR="$stage" \
  LDFLAGS="-static $tmp/dlsym.o" \
  nice make -j2 CC=musl-gcc WITH_LUAJIT="$stage/usr" \
  WITH_OPENSSL="$stage/usr" VER="debian/$wrkver"

check_static wrk
strip -o "$out/wrk.tmp" wrk
mv "$out/wrk.tmp" "$out/wrk"
# wrk --version prints its usage and exits 1; the line must name the
# version. Its Lua half loads before the first connection, so a refused
# one proves the embedded script loaded (a broken require panics instead).
"$out/wrk" --version >>"$LOG" 2>&1 || true
grep -q "^wrk debian/$wrkver " "$LOG" ||
  die "wrk --version does not print debian/$wrkver, see $LOG"
"$out/wrk" -t1 -c1 -d1s http://127.0.0.1:1/ >>"$LOG" 2>&1 || true
tail -n 1 "$LOG" | grep -q "unable to connect" ||
  die "wrk does not start (Lua script), see $LOG"
sort "$tmp/src/.versions" >"$out/wrk.version"
echo "$key" >"$out/wrk.stamp"
echo "wrk: $out/wrk ($(stat -c %s "$out/wrk") bytes); $(tr '\n' ' ' <"$out/wrk.version")$(( $(date +%s) - start )) s"
