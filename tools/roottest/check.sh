#!/bin/sh
# Runs as init (init=/bin/sh -- /check.sh PHASE) on a kernel booted with
# its root on /dev/vda1 (tools/roottest.sh); prints "roottest: PHASE
# passed" and exits 0, or names the first check that failed and exits 1.
phase=$1
fail() {
  echo "roottest: $phase: FAILED: $*"
  cat /proc/mounts
  exit 1
}
# The root is the disk, mounted as root= and ro/rw asked, with the
# kernel's file systems on it.
case $phase in
  one) mode=rw ;;
  two|three) mode=ro ;;
  *) fail "unknown phase" ;;
esac
grep -q "^/dev/vda1 / ext4 $mode," /proc/mounts || fail "/ is not /dev/vda1 as ext4 $mode"
grep -q " / / $mode,[^ ]* - ext4 /dev/vda1 $mode" /proc/self/mountinfo || fail "mountinfo of / is wrong"
grep -q " 254:1 / / " /proc/self/mountinfo || fail "mountinfo: / is not device 254:1"
grep -q "^devtmpfs /dev devtmpfs" /proc/mounts || fail "no devtmpfs on /dev"
[ -c /dev/null ] && [ -b /dev/vda1 ] || fail "no device nodes in /dev"
[ -d /proc/self ] || fail "no proc on /proc"
df / | grep -q "^/dev/vda1 " || fail "df does not show /dev/vda1"
[ "$(cat /etc/hostname)" = shortbread ] || fail "/etc/hostname is not the disk's"

case $phase in
one)
  # Changes left unsynced: the kernel's power-off after init exits must
  # make them durable and leave the file system clean.
  echo "written on the disk root" > /root/note || fail "write /root/note"
  dd if=/dev/urandom of=/root/big bs=64k count=16 2>/dev/null || fail "write /root/big"
  md5sum /root/big | cut -d' ' -f1 > /root/big.md5 || fail "md5sum"
  mkdir -p /root/d/e && ln /root/note /root/d/e/link && ln -s ../note /root/d/sym || fail "tree"
  ;;
two)
  # The initramfs given with root= is not the root: the smoke
  # initramfs's /bin/hello is not there.
  [ ! -e /bin/hello ] || fail "/bin/hello of the initramfs is visible"
  [ "$(cat /root/note)" = "written on the disk root" ] || fail "/root/note: $(cat /root/note)"
  [ "$(md5sum /root/big | cut -d' ' -f1)" = "$(cat /root/big.md5)" ] || fail "/root/big changed"
  [ "$(cat /root/d/sym)" = "written on the disk root" ] || fail "/root/d/sym"
  err=$(touch /root/x 2>&1) && fail "touch on the read-only root succeeded"
  case $err in *"Read-only file system"*) ;; *) fail "touch on the read-only root: $err" ;; esac
  mount -o remount,rw / || fail "remount / rw"
  grep -q "^/dev/vda1 / ext4 rw," /proc/mounts || fail "/ not rw after the remount"
  echo "second boot" > /root/two || fail "write /root/two"
  rm /root/big || fail "rm /root/big"
  ;;
three)
  # Reached through the initramfs's /init and switch_root: the disk is
  # /, the initramfs's files are gone from sight, the kernel's file
  # systems moved along.
  [ ! -e /newroot ] && [ ! -e /init.sh ] || fail "the initramfs is still visible"
  [ "$(cat /root/two)" = "second boot" ] || fail "/root/two: $(cat /root/two)"
  [ "$(cat /proc/1/cmdline | tr '\0' ' ')" = "/bin/sh /check.sh three " ] || fail "PID 1 is not this script: $(cat /proc/1/cmdline | tr '\0' ' ')"
  [ "$(cd /.. && pwd)" = / ] && [ "$(ls -di /.. | cut -d' ' -f1)" = "$(ls -di / | cut -d' ' -f1)" ] || fail "/.. leaves the new root"
  ;;
esac
echo "roottest: $phase passed"
