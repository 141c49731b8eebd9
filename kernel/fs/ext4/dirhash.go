package ext4

import "math/bits"

// Directory name hashes of indexed directories (Linux's fs/ext4/hash.c):
// the legacy hash, half MD4 and TEA, each over names read as signed or
// unsigned chars, seeded by the superblock's s_hash_seed.

const (
	hashLegacy         = 0
	hashHalfMD4        = 1
	hashTea            = 2
	hashLegacyUnsigned = 3
	hashHalfMD4Unsign  = 4
	hashTeaUnsigned    = 5

	htreeEOF32 = 0x7fffffff
)

var defaultHashSeed = [4]uint32{0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476}

// nameHash returns the major and minor hash of name under version.
func nameHash(name []byte, version uint8, seed [4]uint32) (uint32, uint32, bool) {
	buf := defaultHashSeed
	if seed != ([4]uint32{}) {
		buf = seed
	}
	unsigned := version >= hashLegacyUnsigned
	var hash, minor uint32
	switch version {
	case hashLegacy, hashLegacyUnsigned:
		hash = legacyHash(name, unsigned)
	case hashHalfMD4, hashHalfMD4Unsign:
		for p := name; ; p = p[32:] {
			var in [8]uint32
			hashBuf(p, in[:], unsigned)
			halfMD4(&buf, &in)
			if len(p) <= 32 {
				break
			}
		}
		hash, minor = buf[1], buf[2]
	case hashTea, hashTeaUnsigned:
		for p := name; ; p = p[16:] {
			var in [4]uint32
			hashBuf(p, in[:], unsigned)
			tea(&buf, &in)
			if len(p) <= 16 {
				break
			}
		}
		hash, minor = buf[0], buf[1]
	default:
		return 0, 0, false
	}
	hash &^= 1
	if hash == htreeEOF32<<1 {
		hash = (htreeEOF32 - 1) << 1
	}
	return hash, minor, true
}

func char(c byte, unsigned bool) uint32 {
	if unsigned {
		return uint32(c)
	}
	return uint32(int32(int8(c)))
}

func legacyHash(name []byte, unsigned bool) uint32 {
	h0, h1 := uint32(0x12a3fe2d), uint32(0x37abe8f9)
	for _, c := range name {
		h := h1 + (h0 ^ char(c, unsigned)*7152373)
		if h&0x80000000 != 0 {
			h -= 0x7fffffff
		}
		h1, h0 = h0, h
	}
	return h0 << 1
}

// hashBuf packs up to 4*len(out) bytes of p into words, big-end first,
// padding with a word made of the length.
func hashBuf(p []byte, out []uint32, unsigned bool) {
	pad := uint32(len(p)) | uint32(len(p))<<8
	pad |= pad << 16
	n := min(len(p), 4*len(out))
	val := pad
	k := 0
	for i := 0; i < n; i++ {
		val = char(p[i], unsigned) + val<<8
		if i%4 == 3 {
			out[k] = val
			k++
			val = pad
		}
	}
	if k < len(out) {
		out[k] = val
		k++
	}
	for ; k < len(out); k++ {
		out[k] = pad
	}
}

func halfMD4(buf *[4]uint32, in *[8]uint32) {
	a, b, c, d := buf[0], buf[1], buf[2], buf[3]
	f := func(x, y, z uint32) uint32 { return z ^ (x & (y ^ z)) }
	g := func(x, y, z uint32) uint32 { return (x & y) + ((x ^ y) & z) }
	h := func(x, y, z uint32) uint32 { return x ^ y ^ z }
	const k2, k3 = 0x5A827999, 0x6ED9EBA1
	type step struct {
		fn    func(x, y, z uint32) uint32
		x     int
		k     uint32
		shift int
	}
	steps := [...]step{
		{f, 0, 0, 3}, {f, 1, 0, 7}, {f, 2, 0, 11}, {f, 3, 0, 19},
		{f, 4, 0, 3}, {f, 5, 0, 7}, {f, 6, 0, 11}, {f, 7, 0, 19},
		{g, 1, k2, 3}, {g, 3, k2, 5}, {g, 5, k2, 9}, {g, 7, k2, 13},
		{g, 0, k2, 3}, {g, 2, k2, 5}, {g, 4, k2, 9}, {g, 6, k2, 13},
		{h, 3, k3, 3}, {h, 7, k3, 9}, {h, 2, k3, 11}, {h, 6, k3, 15},
		{h, 1, k3, 3}, {h, 5, k3, 9}, {h, 0, k3, 11}, {h, 4, k3, 15},
	}
	// The four words rotate roles each step: a, d, c, b.
	for i, s := range steps {
		switch i % 4 {
		case 0:
			a = bits.RotateLeft32(a+s.fn(b, c, d)+in[s.x]+s.k, s.shift)
		case 1:
			d = bits.RotateLeft32(d+s.fn(a, b, c)+in[s.x]+s.k, s.shift)
		case 2:
			c = bits.RotateLeft32(c+s.fn(d, a, b)+in[s.x]+s.k, s.shift)
		case 3:
			b = bits.RotateLeft32(b+s.fn(c, d, a)+in[s.x]+s.k, s.shift)
		}
	}
	buf[0] += a
	buf[1] += b
	buf[2] += c
	buf[3] += d
}

func tea(buf *[4]uint32, in *[4]uint32) {
	const delta = 0x9E3779B9
	var sum uint32
	b0, b1 := buf[0], buf[1]
	a, b, c, d := in[0], in[1], in[2], in[3]
	for n := 0; n < 16; n++ {
		sum += delta
		b0 += ((b1 << 4) + a) ^ (b1 + sum) ^ ((b1 >> 5) + b)
		b1 += ((b0 << 4) + c) ^ (b0 + sum) ^ ((b0 >> 5) + d)
	}
	buf[0] += b0
	buf[1] += b1
}
