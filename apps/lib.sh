# Shared helpers for the apps/*/build.sh recipes (sourced, not run).
#
# Each recipe sets APP (its name, used in messages and as the prefix of
# OUTDIR/APP.log and OUTDIR/APP.stamp) and then uses:
#   need PKG...              install missing Debian packages (tools/deps.sh)
#   src_version SRCPKG       the version `apt-get source` would fetch now
#   fetch_source SRCPKG DIR  unpack the source (Debian patches applied) in
#                            DIR, print the tree's path
#   uapi_headers DIR         linux/ asm/ asm-generic/ symlinks for -idirafter
#   run STEP CMD...          run CMD with output to the log; on failure name
#                            the step and the log, show the errors, exit 1
#   check_static FILE        fail unless FILE is a static x86-64 ELF
#   script_hash FILE...      short hash of the recipe's own files (stamp)
# Variables: root (repository), SUDO, LOG (set by start_log).
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
SUDO=
[ "$(id -u)" -eq 0 ] || SUDO=sudo

die() { echo "$APP: $*" >&2; exit 1; }

need() { "$root/tools/deps.sh" "$@"; }

# apt-get source --print-uris names the .dsc it would fetch; its file name
# carries the version (URL-encoded: %2b +, %3a :, %7e ~).
_dsc_version() {
  apt-get source --print-uris "$1" 2>/dev/null |
    sed -n "s/.*'[^']*\/$1_\([^']*\)\.dsc'.*/\1/p" |
    sed 's/%2[bB]/+/g; s/%3[aA]/:/g; s/%7[eE]/~/g' | head -n 1
}

src_version() {
  "$root/tools/deb-src.sh"
  v=$(_dsc_version "$1")
  if [ -z "$v" ]; then
    $SUDO apt-get update -qq
    v=$(_dsc_version "$1")
  fi
  [ -n "$v" ] || die "apt knows no $1 source package"
  echo "$v"
}

# The mirror sometimes lists a security update whose files are not (yet,
# or no longer) on it (404). Then the next older version apt knows is
# fetched instead; the version actually built is logged and recorded in
# OUTDIR/APP.version.
fetch_source() {
  pkg=$1 dir=$2
  mkdir -p "$dir"
  # apt downloads as the unprivileged _apt user when it can write there.
  chmod 0777 "$dir"
  ordered=$(apt-cache showsrc "$pkg" | sed -n 's/^Version: //p' | sort -u | _dpkg_sort)
  for v in $ordered; do
    if (cd "$dir" && apt-get source -q "$pkg=$v") >>"$LOG" 2>&1; then
      echo "$APP: fetched $pkg $v" >>"$LOG"
      echo "$pkg $v" >>"$dir/.versions"
      uv=${v#*:}
      t=$dir/$pkg-${uv%-*}
      [ -d "$t" ] || die "no $pkg source tree unpacked in $dir"
      echo "$t"
      return 0
    fi
    echo "$APP: apt-get source $pkg=$v failed, trying an older version" >>"$LOG"
  done
  die "apt-get source $pkg failed, see $LOG"
}

# Sorts Debian versions, newest first (insertion sort with dpkg).
_dpkg_sort() {
  sorted=''
  while read -r v; do
    [ -n "$v" ] || continue
    new='' placed=''
    for o in $sorted; do
      if [ -z "$placed" ] && dpkg --compare-versions "$v" gt "$o"; then
        new="$new $v"; placed=1
      fi
      new="$new $o"
    done
    [ -n "$placed" ] || new="$new $v"
    sorted=$new
  done
  for o in $sorted; do echo "$o"; done
}

# musl ships no Linux UAPI headers; Debian's linux-libc-dev copies go after
# musl's own headers (-idirafter DIR), as in user/busybox/build.sh.
uapi_headers() {
  mkdir -p "$1"
  multiarch=$(gcc -print-multiarch)
  for d in linux asm asm-generic; do
    if [ -d "/usr/include/$multiarch/$d" ]; then
      ln -sfn "/usr/include/$multiarch/$d" "$1/$d"
    elif [ -d "/usr/include/$d" ]; then
      ln -sfn "/usr/include/$d" "$1/$d"
    else
      die "/usr/include/$d missing (linux-libc-dev)"
    fi
  done
}

# begin_build ARG PACKAGES...: the start every recipe shares. ARG is the
# recipe's argument: --stamp prints the cache key (the recipe's stamp
# function) and exits; otherwise it is OUTDIR. Installs PACKAGES, then
# sets out (absolute OUTDIR), key (the cache key), start (seconds), the
# log OUTDIR/$APP.log, and tmp, a scratch directory removed on exit.
begin_build() {
  arg=$1
  shift
  need "$@"
  if [ "$arg" = --stamp ]; then
    stamp
    exit 0
  fi
  mkdir -p "$arg"
  out=$(cd "$arg" && pwd)
  key=$(stamp)
  start=$(date +%s)
  start_log "$out/$APP.log"
  tmp=$(mktemp -d "/tmp/sb-$APP.XXXXXX")
  trap 'rm -rf "$tmp"' EXIT
  chmod 0755 "$tmp"
}

# source_epoch DIR: builds are dated by the unpacked Debian source's
# changelog (SOURCE_DATE_EPOCH), so they are reproducible.
source_epoch() {
  SOURCE_DATE_EPOCH=$(dpkg-parsechangelog -l "$1/debian/changelog" -STimestamp)
  export SOURCE_DATE_EPOCH
}

start_log() {
  LOG=$1
  : >"$LOG"
}

run() {
  step=$1
  shift
  echo "== $step: $*" >>"$LOG"
  if ! "$@" >>"$LOG" 2>&1; then
    grep -E 'error|Error|ERROR|not found' "$LOG" | tail -n 20 >&2 || true
    die "$step failed, see $LOG"
  fi
}

check_static() {
  info=$(file -b "$1")
  case $info in
    *ELF\ 64-bit*x86-64*statically\ linked*) ;;
    *) die "$(basename "$1") is not a static x86-64 ELF: $info" ;;
  esac
}

script_hash() {
  cat "$@" | sha256sum | cut -c1-16
}
