# Sourced by tools/qemu.sh and tools/linux/run.sh: tools_sata_args prints
# the QEMU arguments that attach the raw images in $SATA (separated by
# spaces) as SATA disks on q35's ICH9 AHCI controller, on ports 0, 1, 3,
# 4 and 5 (port 2 is where -cdrom goes), so the guest sees them as sda,
# sdb, ... in that order; and -boot order=d, so that SeaBIOS boots the CD
# even when a disk's sector 0 carries a boot signature (an MBR).
tools_sata_args() {
  [ -z "${SATA:-}" ] || printf '%s\n' -boot order=d
  i=0
  for img in ${SATA:-}; do
    port=$i
    [ $i -ge 2 ] && port=$((i + 1))
    [ $port -le 5 ] || { echo "sata: more than 5 images" >&2; return 1; }
    printf '%s\n' -drive "file=$img,if=none,id=sata$i,format=raw,discard=unmap" -device "ide-hd,drive=sata$i,bus=ide.$port"
    i=$((i + 1))
  done
}
