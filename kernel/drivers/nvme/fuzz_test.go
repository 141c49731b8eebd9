package nvme

import (
	"math"
	"testing"
)

// Identify data is device input: any page parses to an error or to
// values the driver can use.
func FuzzIdentify(f *testing.F) {
	ctrl := make([]byte, PageSize)
	ctrl[512], ctrl[513], ctrl[77], ctrl[516] = 0x66, 0x44, 7, 1
	ns := make([]byte, PageSize)
	ns[0], ns[25], ns[26], ns[134] = 8, 1, 1, 12
	f.Add(ctrl, ns)
	f.Fuzz(func(t *testing.T, c, n []byte) {
		c = append(c, make([]byte, max(0, PageSize-len(c)))...)[:PageSize]
		n = append(n, make([]byte, max(0, PageSize-len(n)))...)[:PageSize]
		if id, err := parseController(c); err == nil {
			if c[512]&0xf > 6 || c[513]&0xf > 4 {
				t.Errorf("entry sizes %#x/%#x accepted", c[512], c[513])
			}
			for _, s := range []string{id.model, id.serial, id.firmware} {
				for _, r := range s {
					if r < 0x20 || r > 0x7e {
						t.Errorf("identify string %q not printable", s)
					}
				}
			}
		}
		g, err := parseNamespace(n)
		if err != nil || g.sectors == 0 {
			return
		}
		if g.shift < 9 || g.shift > 12 || g.sectors > math.MaxInt64>>g.shift {
			t.Errorf("namespace %+v accepted", g)
		}
	})
}
