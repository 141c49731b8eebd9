package wcache

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

// mem is a Store in memory.
type mem []byte

func (m mem) ReadAt(p []byte, off int64) (int, error)  { return copy(p, m[off:]), nil }
func (m mem) WriteAt(p []byte, off int64) (int, error) { return copy(m[off:], p), nil }

const diskSize = 64 * SectorSize

func newDisk(t *testing.T) (*Disk, mem) {
	t.Helper()
	m := make(mem, diskSize)
	d, err := New(m, diskSize)
	if err != nil {
		t.Fatal(err)
	}
	return d, m
}

func fill(b byte, n int) []byte { return bytes.Repeat([]byte{b}, n) }

func read(t *testing.T, d *Disk, off, n int64) []byte {
	t.Helper()
	p := make([]byte, n)
	if err := d.ReadAt(p, off); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestReadsSeeCachedWrites(t *testing.T) {
	d, m := newDisk(t)
	if err := d.Write(fill(1, 1024), 512, false); err != nil {
		t.Fatal(err)
	}
	// unaligned: completed from what the disk holds (the cached write)
	if err := d.Write(fill(2, 10), 1000, false); err != nil {
		t.Fatal(err)
	}
	got := read(t, d, 0, 2048)
	want := append(append(append(fill(0, 512), fill(1, 1000-512)...), fill(2, 10)...), fill(1, 1536-1010)...)
	want = append(want, fill(0, 512)...)
	if !bytes.Equal(got, want) {
		t.Fatalf("read %v\nwant %v", got, want)
	}
	if !bytes.Equal(m[:2048], make([]byte, 2048)) {
		t.Fatal("a cached write reached the medium before a flush")
	}
}

func TestFlushedWritesSurviveEveryCut(t *testing.T) {
	for mode := Mode(0); mode < nModes; mode++ {
		for seed := uint64(0); seed < 20; seed++ {
			d, m := newDisk(t)
			rng := rand.New(rand.NewPCG(seed, 7))
			if err := d.Write(fill(1, 4096), 0, false); err != nil {
				t.Fatal(err)
			}
			if err := d.Flush(); err != nil {
				t.Fatal(err)
			}
			// later cached writes elsewhere and over half of it
			if err := d.Write(fill(2, 4096), 8192, false); err != nil {
				t.Fatal(err)
			}
			if _, err := d.CutWith(mode, rng); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(m[:4096], fill(1, 4096)) {
				t.Fatalf("%v seed %d: flushed data lost", mode, seed)
			}
		}
	}
}

func TestFUAWriteSurvivesAndSupersedes(t *testing.T) {
	for mode := Mode(0); mode < nModes; mode++ {
		for seed := uint64(0); seed < 20; seed++ {
			d, m := newDisk(t)
			rng := rand.New(rand.NewPCG(seed, 9))
			// an older cached version of the FUA write's sectors must
			// not land over it
			if err := d.Write(fill(1, 2048), 0, false); err != nil {
				t.Fatal(err)
			}
			if err := d.Write(fill(3, 1024), 512, true); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(m[512:1536], fill(3, 1024)) {
				t.Fatal("a FUA write is not on the medium when it completes")
			}
			if _, err := d.CutWith(mode, rng); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(m[512:1536], fill(3, 1024)) {
				t.Fatalf("%v seed %d: FUA data overwritten by an older write", mode, seed)
			}
		}
	}
}

// Every sector after a cut holds its durable contents or one of the
// versions written to it since, each sector whole.
func TestCutLandsOnlyWrittenVersions(t *testing.T) {
	for mode := Mode(0); mode < nModes; mode++ {
		for seed := uint64(0); seed < 50; seed++ {
			d, m := newDisk(t)
			rng := rand.New(rand.NewPCG(seed, 11))
			versions := make([]map[byte]bool, diskSize/SectorSize)
			for i := range versions {
				versions[i] = map[byte]bool{0: true}
			}
			for w := 1; w <= 20; w++ {
				s := rng.IntN(diskSize/SectorSize - 4)
				n := 1 + rng.IntN(4)
				if err := d.Write(fill(byte(w), n*SectorSize), int64(s*SectorSize), false); err != nil {
					t.Fatal(err)
				}
				for i := s; i < s+n; i++ {
					versions[i][byte(w)] = true
				}
			}
			if _, err := d.CutWith(mode, rng); err != nil {
				t.Fatal(err)
			}
			for i := range versions {
				sec := m[i*SectorSize : (i+1)*SectorSize]
				if !bytes.Equal(sec, fill(sec[0], SectorSize)) || !versions[i][sec[0]] {
					t.Fatalf("%v seed %d: sector %d holds %v, never written whole", mode, seed, i, sec[:8])
				}
			}
		}
	}
}

func TestModesHonoured(t *testing.T) {
	setup := func(t *testing.T) (*Disk, mem) {
		d, m := newDisk(t)
		for w := 0; w < 8; w++ {
			if err := d.Write(fill(byte(w+1), 2*SectorSize), int64(w*2*SectorSize), false); err != nil {
				t.Fatal(err)
			}
		}
		return d, m
	}
	written := func(m mem, w int) (whole, none bool) {
		sec := m[w*2*SectorSize : (w+1)*2*SectorSize]
		return bytes.Equal(sec, fill(byte(w+1), len(sec))), bytes.Equal(sec, make([]byte, len(sec)))
	}
	t.Run("lose", func(t *testing.T) {
		d, m := setup(t)
		c, err := d.CutWith(Lose, rand.New(rand.NewPCG(1, 1)))
		if err != nil || c.Landed != 0 || !bytes.Equal(m, make(mem, diskSize)) {
			t.Fatalf("lose landed something: %v %v", c, err)
		}
	})
	t.Run("keep", func(t *testing.T) {
		d, m := setup(t)
		want := read(t, d, 0, diskSize)
		c, err := d.CutWith(Keep, rand.New(rand.NewPCG(1, 1)))
		if err != nil || c.Landed != 16 || !bytes.Equal(m, want) {
			t.Fatalf("keep lost something: %v %v", c, err)
		}
	})
	t.Run("prefix", func(t *testing.T) {
		for seed := uint64(0); seed < 20; seed++ {
			d, m := setup(t)
			if _, err := d.CutWith(Prefix, rand.New(rand.NewPCG(seed, 1))); err != nil {
				t.Fatal(err)
			}
			gap := false
			for w := 0; w < 8; w++ {
				whole, none := written(m, w)
				if !whole && !none || whole && gap {
					t.Fatalf("seed %d: write %d landed out of order or in part", seed, w)
				}
				gap = gap || none
			}
		}
	})
	t.Run("writes", func(t *testing.T) {
		counts := map[int]bool{}
		for seed := uint64(0); seed < 40; seed++ {
			d, m := setup(t)
			c, err := d.CutWith(Writes, rand.New(rand.NewPCG(seed, 1)))
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			for w := 0; w < 8; w++ {
				whole, none := written(m, w)
				if !whole && !none {
					t.Fatalf("seed %d: write %d landed in part", seed, w)
				}
				if whole {
					n++
				}
			}
			if n != c.WritesTouched {
				t.Fatalf("seed %d: %d writes landed, cut says %d", seed, n, c.WritesTouched)
			}
			counts[n] = true
		}
		if !counts[0] && !counts[1] || len(counts) < 3 {
			t.Fatalf("the subsets of writes are not varied: %v", counts)
		}
	})
	t.Run("sectors", func(t *testing.T) {
		partial := false
		for seed := uint64(0); seed < 40; seed++ {
			d, m := setup(t)
			if _, err := d.CutWith(Sectors, rand.New(rand.NewPCG(seed, 1))); err != nil {
				t.Fatal(err)
			}
			for w := 0; w < 8; w++ {
				whole, none := written(m, w)
				partial = partial || !whole && !none
			}
		}
		if !partial {
			t.Fatal("no write ever landed in part")
		}
	})
}

// Overlapping cached writes landing in random order: the older version
// can end on the medium over the newer (it reached the disk first and the
// newer was lost).
func TestReorderedOverlaps(t *testing.T) {
	seen := map[byte]bool{}
	for seed := uint64(0); seed < 60; seed++ {
		d, m := newDisk(t)
		if err := d.Write(fill(1, SectorSize), 0, false); err != nil {
			t.Fatal(err)
		}
		if err := d.Write(fill(2, SectorSize), 0, false); err != nil {
			t.Fatal(err)
		}
		if _, err := d.CutWith(Sectors, rand.New(rand.NewPCG(seed, 3))); err != nil {
			t.Fatal(err)
		}
		seen[m[0]] = true
	}
	if !seen[0] || !seen[1] || !seen[2] {
		t.Fatalf("versions seen after cuts: %v, want 0, 1 and 2", seen)
	}
}

func TestBadRanges(t *testing.T) {
	d, _ := newDisk(t)
	if err := d.Write(fill(1, 512), diskSize-256, false); err == nil {
		t.Fatal("a write past the end succeeded")
	}
	if err := d.ReadAt(make([]byte, 1), -1); err == nil {
		t.Fatal("a read at -1 succeeded")
	}
	if _, err := New(make(mem, 100), 100); err == nil {
		t.Fatal("a disk of 100 bytes was made")
	}
}

// With 4 KiB atomic units a cut keeps each aligned 4 KiB of a write whole.
func TestAtom(t *testing.T) {
	partial := false
	for seed := uint64(0); seed < 40; seed++ {
		m := make(mem, 64*SectorSize)
		d, err := New(m, int64(len(m)))
		if err != nil {
			t.Fatal(err)
		}
		if err := d.SetAtom(4096); err != nil {
			t.Fatal(err)
		}
		if err := d.Write(fill(7, 16384), 4096, false); err != nil {
			t.Fatal(err)
		}
		if _, err := d.CutWith(Sectors, rand.New(rand.NewPCG(seed, 5))); err != nil {
			t.Fatal(err)
		}
		landed := 0
		for u := 1; u < 5; u++ {
			b := m[u*4096 : (u+1)*4096]
			whole, none := bytes.Equal(b, fill(7, 4096)), bytes.Equal(b, make([]byte, 4096))
			if !whole && !none {
				t.Fatalf("seed %d: 4 KiB unit %d landed in part", seed, u)
			}
			if whole {
				landed++
			}
		}
		partial = partial || landed > 0 && landed < 4
	}
	if !partial {
		t.Fatal("no write landed in part")
	}
	d, _ := New(make(mem, 4096), 4096)
	if d.SetAtom(1000) == nil || d.SetAtom(256) == nil {
		t.Fatal("atomic units of 1000 and 256 bytes were taken")
	}
}
