#!/bin/sh
# Adds Debian's bookworm-backports suite to apt (binary and source
# entries) when apt has none, then refreshes the package lists. QEMU 10
# comes from there (tools/deps.sh), and the source entry lets
# tools/tcgcount/build.sh take qemu-plugin.h from the same release.
# Backports have a low default priority, so nothing else is upgraded
# from them unless asked for by name or with -t bookworm-backports.
set -eu
SUDO=
[ "$(id -u)" -eq 0 ] || SUDO=sudo
if grep -rqsE '^[^#]*bookworm-backports' /etc/apt/sources.list /etc/apt/sources.list.d/; then
  exit 0
fi
echo "backports: adding bookworm-backports to apt" >&2
$SUDO tee /etc/apt/sources.list.d/shortbread-backports.sources >/dev/null <<'SOURCES'
# Added by Shortbread's tools/backports.sh: QEMU 10 and its source.
Types: deb deb-src
URIs: http://deb.debian.org/debian
Suites: bookworm-backports
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SOURCES
$SUDO apt-get update -qq
