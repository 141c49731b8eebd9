package blk

import (
	"encoding/binary"
	"encoding/json"
	"hash/crc32"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// hostTool finds a partitioning tool of the host (Debian's gdisk and
// fdisk packages, which make deps installs); tests needing it skip
// without it.
func hostTool(t *testing.T, name string) string {
	t.Helper()
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	for _, dir := range []string{"/usr/sbin", "/sbin"} {
		if p := filepath.Join(dir, name); exists(p) {
			return p
		}
	}
	t.Skipf("%s not installed (Debian packages gdisk, fdisk)", name)
	return ""
}

func exists(p string) bool { _, err := os.Stat(p); return err == nil }

// hostImage makes an image of size bytes and runs the tool on it; input
// is sfdisk's script.
func hostImage(t *testing.T, size int64, input string, tool string, args ...string) string {
	t.Helper()
	img := filepath.Join(t.TempDir(), "disk.img")
	if err := os.WriteFile(img, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(img, size); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(hostTool(t, tool), append(args, img)...)
	cmd.Stdin = strings.NewReader(input)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s %v: %v\n%s", tool, args, err, out)
	}
	return img
}

// hostEntries is the table as sfdisk --json reads it: number, start and
// size of each partition (extended ones at their full size).
func hostEntries(t *testing.T, img string) map[int]Entry {
	t.Helper()
	out, err := exec.Command(hostTool(t, "sfdisk"), "--json", img).Output()
	if err != nil {
		t.Fatalf("sfdisk --json: %v", err)
	}
	var v struct {
		PartitionTable struct {
			Partitions []struct {
				Node        string
				Start, Size uint64
				Type        string
			}
		}
	}
	if err := json.Unmarshal(out, &v); err != nil {
		t.Fatal(err)
	}
	m := map[int]Entry{}
	for _, p := range v.PartitionTable.Partitions {
		n, err := strconv.Atoi(strings.TrimPrefix(p.Node, img))
		if err != nil {
			t.Fatalf("node %q", p.Node)
		}
		size := p.Size
		if p.Type == "5" || p.Type == "f" || p.Type == "85" {
			size = 2
		}
		m[n] = Entry{Num: n, Start: p.Start, Sectors: size}
	}
	return m
}

func memFromFile(t *testing.T, img string) *Mem {
	t.Helper()
	b, err := os.ReadFile(img)
	if err != nil {
		t.Fatal(err)
	}
	m := NewMem("sda", 512, uint64(len(b))/512)
	copy(m.data, b)
	return m
}

func sameEntries(t *testing.T, got []Entry, want map[int]Entry) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d partitions %+v, want %d %+v", len(got), got, len(want), want)
	}
	for _, e := range got {
		if want[e.Num] != e {
			t.Errorf("partition %d: got %+v, want %+v", e.Num, e, want[e.Num])
		}
	}
}

func sgdiskImage(t *testing.T) string {
	return hostImage(t, 16<<20, "", "sgdisk", "-n", "1:2048:+1M", "-n", "2:0:+2M", "-c", "2:data", "-n", "3:0:0")
}

func TestGPTFromSgdisk(t *testing.T) {
	img := sgdiskImage(t)
	got, format, notes, err := ReadTable(memFromFile(t, img))
	if err != nil || format != FormatGPT || len(notes) != 0 {
		t.Fatalf("format %q, notes %q, err %v", format, notes, err)
	}
	sameEntries(t, got, hostEntries(t, img))
	if got[2].Start != 8192 || got[2].Sectors != 32768-33-8192 {
		t.Errorf("last partition %+v does not fill the disk", got[2])
	}
}

func TestMBRFromSfdisk(t *testing.T) {
	img := hostImage(t, 16<<20, "label: dos\nstart=2048, size=4096, type=83\nstart=8192, size=16384, type=5\n"+
		"start=10240, size=2048, type=83\nstart=14336, size=2048\nstart=24576, size=4096, type=c\n", "sfdisk", "-q")
	got, format, notes, err := ReadTable(memFromFile(t, img))
	if err != nil || format != FormatMBR || len(notes) != 0 {
		t.Fatalf("format %q, notes %q, err %v", format, notes, err)
	}
	sameEntries(t, got, hostEntries(t, img))
	if len(got) != 5 {
		t.Errorf("want primaries 1-3 and logicals 5, 6: %+v", got)
	}
}

// setGPT rewrites the header at lba after fix changes it (and the entry
// array it names), recomputing both CRCs as a tool would.
func setGPT(m *Mem, lba uint64, fix func(hdr, entries []byte)) {
	hdr := m.data[lba*512 : lba*512+512]
	ents := m.data[binary.LittleEndian.Uint64(hdr[72:])*512:][:128*128]
	fix(hdr, ents)
	binary.LittleEndian.PutUint32(hdr[88:], crc32.ChecksumIEEE(ents))
	clear(hdr[16:20])
	binary.LittleEndian.PutUint32(hdr[16:], crc32.ChecksumIEEE(hdr[:92]))
}

func TestGPTBackupUsed(t *testing.T) {
	img := sgdiskImage(t)
	want := hostEntries(t, img)
	for name, damage := range map[string]func(m *Mem){
		"header CRC":  func(m *Mem) { m.data[512+16] ^= 1 },
		"signature":   func(m *Mem) { m.data[512] = 'X' },
		"entries CRC": func(m *Mem) { m.data[2*512+40] ^= 0x80 }, // first entry's last LBA
		"my LBA":      func(m *Mem) { setGPT(m, 1, func(h, _ []byte) { h[24] = 7 }) },
		"entry size":  func(m *Mem) { setGPT(m, 1, func(h, _ []byte) { h[84] = 64 }) },
		"usable past end": func(m *Mem) {
			setGPT(m, 1, func(h, _ []byte) { binary.LittleEndian.PutUint64(h[48:], m.Sectors()) })
		},
		"entries outside": func(m *Mem) {
			setGPT(m, 1, func(h, _ []byte) { binary.LittleEndian.PutUint64(h[72:], m.Sectors()-3) })
		},
	} {
		m := memFromFile(t, img)
		damage(m)
		got, format, notes, err := ReadTable(m)
		if err != nil || format != FormatGPT {
			t.Fatalf("%s: format %q err %v", name, format, err)
		}
		if len(notes) != 1 || !strings.Contains(notes[0], "primary GPT header invalid") {
			t.Errorf("%s: notes %q", name, notes)
		}
		sameEntries(t, got, want)
	}
}

func TestGPTBothDamaged(t *testing.T) {
	m := memFromFile(t, sgdiskImage(t))
	m.data[512+20] ^= 1
	m.data[len(m.data)-512+20] ^= 1
	got, format, notes, err := ReadTable(m)
	if err != nil || format != FormatGPT || len(got) != 0 || len(notes) != 2 {
		t.Errorf("got %+v format %q notes %q err %v", got, format, notes, err)
	}
	// Nor does the protective MBR itself count as a DOS table.
	m.data[512] = 0
	if got, _, _, _ := ReadTable(m); len(got) != 0 {
		t.Errorf("partitions from a protective MBR: %+v", got)
	}
}

func TestGPTEntryPastEnd(t *testing.T) {
	m := memFromFile(t, sgdiskImage(t))
	setGPT(m, 1, func(_, e []byte) { binary.LittleEndian.PutUint64(e[128+40:], m.Sectors()+100) })
	setGPT(m, 1, func(_, e []byte) {
		binary.LittleEndian.PutUint64(e[2*128+32:], 9000)
		binary.LittleEndian.PutUint64(e[2*128+40:], 8999)
	})
	got, _, notes, err := ReadTable(m)
	if err != nil || len(got) != 1 || got[0].Num != 1 {
		t.Fatalf("got %+v err %v", got, err)
	}
	if len(notes) != 2 || !strings.Contains(notes[0], "sda: p2") || !strings.Contains(notes[0], "beyond the end") {
		t.Errorf("notes %q", notes)
	}
}

// A disk smaller than its MBR says: the partitions wholly inside stay,
// the others are refused with a note.
func TestMBRDiskTooSmall(t *testing.T) {
	img := hostImage(t, 16<<20, "label: dos\nstart=2048, size=4096\nstart=8192, size=16384\n", "sfdisk", "-q")
	if err := os.Truncate(img, 8<<20); err != nil {
		t.Fatal(err)
	}
	got, _, notes, err := ReadTable(memFromFile(t, img))
	if err != nil || len(got) != 1 || got[0] != (Entry{1, 2048, 4096}) {
		t.Fatalf("got %+v err %v", got, err)
	}
	if len(notes) != 1 || !strings.Contains(notes[0], "p2") {
		t.Errorf("notes %q", notes)
	}
}

func putMBREntry(sec []byte, i int, typ byte, start, size uint32) {
	e := sec[446+16*i:]
	e[4] = typ
	binary.LittleEndian.PutUint32(e[8:], start)
	binary.LittleEndian.PutUint32(e[12:], size)
	sec[510], sec[511] = 0x55, 0xaa
}

func TestMBRChainLoop(t *testing.T) {
	m := NewMem("vda", 512, 4096)
	putMBREntry(m.data, 0, typeExtended, 100, 1000)
	ebr := m.data[100*512:]
	putMBREntry(ebr, 0, 0x83, 10, 20)
	putMBREntry(ebr, 1, typeExtended, 0, 50) // links back to itself
	got, _, notes, err := ReadTable(m)
	if err != nil || len(got) != 2 || got[1] != (Entry{5, 110, 20}) || got[0] != (Entry{1, 100, 2}) {
		t.Fatalf("got %+v err %v", got, err)
	}
	if len(notes) != 1 || !strings.Contains(notes[0], "loops") {
		t.Errorf("notes %q", notes)
	}
	// A logical partition reaching outside its extended partition.
	putMBREntry(ebr, 0, 0x83, 10, 2000)
	putMBREntry(ebr, 1, 0, 0, 0)
	if got, _, notes, _ := ReadTable(m); len(got) != 1 || len(notes) != 1 {
		t.Errorf("got %+v notes %q", got, notes)
	}
}

func TestNotATable(t *testing.T) {
	m := NewMem("vda", 512, 64)
	if got, f, _, err := ReadTable(m); len(got) != 0 || f != FormatNone || err != nil {
		t.Errorf("zeroed disk: %+v %q %v", got, f, err)
	}
	// A FAT boot sector: signature, but a boot indicator that is neither 0 nor 0x80.
	putMBREntry(m.data, 0, 0x83, 1, 10)
	m.data[446] = 0x12
	if got, f, _, _ := ReadTable(m); len(got) != 0 || f != FormatNone {
		t.Errorf("boot sector read as a table: %+v", got)
	}
	// The disk fails: the error comes back.
	m.Fail = func(uint64, bool) bool { return true }
	if _, _, _, err := ReadTable(m); err == nil {
		t.Errorf("read error lost")
	}
}

// 4096-byte sectors: the MBR counts in them.
func TestMBRLargeSectors(t *testing.T) {
	m := NewMem("nvme0n1", 4096, 1024)
	putMBREntry(m.data, 0, 0x83, 256, 512)
	got, _, _, err := ReadTable(m)
	if err != nil || len(got) != 1 || got[0] != (Entry{1, 256, 512}) {
		t.Fatalf("got %+v err %v", got, err)
	}
}

func FuzzReadTable(f *testing.F) {
	seed := make([]byte, 64*512)
	putMBREntry(seed, 0, typeGPT, 1, 63)
	copy(seed[512:], gptSignature)
	f.Add(seed)
	ext := make([]byte, 64*512)
	putMBREntry(ext, 0, typeExtended, 2, 60)
	f.Add(ext)
	f.Fuzz(func(t *testing.T, b []byte) {
		m := NewMem("sda", 512, uint64(len(b)/512))
		copy(m.data, b)
		entries, _, _, _ := ReadTable(m)
		for _, e := range entries {
			if e.Start+e.Sectors > m.Sectors() || e.Sectors == 0 {
				t.Fatalf("entry %+v outside a disk of %d sectors", e, m.Sectors())
			}
		}
	})
}
