#!/bin/sh
# Tests the mailbench programs on this (Linux) host: a fixed batch and a
# timed run must deliver and verify every message and leave nothing behind;
# bad options must be refused; a lost or a corrupted delivery (simulated
# with a wrapper around mail-deliver) must make mailbench fail.
#
# usage: apps/mailbench/test.sh [OUTDIR]   (default build/apps; builds the
#                                           programs there when missing)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out=${1:-$root/build/apps}
[ -x "$out/mailbench" ] || OUTDIR=$out "$root/apps/build.sh" mailbench >/dev/null
out=$(cd "$out" && pwd)
fail() { echo "mailbench-test: FAIL: $*" >&2; exit 1; }
tmp=$(mktemp -d /tmp/sb-mailbench-test.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

# 1. a fixed batch: 3 clients x 40 messages of 3000 bytes
mkdir "$tmp/spool"
"$out/mailbench" -c 3 -n 40 -s 3000 -d "$tmp/spool" >"$tmp/out" 2>&1 ||
  { cat "$tmp/out"; fail "fixed batch exited $?"; }
grep -q '^MAILBENCH .* accepted=120 delivered=120 bad=0 ' "$tmp/out" ||
  { cat "$tmp/out"; fail "fixed batch: wrong counts"; }
[ -z "$(ls -A "$tmp/spool")" ] || fail "spool not removed after success: $(ls "$tmp/spool")"
echo "mailbench-test: 120 messages delivered and verified"

# 2. a timed run with posix_spawn
"$out/mailbench" -c 2 -t 0.5 -s 200 -m spawn -d "$tmp/spool" >"$tmp/out" 2>&1 ||
  { cat "$tmp/out"; fail "timed spawn run"; }
grep -q '^MAILBENCH .*mode=spawn .*msgs_per_s=' "$tmp/out" || { cat "$tmp/out"; fail "no MAILBENCH line"; }
echo "mailbench-test: $(grep '^mailbench:' "$tmp/out")"

# 3. bad options: refused with status 1 or 2 and a message naming them
for args in "-c 0" "-s 10" "-m vfork" "-t soon" "-n -3" "extra" "-d $tmp/missing/dir"; do
  s=0
  "$out/mailbench" $args >"$tmp/out" 2>&1 || s=$?
  [ $s -eq 1 ] || [ $s -eq 2 ] || fail "mailbench $args: exit $s"
  grep -q 'mailbench' "$tmp/out" || fail "mailbench $args: no message"
done
echo "mailbench-test: bad options refused"

# 4. faults: a mail-deliver that loses one message, one that corrupts one
mkdir "$tmp/bin"
cp "$out/mail-enqueue" "$out/mail-qman" "$out/mail-deliver" "$out/mailbench" "$tmp/bin/"
mv "$tmp/bin/mail-deliver" "$tmp/bin/real-deliver"
fault() {
  cat >"$tmp/bin/mail-deliver" <<SCRIPT
#!/bin/sh
# test double: delivers, then damages the first message delivered
"$tmp/bin/real-deliver" "\$@" || exit 1
mkdir "\$1/.damaged" 2>/dev/null || exit 0
$1
SCRIPT
  chmod +x "$tmp/bin/mail-deliver"
  s=0
  "$tmp/bin/mailbench" -c 2 -n 5 -s 500 -d "$tmp/spool" >"$tmp/out" 2>&1 || s=$?
  [ $s -eq 1 ] || { cat "$tmp/out"; fail "$2 went unnoticed (exit $s)"; }
  grep -q "$3" "$tmp/out" || { cat "$tmp/out"; fail "$2: no '$3' message"; }
  rm -rf "$tmp/spool"/mailbench.*
  echo "mailbench-test: $2 detected"
}
fault 'rm -f "$1"/mail/*/new/*' "a lost message" "accepted but"
fault 'for f in "$1"/mail/*/new/*; do printf x >>"$f"; done' "a corrupted message" "content differs"
fault 'for f in "$1"/mail/*/new/*; do cp "$f" "$f.again"; done' "a duplicate" "delivered twice"
echo "mailbench-test: ok"
