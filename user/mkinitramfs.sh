#!/bin/sh
# Assembles the test initramfs: a newc cpio archive, every file owned by root.
#
# usage: user/mkinitramfs.sh [--gzip] [--runner PATH] [--interactive]
#                            OUT.cpio BUSYBOX TESTDIR [EXTRA_DIR]
#
#   /init            the runner (--runner PATH, default TESTDIR/../runner)
#   /bin/busybox     BUSYBOX, with a symlink for every applet at the path
#                    busybox names (/bin/sh, /bin/ls, /sbin/init, /usr/bin/...)
#   /tests/          every file of TESTDIR (t_* are run, h_* are helpers)
#   /etc/            passwd, group (root), hostname, inittab (for busybox init)
#   /proc /sys /dev /tmp /root /mnt /var  empty mount points
#   EXTRA_DIR        merged over all that last, if given
#
# --gzip         compress with gzip -9 (Linux and GRUB both take either)
# --interactive  the interactive variant: /init is busybox's init (a shell on
#                the console, mounts from /etc/inittab) and the runner is
#                /bin/runner. The test image can also be used interactively
#                without rebuilding: boot Linux with rdinit=/sbin/init (or
#                Shortbread with init=/sbin/init).
#
# The archive is reproducible (sorted names, fixed times, --reproducible).
# No device nodes are included: Linux's built-in initramfs provides
# /dev/console, devtmpfs the rest.
#
# Needs (installed when missing): cpio gzip coreutils findutils.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)

gzip=0 interactive=0 runner=
while [ $# -gt 0 ]; do
  case $1 in
    --gzip|-z) gzip=1; shift ;;
    --interactive) interactive=1; shift ;;
    --runner) runner=$2; shift 2 ;;
    --) shift; break ;;
    -*) echo "mkinitramfs: unknown option $1" >&2; exit 2 ;;
    *) break ;;
  esac
done
if [ $# -lt 3 ] || [ $# -gt 4 ]; then
  echo "usage: $0 [--gzip] [--runner PATH] [--interactive] OUT.cpio BUSYBOX TESTDIR [EXTRA_DIR]" >&2
  exit 2
fi
out=$1 busybox=$2 testdir=$3 extra=${4:-}
[ -n "$runner" ] || runner=$testdir/../runner
for f in "$busybox" "$runner"; do
  [ -f "$f" ] && [ -x "$f" ] || { echo "mkinitramfs: $f is not an executable file" >&2; exit 1; }
done
[ -d "$testdir" ] || { echo "mkinitramfs: $testdir is not a directory" >&2; exit 1; }
[ -z "$extra" ] || [ -d "$extra" ] || { echo "mkinitramfs: $extra is not a directory" >&2; exit 1; }
"$root/tools/deps.sh" cpio gzip coreutils findutils

stage=$(mktemp -d /tmp/sb-initramfs.XXXXXX)
trap 'rm -rf "$stage"' EXIT
chmod 0755 "$stage"
cd "$stage"
mkdir -p bin sbin usr/bin usr/sbin etc proc sys dev tmp root mnt var tests
chmod 1777 tmp
chmod 0700 root

install -m 0755 "$busybox" bin/busybox
# Applet links where busybox wants them (--list-full prints bin/ls,
# usr/bin/awk, sbin/init, ...; entries without a directory are skipped).
"$stage/bin/busybox" --list-full | while read -r path; do
  case $path in
    */*) ;;
    *) continue ;;
  esac
  [ "$path" = bin/busybox ] && continue
  mkdir -p "$(dirname "$path")"
  ln -sf /bin/busybox "$path"
done
[ -L bin/sh ] && [ -L sbin/init ] || { echo "mkinitramfs: busybox has no sh or init applet" >&2; exit 1; }

if [ "$interactive" = 1 ]; then
  install -m 0755 "$runner" bin/runner
  ln -s bin/busybox init
else
  install -m 0755 "$runner" init
fi
for f in "$testdir"/*; do
  [ -f "$f" ] || continue
  install -m 0755 "$f" "tests/$(basename "$f")"
done

cat >etc/passwd <<'EOF'
root:x:0:0:root:/root:/bin/sh
nobody:x:65534:65534:nobody:/nonexistent:/bin/false
EOF
cat >etc/group <<'EOF'
root:x:0:
nogroup:x:65534:
EOF
echo shortbread >etc/hostname
# For busybox init (the interactive variant, or rdinit=/sbin/init).
cat >etc/inittab <<'EOF'
::sysinit:/bin/mount -t proc proc /proc
::sysinit:/bin/mount -t sysfs sysfs /sys
::sysinit:/bin/mount -t devtmpfs devtmpfs /dev
::sysinit:/bin/mkdir -p /dev/shm
::sysinit:/bin/mount -t tmpfs -o mode=1777,nosuid,nodev shm /dev/shm
::sysinit:/bin/mount -t tmpfs -o mode=1777 tmpfs /tmp
::sysinit:/bin/hostname -F /etc/hostname
::askfirst:-/bin/sh
::ctrlaltdel:/sbin/reboot
::shutdown:/bin/umount -a -r
EOF
chmod 0644 etc/passwd etc/group etc/hostname etc/inittab

if [ -n "$extra" ]; then
  cp -a "$extra"/. .
fi

# Fixed times and sorted names: the same inputs give the same archive.
epoch=${SOURCE_DATE_EPOCH:-0}
find . -exec touch -h -d "@$epoch" {} +
mkdir -p "$(dirname "$out")"
outabs=$(cd "$(dirname "$out")" && pwd)/$(basename "$out")
if [ "$gzip" = 1 ]; then
  find . -mindepth 1 | LC_ALL=C sort | cpio --quiet -o -H newc --owner=0:0 --reproducible | gzip -9n >"$outabs.tmp"
else
  find . -mindepth 1 | LC_ALL=C sort | cpio --quiet -o -H newc --owner=0:0 --reproducible >"$outabs.tmp"
fi
mv "$outabs.tmp" "$outabs"
echo "initramfs: $out, $(find . -mindepth 1 | wc -l) entries, $(stat -c %s "$outabs") bytes$( [ "$gzip" = 1 ] && echo ' (gzip)')"
