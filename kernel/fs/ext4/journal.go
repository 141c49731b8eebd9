package ext4

import "encoding/binary"

// The jbd2 journal's on-disk format (Documentation/filesystems/ext4/
// journal.rst). Unlike the rest of ext4 it is big-endian. The journal is
// a circular log inside inode 8: a superblock in its block 0, then
// transactions, each descriptor blocks naming the home location of the
// blocks logged after them, optional revoke blocks, and a commit block.

var be = binary.BigEndian

const (
	jbdMagic = 0xC03B3998

	jbdDescriptor = 1
	jbdCommit     = 2
	jbdSuperV1    = 3
	jbdSuperV2    = 4
	jbdRevoke     = 5

	// Journal feature flags.
	jbdCompatChecksum     = 0x1
	jbdIncompatRevoke     = 0x1
	jbdIncompat64bit      = 0x2
	jbdIncompatAsync      = 0x4
	jbdIncompatCsumV2     = 0x8
	jbdIncompatCsumV3     = 0x10
	jbdIncompatFastCommit = 0x20
	jbdIncompatKnown      = jbdIncompatRevoke | jbdIncompat64bit | jbdIncompatAsync | jbdIncompatCsumV2 | jbdIncompatCsumV3

	// Descriptor tag flags.
	tagEscape   = 0x1 // the block began with the magic number, zeroed in the log
	tagSameUUID = 0x2 // no UUID follows the tag
	tagDeleted  = 0x4
	tagLast     = 0x8

	jbdHeaderSize = 12
	jbdTailSize   = 4 // checksum at the end of descriptor and revoke blocks (v2, v3)
)

// journalSuper is the decoded journal superblock.
type journalSuper struct {
	raw       []byte
	blockSize uint32
	maxLen    uint32 // blocks in the journal
	first     uint32 // first block of the log
	sequence  uint32 // the first transaction expected in the log
	start     uint32 // block where the log starts; 0 means empty
	compat    uint32
	incompat  uint32
	uuid      [16]byte
	csumSeed  uint32
}

func (j *journalSuper) csumV23() bool {
	return j.incompat&(jbdIncompatCsumV2|jbdIncompatCsumV3) != 0
}

// tagSize is the size of one descriptor tag, without its UUID.
func (j *journalSuper) tagSize() int {
	if j.incompat&jbdIncompatCsumV3 != 0 {
		return 16
	}
	n := 12
	if j.incompat&jbdIncompatCsumV2 != 0 {
		n += 2
	}
	if j.incompat&jbdIncompat64bit == 0 {
		n -= 4
	}
	return n
}

func decodeJournalSuper(b []byte, fsBlockSize uint32) (*journalSuper, error) {
	if be.Uint32(b[0:]) != jbdMagic {
		return nil, corrupt("journal superblock magic %#x", be.Uint32(b[0:]))
	}
	t := be.Uint32(b[4:])
	if t != jbdSuperV1 && t != jbdSuperV2 {
		return nil, corrupt("journal superblock type %d", t)
	}
	j := &journalSuper{
		raw:       b,
		blockSize: be.Uint32(b[0xC:]),
		maxLen:    be.Uint32(b[0x10:]),
		first:     be.Uint32(b[0x14:]),
		sequence:  be.Uint32(b[0x18:]),
		start:     be.Uint32(b[0x1C:]),
	}
	if t == jbdSuperV2 {
		j.compat = be.Uint32(b[0x24:])
		j.incompat = be.Uint32(b[0x28:])
		copy(j.uuid[:], b[0x30:0x40])
	}
	if j.blockSize != fsBlockSize {
		return nil, corrupt("journal block size %d, file system's %d", j.blockSize, fsBlockSize)
	}
	if j.first == 0 || j.first >= j.maxLen || j.start != 0 && (j.start < j.first || j.start >= j.maxLen) {
		return nil, corrupt("journal geometry: first %d start %d of %d blocks", j.first, j.start, j.maxLen)
	}
	if j.csumV23() {
		if b[0x50] != 4 {
			return nil, corrupt("journal checksum type %d", b[0x50])
		}
		if want, got := journalSuperCsum(b), be.Uint32(b[0xFC:]); want != got {
			return nil, corrupt("journal superblock checksum %#x, computed %#x", got, want)
		}
		j.csumSeed = crc32c(^uint32(0), j.uuid[:])
	}
	return j, nil
}

func journalSuperCsum(b []byte) uint32 {
	c := crc32c(^uint32(0), b[:0xFC])
	c = crc32c(c, []byte{0, 0, 0, 0})
	return crc32c(c, b[0x100:1024])
}

// blockTailOK checks the checksum at the end of a descriptor or revoke
// block.
func (j *journalSuper) blockTailOK(b []byte) bool {
	if !j.csumV23() {
		return true
	}
	n := len(b) - jbdTailSize
	c := crc32c(j.csumSeed, b[:n])
	c = crc32c(c, []byte{0, 0, 0, 0})
	return c == be.Uint32(b[n:])
}

// commitOK checks a commit block's checksum.
func (j *journalSuper) commitOK(b []byte) bool {
	if !j.csumV23() {
		return true
	}
	c := crc32c(j.csumSeed, b[:16])
	c = crc32c(c, []byte{0, 0, 0, 0})
	c = crc32c(c, b[20:])
	return c == be.Uint32(b[16:])
}

// dataCsum is the checksum a v2/v3 tag holds for a logged block.
func (j *journalSuper) dataCsum(seq uint32, b []byte) uint32 {
	var s [4]byte
	be.PutUint32(s[:], seq)
	return crc32c(crc32c(j.csumSeed, s[:]), b)
}
