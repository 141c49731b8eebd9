package main

import "strings"

// The workload's file contents, as user/tests/h_durable.c writes them: a
// file's bytes are a pattern keyed by its name without a ".tmp" suffix,
// byte o being byte o%8 of splitmix64(fnv1a64(name) + o/8).

const fnvBasis = 0xcbf29ce484222325

func fnv(p []byte, h uint64) uint64 {
	for _, b := range p {
		h ^= uint64(b)
		h *= 0x100000001b3
	}
	return h
}

func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

func patternKey(name string) uint64 {
	return fnv([]byte(strings.TrimSuffix(name, ".tmp")), fnvBasis)
}

// fillPattern writes len(p) bytes of key k's pattern from offset off.
func fillPattern(p []byte, k, off uint64) {
	for i := range p {
		o := off + uint64(i)
		p[i] = byte(splitmix(k+o/8) >> (8 * (o % 8)))
	}
}

// patternHash is fnv1a64 of the first size bytes of name's pattern, the
// HASH of a "durable" line.
func patternHash(name string, size uint64) uint64 {
	k := patternKey(name)
	buf := make([]byte, 64<<10)
	h := uint64(fnvBasis)
	for off := uint64(0); off < size; off += uint64(len(buf)) {
		n := min(uint64(len(buf)), size-off)
		fillPattern(buf[:n], k, off)
		h = fnv(buf[:n], h)
	}
	return h
}

// judgeContents is what h_durable's check mode reports for a file: how
// many bytes from the start match the pattern, and the offset of the
// first 512-byte sector that is neither the pattern nor zeros (-1: none).
func judgeContents(name string, data []byte) (good uint64, bad int64) {
	want := make([]byte, len(data))
	fillPattern(want, patternKey(name), 0)
	bad = -1
	prefix := true
	for i := 0; i < len(data); i += 512 {
		end := min(i+512, len(data))
		got, exp := data[i:end], want[i:end]
		same, zero := string(got) == string(exp), true
		for _, b := range got {
			if b != 0 {
				zero = false
				break
			}
		}
		if prefix {
			if same {
				good += uint64(end - i)
				continue
			}
			j := 0
			for j < len(got) && got[j] == exp[j] {
				j++
			}
			good += uint64(j)
			prefix = false
			// Zeros may follow the good prefix inside its sector:
			// an end of file was there, and a later write past it
			// grew the file without its data landing. That is not
			// stale data (h_durable's check allows it the same way).
			for j < len(got) && got[j] == 0 {
				j++
			}
			if j == len(got) {
				continue
			}
		}
		if !same && !zero && bad < 0 {
			bad = int64(i)
		}
	}
	return good, bad
}
