package ext4

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"shortbread/kernel/abi/linux"
)

// TestBigDirectory fills a new directory with 10,000 names: it gets an
// index past one block, whose leaves split, whose root grows a level and
// whose nodes split; e2fsck checks the index, every name is found, and
// removing and adding names keeps it valid.
func TestBigDirectory(t *testing.T) {
	t.Parallel() // one of the longest: with the others, on every core
	for _, v := range []struct {
		name   string
		opts   []string
		linear bool
	}{
		{"ext4-1k", []string{"-t", "ext4", "-b", "1024"}, false},
		{"ext4-4k", []string{"-t", "ext4", "-b", "4096"}, false},
		{"ext2", []string{"-t", "ext2", "-b", "1024"}, false},
		{"ext4-linear", []string{"-t", "ext4", "-b", "1024"}, true},
	} {
		t.Run(v.name, func(t *testing.T) {
			f, dev := mountRW(t, "64M", append(v.opts, "-N", "20000")...)
			f.noIndex = v.linear
			must := okIno(t)
			d := must(f.Mkdir(RootIno, "big", 0o755, 0, 0))
			const n = 10000
			start := time.Now()
			for i := 0; i < n; i++ {
				must(f.Create(d, fmt.Sprintf("message-%06d.eml", i*7919%100000), linux.S_IFREG|0o600, 0, 0, 0, 0))
			}
			per := time.Since(start) / n
			t.Logf("%v per create in a directory of up to %d names", per, n)
			in, _ := f.iget(d)
			if indexed := in.flags&flagIndex != 0; indexed == v.linear {
				t.Fatalf("index flag %v", indexed)
			}
			for i := 0; i < n; i += 97 {
				if _, err := f.Lookup(d, fmt.Sprintf("message-%06d.eml", i*7919%100000)); err != nil {
					t.Fatalf("lookup %d: %v", i, err)
				}
			}
			if _, err := f.Lookup(d, "message-999999.eml"); err != linux.ENOENT {
				t.Errorf("lookup of a missing name: %v", err)
			}
			fsck(t, dev)
			if !v.linear {
				out := debugfs(t, dev, "htree big")
				if m := regexp.MustCompile(`Indirect levels: (\d)`).FindStringSubmatch(out); m == nil || (v.name == "ext4-1k" && m[1] != "1") {
					t.Errorf("htree: %v", m)
				}
			}
			for i := 0; i < n; i += 2 {
				ok(t, f.Unlink(d, fmt.Sprintf("message-%06d.eml", i*7919%100000)))
			}
			for i := 0; i < 2000; i++ {
				must(f.Create(d, fmt.Sprintf("again-%d", i), linux.S_IFREG|0o600, 0, 0, 0, 0))
			}
			fsck(t, dev)
			ents, err := f.ReadDir(d)
			ok(t, err)
			if len(ents) != n/2+2000+2 {
				t.Errorf("%d entries, want %d", len(ents), n/2+2002)
			}
			out := debugfs(t, dev, "ls big")
			if c := strings.Count(out, "again-"); c != 2000 {
				t.Errorf("debugfs lists %d again- names", c)
			}
		})
	}
}

// TestGrowLinuxIndex adds thousands of names to a directory indexed by
// e2fsck -D: the index is kept, not dropped.
func TestGrowLinuxIndex(t *testing.T) {
	needTools(t)
	src := makeTree(t)
	img := mkfs(t, "160M", src, "-t", "ext4")
	indexDirs(t, img)
	dev := loadImage(t, img)
	f, err := mountDev(t, dev, Options{})
	ok(t, err)
	many := walk(t, f, "many")
	for i := 0; i < 4000; i++ {
		okIno(t)(f.Create(many, fmt.Sprintf("added-%d", i), linux.S_IFREG|0o644, 0, 0, 0, 0))
	}
	in, _ := f.iget(many)
	if in.flags&flagIndex == 0 {
		t.Error("the index was dropped")
	}
	fsck(t, dev)
	for i := 0; i < 3000; i += 101 {
		if _, err := f.Lookup(many, fmt.Sprintf("entry-with-a-longish-name-%05d", i)); err != nil {
			t.Error(err)
		}
	}
}

// TestListWhileGrowing lists an indexed directory a few names at a time
// while names are added (splitting leaves, moving names between blocks):
// every name there before the listing is seen exactly once, none twice.
func TestListWhileGrowing(t *testing.T) {
	f, dev := mountRW(t, "32M", "-t", "ext4", "-b", "1024", "-N", "20000")
	must := okIno(t)
	d := must(f.Mkdir(RootIno, "d", 0o755, 0, 0))
	before := map[string]bool{}
	for i := 0; i < 3000; i++ {
		n := fmt.Sprintf("old-%d", i)
		must(f.Create(d, n, linux.S_IFREG|0o600, 0, 0, 0, 0))
		before[n] = true
	}
	seen := map[string]int{}
	pos, added := int64(0), 0
	for {
		ents, err := f.ReadDirAt(d, pos, 40)
		ok(t, err)
		if len(ents) == 0 {
			break
		}
		for _, e := range ents {
			seen[e.Name]++
			pos = e.Off + 1
		}
		for j := 0; j < 60; j++ {
			must(f.Create(d, fmt.Sprintf("new-%d", added), linux.S_IFREG|0o600, 0, 0, 0, 0))
			added++
		}
	}
	for n, c := range seen {
		if c != 1 {
			t.Errorf("%s listed %d times", n, c)
		}
	}
	for n := range before {
		if seen[n] != 1 {
			t.Errorf("%s not listed", n)
		}
	}
	if seen["."] != 1 || seen[".."] != 1 {
		t.Error(". or .. missing")
	}
	t.Logf("%d names added during the listing", added)
	fsck(t, dev)
}
