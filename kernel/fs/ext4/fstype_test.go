package ext4

import (
	"errors"
	"testing"
)

// TestMountAsType: a mount as ext2 or ext3 refuses a file system with
// features that type never had, and options that need a journal are
// refused without one, as Linux 6.1's ext4 driver does (t_mount checks
// the same on Linux).
func TestMountAsType(t *testing.T) {
	images := map[string]*memDev{}
	for _, typ := range []string{"ext2", "ext3", "ext4"} {
		images[typ] = loadImage(t, mkfs(t, "8M", "", "-t", typ))
	}
	for _, c := range []struct {
		image, as       string
		ro, journalOpts bool
		ok              bool
	}{
		{"ext2", "ext2", false, false, true},
		{"ext2", "ext4", false, false, true},
		{"ext2", "ext3", false, false, false}, // no journal
		{"ext2", "ext3", true, false, false},
		{"ext2", "ext4", false, true, false}, // commit= without a journal
		{"ext3", "ext2", false, false, true},
		{"ext3", "ext3", false, true, true},
		{"ext3", "ext4", false, true, true},
		{"ext4", "ext4", false, true, true},
		{"ext4", "ext3", false, false, false}, // extents, 64bit, flex_bg
		{"ext4", "ext2", true, false, false},
		{"ext4", "ext5", false, false, false},
	} {
		d := &memDev{b: append([]byte(nil), images[c.image].b...)}
		_, err := Mount(d, Options{As: c.as, ReadOnly: c.ro, JournalOptions: c.journalOpts})
		if c.ok && err != nil || !c.ok && !errors.Is(err, ErrWrongType) {
			t.Errorf("%s image as %s (ro %v, journal options %v): %v", c.image, c.as, c.ro, c.journalOpts, err)
		}
	}
	// A metadata_csum file system without extents: its read-only-
	// compatible features are not ext2's, so only a read-only mount.
	img := loadImage(t, mkfs(t, "8M", "", "-t", "ext4", "-O", "^has_journal,^extent,^64bit,^flex_bg"))
	if _, err := Mount(&memDev{b: append([]byte(nil), img.b...)}, Options{As: "ext2"}); !errors.Is(err, ErrWrongType) {
		t.Errorf("metadata_csum read-write as ext2: %v", err)
	}
	if _, err := Mount(&memDev{b: append([]byte(nil), img.b...)}, Options{As: "ext2", ReadOnly: true}); err != nil {
		t.Errorf("metadata_csum read-only as ext2: %v", err)
	}
}
