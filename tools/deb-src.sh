#!/bin/sh
# Makes `apt-get source` work: adds deb-src entries for bookworm (and its
# security updates) when apt has none for bookworm itself, then refreshes
# the package lists. A deb-src entry for another suite does not count:
# tools/backports.sh adds one for bookworm-backports (QEMU's source), which
# holds no busybox.
set -eu
SUDO=
[ "$(id -u)" -eq 0 ] || SUDO=sudo

# has_bookworm_src: some one-line (.list) or deb822 (.sources) entry has
# type deb-src and the suite bookworm.
has_bookworm_src() {
  grep -qsE '^[[:space:]]*deb-src[[:space:]].*[[:space:]]bookworm([[:space:]]|$)' \
    /etc/apt/sources.list /etc/apt/sources.list.d/*.list && return 0
  for f in /etc/apt/sources.list.d/*.sources; do
    [ -f "$f" ] || continue
    awk '
      function flush() { if (src && suite) found = 1; src = 0; suite = 0 }
      /^[[:space:]]*$/ { flush(); next }
      /^[[:space:]]*#/ { next }
      tolower($1) == "types:" { for (i = 2; i <= NF; i++) if ($i == "deb-src") src = 1 }
      tolower($1) == "suites:" { for (i = 2; i <= NF; i++) if ($i == "bookworm") suite = 1 }
      tolower($1) == "enabled:" && tolower($2) == "no" { src = 0; suite = 0 }
      END { flush(); exit found ? 0 : 1 }
    ' "$f" && return 0
  done
  return 1
}

if has_bookworm_src; then
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
