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
