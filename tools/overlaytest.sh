#!/bin/sh
# Checks tools/overlay.sh: new files are added, a diff that applies is
# applied to a copy, and a diff that no longer applies (or a file that
# would shadow an upstream one) stops the build with a message naming it.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
rt=$(go env GOROOT)/src/runtime
fail() { echo "overlay test FAILED: $1"; exit 1; }

mkdir -p "$tmp/p" "$tmp/a/runtime" "$tmp/b/runtime"
printf '//go:build shortbread\n\npackage runtime\n' > "$tmp/p/sb_x.go"
# A diff that applies: one comment line added to extern.go.
cp "$rt/extern.go" "$tmp/a/runtime/extern.go"
{ cat "$rt/extern.go"; echo "// shortbread overlay test"; } > "$tmp/b/runtime/extern.go"
(cd "$tmp" && diff -u a/runtime/extern.go b/runtime/extern.go) > "$tmp/p/extern.diff"
out=$("$root/tools/overlay.sh" "$tmp/p" "$tmp/o") || fail "good patch set rejected"
grep -q "\"$rt/sb_x.go\":\"$tmp/p/sb_x.go\"" "$out" || fail "new file missing from overlay"
grep -q "\"$rt/extern.go\":\"$tmp/o/extern.go\"" "$out" || fail "patched file missing from overlay"
tail -n1 "$tmp/o/extern.go" | grep -q "shortbread overlay test" || fail "diff not applied"

# A diff whose context is gone (every context line changed), as when
# upstream rewrites the lines a patch touches.
sed 's/^ .*/ this context line does not exist upstream/' "$tmp/p/extern.diff" > "$tmp/p/stale.diff"
msg=$("$root/tools/overlay.sh" "$tmp/p" "$tmp/o2" 2>&1) && fail "stale diff accepted"
echo "$msg" | grep -q "stale.diff no longer applies" || fail "message does not name the stale diff: $msg"
rm "$tmp/p/stale.diff"

# A new file that would shadow an upstream one.
printf 'package runtime\n' > "$tmp/p/proc.go"
msg=$("$root/tools/overlay.sh" "$tmp/p" "$tmp/o3" 2>&1) && fail "shadowing file accepted"
echo "$msg" | grep -q "proc.go would replace upstream" || fail "message does not name proc.go: $msg"
echo "overlay test passed: files added, diffs applied, stale diff and shadowing file rejected by name"
