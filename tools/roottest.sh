#!/bin/sh
# Root-on-disk test: the kernel mounts its root file system from a disk
# (root=/dev/vda1), with and without an initramfs, and leaves the disk
# clean when init exits. The disk is a GPT image with an ext4 partition
# made by the host's mke2fs from the user tree (tools/mkdisk.sh), with
# tools/roottest/check.sh as /check.sh. Five boots:
#   1. no initramfs, root=/dev/vda1 rw, 2 CPUs: check.sh one checks the
#      mounts and writes files without syncing; then the host's e2fsck
#      -fn must find the file system clean (no journal to replay) and
#      debugfs must read back what the guest wrote;
#   2. the smoke initramfs given too, root=/dev/vda1 (read-only by
#      default): check.sh two finds boot 1's files, EROFS, remounts rw,
#      writes and removes a file; the host checks again;
#   3. no root=, an initramfs whose /init mounts the disk and
#      switch_roots to it (MS_MOVE onto /, chroot): check.sh three;
#   4. root=/dev/vdz: no such device, refused with a message that lists
#      the block devices there are;
#   5. root=/dev/vda: a disk holding no ext4 (its partition table), refused.
# usage: tools/roottest.sh [TIMEOUT_SECONDS]   (after make kernel user)
set -u
limit=${1:-300}
root=$(cd "$(dirname "$0")/.." && pwd)
build=$root/build
dir=$build/roottest
rm -rf "$dir" && mkdir -p "$dir/extra" || exit 1
cp "$root/tools/roottest/check.sh" "$dir/extra/check.sh" || exit 1
"$root/tools/mkdisk.sh" "$dir/disk.img" "$build/user/initramfs.cpio" 256M "$dir/extra" || exit 1
PATH=$PATH:/sbin:/usr/sbin
part="$dir/disk.img?offset=1048576" # tools/mkdisk.sh's partition 1
failed=0

fail() {
  echo "root test FAILED: $*"
  failed=1
}

# boot N CMDLINE INITRAMFS CPUS: boots, shows the kernel's output, and
# returns the kernel's status.
boot() {
  n=$1
  "$root/tools/mkiso.sh" "$dir/root$n.iso" "$build/stub.elf" "$build/kernel.elf" "$2" "$3" || return 99
  echo "root test, boot $n: $2 (initramfs: $(basename "$3"), $4 CPU(s)), log in $dir/boot$n.log"
  DISK=$dir/disk.img "$root/tools/qemu.sh" "$dir/root$n.iso" "$4" "$limit" > "$dir/boot$n.log" 2>&1
  status=$?
  sed -n '/Shortbread: machine layer/,$p' "$dir/boot$n.log" | tr -d '\r'
  return $status
}

# fsck_clean: the host's e2fsck -fn finds nothing, and the superblock
# says clean without a journal to replay.
fsck_clean() {
  if ! e2fsck -fn "$part" > "$dir/fsck.log" 2>&1; then
    cat "$dir/fsck.log"
    fail "e2fsck -fn found errors after $1"
  fi
  if dumpe2fs -h "$part" 2>/dev/null | grep -q '^Filesystem features:.*needs_recovery'; then
    fail "the journal needs recovery after $1: the disk was not left clean"
  fi
}

# host_cat PATH: the file's bytes as debugfs reads them from the image.
host_cat() {
  debugfs -R "cat $1" "$part" 2>/dev/null
}

boot 1 "root=/dev/vda1 rw loglevel=info init=/bin/sh -- /check.sh one" none 2
s=$?
grep -q "roottest: one passed" "$dir/boot1.log" && [ $s -eq 0 ] || fail "boot 1: status $s"
grep -q "root: /dev/vda1 (254:1), ext4, mounted read-write" "$dir/boot1.log" || fail "boot 1 did not say which root it mounted"
fsck_clean "boot 1"
[ "$(host_cat /root/note)" = "written on the disk root" ] || fail "the host reads /root/note as '$(host_cat /root/note)'"
[ "$(host_cat /root/big | md5sum | cut -d' ' -f1)" = "$(host_cat /root/big.md5)" ] || fail "the host reads /root/big other than the guest wrote it"
[ "$(host_cat /root/d/e/link)" = "written on the disk root" ] || fail "the hard link /root/d/e/link"

boot 2 "root=/dev/vda1 loglevel=info init=/bin/sh -- /check.sh two" "$build/initramfs.cpio" 1
s=$?
grep -q "roottest: two passed" "$dir/boot2.log" && [ $s -eq 0 ] || fail "boot 2: status $s"
grep -q "root: /dev/vda1 (254:1), ext4, mounted read-only" "$dir/boot2.log" || fail "boot 2 did not mount the root read-only"
fsck_clean "boot 2"
[ "$(host_cat /root/two)" = "second boot" ] || fail "the host reads /root/two as '$(host_cat /root/two)'"
debugfs -R "stat /root/big" "$part" 2>&1 | grep -q "File not found" || fail "/root/big, removed in boot 2, is still on the disk"

# An initramfs of the usual kind: its /init mounts the disk, moves the
# kernel's file systems onto it and switch_roots (busybox's: it empties
# the initramfs, moves the disk onto / with MS_MOVE, chroots, execs).
rd=$dir/initrd
mkdir -p "$rd/bin" "$rd/newroot" "$rd/dev" "$rd/proc" "$rd/sys"
cp "$build/user/busybox" "$rd/bin/busybox"
for a in sh mount switch_root echo; do ln -s busybox "$rd/bin/$a"; done
cat > "$rd/init" <<'INIT'
#!/bin/sh
mount -t ext4 -o ro /dev/vda1 /newroot || exit 11
for d in dev proc sys; do mount --move /$d /newroot/$d || exit 12; done
exec switch_root /newroot /bin/sh /check.sh three
INIT
chmod 755 "$rd/init"
(cd "$rd" && find . -mindepth 1 | LC_ALL=C sort | cpio --quiet -o -H newc --owner=0:0) > "$dir/switch.cpio" || exit 1
boot 3 "init=/init loglevel=info" "$dir/switch.cpio" 2
s=$?
grep -q "roottest: three passed" "$dir/boot3.log" && [ $s -eq 0 ] || fail "boot 3 (switch_root from an initramfs): status $s"
fsck_clean "boot 3"

boot 4 "root=/dev/vdz poweroff" none 1
s=$?
grep -q 'root file system: no block device "/dev/vdz" .*block devices: vda (254:0), vda1 (254:1)' "$dir/boot4.log" || fail "boot 4: no clear error for a missing root device"
[ $s -eq 0 ] || fail "boot 4: status $s"

boot 5 "root=/dev/vda poweroff" none 1
s=$?
grep -q 'root file system: unable to mount /dev/vda as ext4' "$dir/boot5.log" || fail "boot 5: no clear error for a disk without ext4"
[ $s -eq 0 ] || fail "boot 5: status $s"
fsck_clean "boot 5"

if [ $failed -ne 0 ]; then
  exit 1
fi
echo "root test passed: root=/dev/vda1 without and with an initramfs, rw and ro, clean at power-off; switch_root from an initramfs; missing and unmountable roots refused"
