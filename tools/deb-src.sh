#!/bin/sh
# Makes `apt-get source` work: adds deb-src entries for bookworm (and its
# security updates) when apt has none, then refreshes the package lists.
set -eu
SUDO=
[ "$(id -u)" -eq 0 ] || SUDO=sudo
if grep -rqsE '^[[:space:]]*(deb-src[[:space:]]|Types:.*deb-src)' /etc/apt/sources.list /etc/apt/sources.list.d/; then
  exit 0
fi
echo "deb-src: adding source entries for bookworm" >&2
$SUDO tee /etc/apt/sources.list.d/shortbread-deb-src.sources >/dev/null <<'SOURCES'
# Added by Shortbread's tools/deb-src.sh: source packages for apt-get source.
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb-src
URIs: http://deb.debian.org/debian-security
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SOURCES
$SUDO apt-get update -qq
