#!/bin/sh
# Debian's own dynamically linked programs for `make debian-test`: bash,
# coreutils programs, python3.11 (python3-minimal's interpreter and
# standard library), redis 7.0 (redis-tools' programs; redis-server is
# the link to redis-check-rdb that Debian's redis-server package makes),
# the libraries they need and glibc's dynamic loader,
# unchanged, from the Debian archive (`apt-get download`; the .deb files
# are kept, so later builds need no network), plus the test that runs
# them (t_debian, static musl like the rest of the suite).
#
# usage: user/debian/build.sh OUTDIR
#
#   OUTDIR/debs/*.deb   the packages as downloaded (cache)
#   OUTDIR/root/        the tree tools/run-cmd.sh merges into the test
#                       initramfs: /debian/bin/{bash,ls,...},
#                       /lib/x86_64-linux-gnu/{ld-linux-x86-64.so.2,lib*.so.*},
#                       /lib64/ld-linux-x86-64.so.2 -> the loader (as
#                       Debian has it), /usr/bin/python3.11 and
#                       /usr/lib/python3.11 (where Debian puts them: Python
#                       finds its library from its own path),
#                       /usr/bin/redis-{server,cli,check-rdb},
#                       /debian/t_debian
#
# The default test initramfs does not carry these (about 33 MB): only the
# dedicated boots of `make debian-test` do. Needs apt-get, dpkg-deb,
# readelf (binutils), musl-gcc.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
[ $# -eq 1 ] || { echo "usage: $0 OUTDIR" >&2; exit 2; }
mkdir -p "$1"
out=$(cd "$1" && pwd)
"$root/tools/deps.sh" musl-tools binutils dpkg file

# Packages: the programs' own and every library package they need.
packages="bash coreutils libc6 libtinfo6 libselinux1 libpcre2-8-0 libacl1 libattr1 libgmp10
  python3.11-minimal libpython3.11-minimal libexpat1 zlib1g
  redis-tools libatomic1 libjemalloc2 liblzf1 libssl3 libsystemd0 libcap2 libgcrypt20 liblz4-1
  liblzma5 libzstd1 libgpg-error0 libgcc-s1 libstdc++6"
# coreutils programs the test uses.
progs="ls cat sort wc sha256sum md5sum cp mv rm ln mkdir touch date stat head tail tr uniq cut seq env id printf basename dirname readlink expr tee sleep true echo"

mkdir -p "$out/debs"
missing=
for p in $packages; do
  v=$(apt-cache policy "$p" | sed -n 's/^  Candidate: //p' | sed 's/^[0-9]*://')
  [ -n "$v" ] || { echo "debian: no candidate version of $p (apt-get update?)" >&2; exit 1; }
  ls "$out/debs/${p}_"*"${v}_"*.deb >/dev/null 2>&1 || missing="$missing $p"
done
if [ -n "$missing" ]; then
  echo "debian: apt-get download$missing"
  (cd "$out/debs" && apt-get download $missing 2>&1 | grep -v '^W: Download is performed unsandboxed' || true)
fi

x=$out/extract
rm -rf "$x" "$out/root"
mkdir -p "$x"
for p in $packages; do
  deb=$(ls -t "$out/debs/${p}_"*.deb | head -1)
  dpkg-deb -x "$deb" "$x"
done

r=$out/root
libdir=$r/lib/x86_64-linux-gnu
mkdir -p "$r/debian/bin" "$libdir" "$r/lib64"
cp "$x/bin/bash" "$r/debian/bin/"
for p in $progs; do
  for d in bin usr/bin; do
    if [ -f "$x/$d/$p" ]; then cp "$x/$d/$p" "$r/debian/bin/"; break; fi
  done
  [ -f "$r/debian/bin/$p" ] || { echo "debian: no $p in coreutils" >&2; exit 1; }
done
# Python: the interpreter and its standard library without the two
# extension modules that need OpenSSL (hashlib falls back to its own
# digests without _hashlib).
mkdir -p "$r/usr/bin" "$r/usr/lib"
cp "$x/usr/bin/python3.11" "$r/usr/bin/"
cp -a "$x/usr/lib/python3.11" "$r/usr/lib/"
rm -f "$r"/usr/lib/python3.11/lib-dynload/_ssl.* "$r"/usr/lib/python3.11/lib-dynload/_hashlib.*
# redis: the server is redis-check-rdb under another name (argv[0]).
cp "$x/usr/bin/redis-check-rdb" "$x/usr/bin/redis-cli" "$r/usr/bin/"
ln -s redis-check-rdb "$r/usr/bin/redis-server"
extra="$r/usr/bin/python3.11 $r/usr/bin/redis-check-rdb $r/usr/bin/redis-cli"
# The loader where PT_INTERP names it (/lib64 is a symbolic link there,
# as on Debian), and each program's libraries by DT_NEEDED, recursively.
cp -L "$x/lib64/ld-linux-x86-64.so.2" "$libdir/ld-linux-x86-64.so.2"
ln -s ../lib/x86_64-linux-gnu/ld-linux-x86-64.so.2 "$r/lib64/ld-linux-x86-64.so.2"
needed() { readelf -d "$1" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'; }
todo=$(for f in "$r"/debian/bin/* $extra; do needed "$f"; done | sort -u)
while [ -n "$todo" ]; do
  next=
  for lib in $todo; do
    [ -f "$libdir/$lib" ] && continue
    src=
    for d in lib/x86_64-linux-gnu usr/lib/x86_64-linux-gnu; do
      [ -e "$x/$d/$lib" ] && src=$x/$d/$lib && break
    done
    [ -n "$src" ] || { echo "debian: $lib not found in the packages" >&2; exit 1; }
    cp -L "$src" "$libdir/$lib"
    next="$next $(needed "$libdir/$lib")"
  done
  todo=$(echo $next | tr ' ' '\n' | sort -u)
done
for f in "$r"/debian/bin/* $extra; do
  case $(file -b "$f") in
    *ELF\ 64-bit*x86-64*dynamically\ linked*interpreter\ /lib64/ld-linux-x86-64.so.2*) ;;
    *) echo "debian: $f is not a dynamically linked x86-64 program" >&2; exit 1 ;;
  esac
done

musl-gcc -static -O2 -Wall -Werror -I"$root/user/tests" -o "$r/debian/t_debian" "$here/t_debian.c"
echo "debian: $(ls "$r/debian/bin" | wc -l) programs, $(ls "$libdir" | wc -l) libraries, $(du -sk "$r" | cut -f1) KiB ($(cd "$out/debs" && ls | tr '\n' ' '))"
