package ext4

import (
	"os"
	"testing"

	"shortbread/kernel/abi/linux"
)

// TestTornSuperblock: a disk keeps 512-byte sectors whole, not the
// 1024-byte superblock. A power cut while a superblock write is in the
// cache may land one of its two sectors: the file system must still mount.
//
// It does not yet (found by tools/powercut tearing writes in 512-byte
// sectors): every commit writes the superblock home three times (setting
// needs_recovery, as the checkpoint of the logged copy that carries the
// free counts, clearing needs_recovery), and a torn one fails its
// checksum, so the next mount refuses the file system. Linux writes it
// home only at mount, unmount and for the orphan list. Disabled until
// that is fixed; EXT4_TORN=1 runs it.
func TestTornSuperblock(t *testing.T) {
	if os.Getenv("EXT4_TORN") == "" {
		t.Skip("known failure (issue 13: torn superblock); EXT4_TORN=1 runs it")
	}
	for _, v := range []struct {
		name string
		opts []string
	}{
		{"ext4", []string{"-t", "ext4"}},
		{"ext4-4k", []string{"-t", "ext4", "-b", "4096"}},
	} {
		t.Run(v.name, func(t *testing.T) {
			img := loadImage(t, mkfs(t, "16M", "", v.opts...))
			d := &recDev{memDev: memDev{b: append([]byte(nil), img.b...)}, base: append([]byte(nil), img.b...)}
			f, err := Mount(d, Options{})
			ok(t, err)
			for i := 0; i < 3; i++ {
				okIno(t)(f.Create(RootIno, string(rune('a'+i)), linux.S_IFREG|0o644, 0, 0, 0, 0))
				ok(t, f.Sync())
			}
			torn := 0
			for k := -1; k < len(d.flushes); k++ {
				durable := 0
				if k >= 0 {
					durable = d.flushes[k]
				}
				end := len(d.writes)
				if k+1 < len(d.flushes) {
					end = d.flushes[k+1]
				}
				for half := 0; half < 2; half++ {
					b := append([]byte(nil), d.base...)
					tore := false
					for i, w := range d.writes[:end] {
						lo, hi := w.off, w.off+int64(len(w.data))
						if i < durable || hi <= superOffset || lo >= superOffset+1024 {
							copy(b[lo:], w.data)
							continue
						}
						// the superblock's sector that lands: its first
						// or its second half
						s := int64(superOffset + 512*half)
						copy(b[s:s+512], w.data[s-lo:s-lo+512])
						tore = true
					}
					if !tore {
						continue
					}
					torn++
					c := &memDev{b: b}
					if _, err := mountDev(c, Options{}); err != nil {
						t.Errorf("cut after flush %d, superblock torn (sector %d landed): %v", k, half, err)
					}
				}
			}
			if torn == 0 {
				t.Fatal("no superblock write after a flush: nothing was torn")
			}
		})
	}
}
