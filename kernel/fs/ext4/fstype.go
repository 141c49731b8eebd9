package ext4

import "fmt"

// Linux mounts ext2 and ext3 with its ext4 driver, which takes the type
// a mount asks for as a promise about the file system: one with features
// that type never had is refused, as ext2 and ext3's own drivers would
// refuse it, and so are the options that need a journal where there is
// none. Mount checks the same before it writes anything.

// The features of the old types (Linux's EXT2_ and EXT3_FEATURE_*_SUPP).
const (
	ext2Incompat  = incompatFiletype | incompatMetaBG
	ext3Incompat  = ext2Incompat | incompatRecover
	ext23RoCompat = roCompatSparseSuper | roCompatLargeFile | 0x4 // btree_dir, never used
)

// checkType reports whether the file system may be mounted as the type
// o.As names, with the options o carries.
func (fs *FS) checkType(o Options) error {
	sb := &fs.sb
	hasJournal := sb.compat&compatHasJournal != 0
	switch o.As {
	case "", "ext4":
	case "ext2", "ext3":
		inc := uint32(ext2Incompat)
		if o.As == "ext3" {
			inc = ext3Incompat
		}
		switch {
		case sb.incompat&^inc != 0:
			return fmt.Errorf("%w: features %s are not %s's", ErrWrongType, featureNames(sb.incompat&^inc, allIncompatNames), o.As)
		case o.As == "ext3" && !hasJournal:
			return fmt.Errorf("%w: ext3 without a journal", ErrWrongType)
		case !o.ReadOnly && sb.roCompat&^ext23RoCompat != 0:
			return fmt.Errorf("%w: read-only-compatible features %#x are not %s's (a read-only mount takes them)", ErrWrongType, sb.roCompat&^ext23RoCompat, o.As)
		}
	default:
		return fmt.Errorf("%w: type %q", ErrWrongType, o.As)
	}
	if o.JournalOptions && !hasJournal {
		return fmt.Errorf("%w: commit= or data= without a journal", ErrWrongType)
	}
	return nil
}

// allIncompatNames names every incompatible feature, for checkType's
// message.
var allIncompatNames = func() map[uint32]string {
	m := map[uint32]string{incompatExtents: "extent", incompat64bit: "64bit", incompatFlexBG: "flex_bg",
		incompatCsumSeed: "metadata_csum_seed", incompatLargeDir: "large_dir"}
	for b, n := range incompatNames {
		m[b] = n
	}
	return m
}()
