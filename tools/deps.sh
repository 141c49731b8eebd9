#!/bin/sh
# Installs the Debian packages given as arguments if any is missing.
#
# qemu-system-x86 is special: the tests need QEMU 10 or later (x2APIC
# under TCG, the igb NIC), which Debian 12 has in bookworm-backports
# (QEMU 7.2 is its default). Any qemu-system-x86_64 of version 10 or
# later first on PATH will do; otherwise the backports package is
# installed (an installed 7.2 is upgraded), without recommends, which
# would pull a desktop's worth of graphics libraries.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
missing= qemu=
for p in "$@"; do
  if [ "$p" = qemu-system-x86 ]; then
    v=$(qemu-system-x86_64 --version 2>/dev/null | sed -n 's/^QEMU emulator version \([0-9][0-9]*\)\..*/\1/p')
    [ "${v:-0}" -ge 10 ] || qemu=qemu-system-x86
    continue
  fi
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing="$missing $p"
done
[ -z "$missing$qemu" ] && exit 0
SUDO=
[ "$(id -u)" -eq 0 ] || SUDO=sudo
if [ -n "$missing" ]; then
  echo "installing:$missing"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $missing >/dev/null
fi
if [ -n "$qemu" ]; then
  echo "installing: QEMU 10 (qemu-system-x86 from bookworm-backports)"
  "$here/backports.sh"
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends \
    -t bookworm-backports qemu-system-x86 >/dev/null
  qemu-system-x86_64 --version | head -n 1
fi
