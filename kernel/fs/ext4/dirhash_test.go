package ext4

import (
	"fmt"
	"os/exec"
	"regexp"
	"testing"
)

// TestNameHash compares the hashes with debugfs's dx_hash.
func TestNameHash(t *testing.T) {
	img := mkfs(t, "2M", "", "-t", "ext4")
	re := regexp.MustCompile(`is 0x([0-9a-f]+) \(minor 0x([0-9a-f]+)\)`)
	seeds := map[string][4]uint32{
		"00000000-0000-0000-0000-000000000000": {},
		"01234567-89ab-cdef-0123-456789abcdef": {0x67452301, 0xefcdab89, 0x67452301, 0xefcdab89},
	}
	names := []string{"hello", "a", "entry-with-a-longish-name-00042", "a_long_name_over_thirty_two_characters_x", "exactly-sixteen!", "x"}
	algs := map[string]uint8{"legacy": hashLegacy, "half_md4": hashHalfMD4, "tea": hashTea}
	for alg, ver := range algs {
		for s, seed := range seeds {
			for _, n := range names {
				out, err := exec.Command("debugfs", "-R", fmt.Sprintf("dx_hash -h %s -s %s %s", alg, s, n), img).CombinedOutput()
				if err != nil {
					t.Fatalf("debugfs: %v %s", err, out)
				}
				m := re.FindStringSubmatch(string(out))
				if m == nil {
					t.Fatalf("debugfs said %q", out)
				}
				h, minor, _ := nameHash([]byte(n), ver, seed)
				if got := fmt.Sprintf("%x", h); got != m[1] {
					t.Errorf("%s %s %q: hash %s, debugfs %s", alg, s, n, got, m[1])
				}
				if alg != "legacy" {
					if got := fmt.Sprintf("%x", minor); got != m[2] {
						t.Errorf("%s %s %q: minor %s, debugfs %s", alg, s, n, got, m[2])
					}
				}
			}
		}
	}
}

// TestLegacyCollisions checks that the pairs of names ext4vfs's
// TestListCollisions lists share a legacy hash (its minor hash is 0),
// so that they share a listing position there.
func TestLegacyCollisions(t *testing.T) {
	pairs := [][2]string{{"cl-005007", "cl-005707"}, {"cl-024000", "cl-024044"}, {"cl-024004", "cl-024040"}}
	for _, p := range pairs {
		for _, v := range []uint8{hashLegacy, hashLegacyUnsigned} {
			h1, m1, _ := nameHash([]byte(p[0]), v, [4]uint32{1, 2, 3, 4})
			h2, m2, _ := nameHash([]byte(p[1]), v, [4]uint32{})
			if hashPos(h1, m1) != hashPos(h2, m2) {
				t.Errorf("%q and %q (hash version %d): positions %#x and %#x", p[0], p[1], v, hashPos(h1, m1), hashPos(h2, m2))
			}
		}
	}
}
