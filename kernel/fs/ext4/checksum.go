package ext4

import (
	"encoding/binary"
	"hash/crc32"
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// crc32c continues a crc32c over p the way Linux's crc32c_le does: no
// inversion of the running value on entry or exit (ext4 seeds it with ~0
// itself and stores the raw result).
func crc32c(crc uint32, p []byte) uint32 {
	return ^crc32.Update(^crc, castagnoli, p)
}

func crc32cU32(crc, v uint32) uint32 {
	var b [4]byte
	binary.LittleEndian.PutUint32(b[:], v)
	return crc32c(crc, b[:])
}

// crc16 is the CRC-16 (polynomial 0x8005, reflected: 0xA001) of group
// descriptor checksums without metadata_csum (the gdt_csum feature).
func crc16(crc uint16, p []byte) uint16 {
	for _, b := range p {
		crc ^= uint16(b)
		for i := 0; i < 8; i++ {
			if crc&1 != 0 {
				crc = crc>>1 ^ 0xA001
			} else {
				crc >>= 1
			}
		}
	}
	return crc
}

var le = binary.LittleEndian
