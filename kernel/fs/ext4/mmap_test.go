package ext4

import (
	"bytes"
	"errors"
	"fmt"
	"sync"
	"testing"

	"shortbread/kernel/abi/linux"
	"shortbread/kernel/pagecache"
)

// TestMappedPages: a page held for a mapping is the one read(2) and
// write(2) use; a store through a writable hold into a hole allocates
// the page's blocks at the hold, reaches the disk by Sync (and by the
// next Sync again after a later store), and the image stays clean;
// truncate past a held page takes it out of the file without freeing
// its frame; every frame comes back when the holds and the file go.
func TestMappedPages(t *testing.T) {
	for _, v := range writeVariants {
		t.Run(v.name, func(t *testing.T) {
			f, d, c, fr := mountCached(t, v.opts...)
			must := okIno(t)
			ino := must(f.Create(RootIno, "m", linux.S_IFREG|0o644, 0, 0, 0, 0))
			model := bytes.Repeat([]byte("0123456789abcdef"), 3*pagecache.PageSize/16)
			writeAll(t, f, ino, model[:pagecache.PageSize], 0)
			ok(t, f.Truncate(ino, uint64(len(model))))
			clear(model[pagecache.PageSize:]) // pages 1 and 2: a hole
			ok(t, f.Sync())
			if !f.Mappable(ino) {
				t.Fatal("regular file not mappable")
			}
			before, _ := f.Stat(ino)
			pa, err := f.HoldPage(ino, 0, false)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(fr.Page(pa)[:], model[:pagecache.PageSize]) {
				t.Fatal("held page does not hold the file's bytes")
			}
			writeAll(t, f, ino, []byte("WRITE"), 100)
			copy(model[100:], "WRITE")
			if string(fr.Page(pa)[100:105]) != "WRITE" {
				t.Fatal("write(2) not seen through the held page")
			}
			// A store into the hole: blocks at the hold, not at write-back.
			pb, err := f.HoldPage(ino, 1, true)
			if err != nil {
				t.Fatal(err)
			}
			after, _ := f.Stat(ino)
			if after.Blocks <= before.Blocks {
				t.Fatalf("writable hold on a hole allocated nothing: %d blocks, was %d", after.Blocks, before.Blocks)
			}
			copy(fr.Page(pb)[10:], "mapped")
			copy(model[pagecache.PageSize+10:], "mapped")
			ok(t, f.Sync())
			if got := readDisk(t, d, "m"); !bytes.Equal(got, model) {
				t.Fatal("store through the mapping not on the disk after Sync")
			}
			copy(fr.Page(pb)[20:], "later")
			copy(model[pagecache.PageSize+20:], "later")
			ok(t, f.Sync())
			if got := readDisk(t, d, "m"); !bytes.Equal(got, model) {
				t.Fatal("store after a write-back not on the disk after the next Sync")
			}
			got := make([]byte, len(model))
			if n, err := f.ReadAt(ino, got, 0); n != len(model) || err != nil || !bytes.Equal(got, model) {
				t.Fatalf("read(2) of the mapped file: %d, %v", n, err)
			}
			f.PutPage(ino, 1, pb, true)
			copy(fr.Page(pb)[30:], "last")
			copy(model[pagecache.PageSize+30:], "last")
			ok(t, f.Sync()) // the last writable hold leaves one write-back
			if got := readDisk(t, d, "m"); !bytes.Equal(got, model) {
				t.Fatal("store before the last hold went lost")
			}
			if _, err := f.HoldPage(ino, 3, false); !errors.Is(err, pagecache.ErrRange) {
				t.Fatalf("hold past the end: %v", err)
			}
			// Truncate below a held page: out of the file, frame kept.
			pc, err := f.HoldPage(ino, 2, true)
			if err != nil {
				t.Fatal(err)
			}
			ok(t, f.Truncate(ino, 2*pagecache.PageSize))
			model = model[:2*pagecache.PageSize]
			if fr.Page(pc) == nil || c.Detached() != 1 {
				t.Fatal("truncated held page freed")
			}
			if _, err := f.HoldPage(ino, 2, false); !errors.Is(err, pagecache.ErrRange) {
				t.Fatalf("hold past the new end: %v", err)
			}
			f.PutPage(ino, 2, pc, true)
			if fr.Page(pc) != nil || c.Detached() != 0 {
				t.Fatal("truncated frame not freed with its last hold")
			}
			ok(t, f.Sync())
			if got := readDisk(t, d, "m"); !bytes.Equal(got, model) {
				t.Fatal("file after the truncate")
			}
			// Unlinked while held, then let go: everything comes back.
			ok(t, f.Unlink(RootIno, "m"))
			f.Hold(ino)
			f.PutPage(ino, 0, pa, false)
			ok(t, f.Release(ino))
			ok(t, f.Sync())
			live := fr.Live()
			if live != 0 || c.ReadStats().File != 0 {
				t.Fatalf("%d frames, %d file pages left", live, c.ReadStats().File)
			}
			ok(t, f.syncHome())
			fsck(t, d)
		})
	}
}

// TestMappedPageCutByTruncate: a truncate to the middle of a held page
// keeps the page (the mapping and read(2) still share it), zeros its
// tail, and a store below the new end still reaches the disk.
func TestMappedPageCutByTruncate(t *testing.T) {
	f, d, c, fr := mountCached(t, "-t", "ext4")
	ino := okIno(t)(f.Create(RootIno, "cut", linux.S_IFREG|0o644, 0, 0, 0, 0))
	model := bytes.Repeat([]byte("x"), 2*pagecache.PageSize)
	writeAll(t, f, ino, model, 0)
	pa, err := f.HoldPage(ino, 1, true)
	if err != nil {
		t.Fatal(err)
	}
	const size = pagecache.PageSize + 300
	ok(t, f.Truncate(ino, size))
	model = model[:size]
	if c.Detached() != 0 {
		t.Fatal("the page the new end cuts left the file")
	}
	if fr.Page(pa)[300] != 0 || fr.Page(pa)[pagecache.PageSize-1] != 0 {
		t.Fatal("tail past the new end not zeroed")
	}
	copy(fr.Page(pa)[10:], "kept")
	copy(model[pagecache.PageSize+10:], "kept")
	got := make([]byte, 10)
	if n, _ := f.ReadAt(ino, got, pagecache.PageSize+10); n != 10 || string(got[:4]) != "kept" {
		t.Fatalf("read(2) after the truncate: %q", got[:n])
	}
	f.PutPage(ino, 1, pa, true)
	ok(t, f.Sync())
	if got := readDisk(t, d, "cut"); !bytes.Equal(got, model) {
		t.Fatalf("on the disk: %d bytes", len(got))
	}
	ok(t, f.syncHome())
	fsck(t, d)
}

// TestMappedReadsShared: read holds of a file whose pages are open run
// holding FS.mu only for reading (they finish while the test holds it
// so), pages not yet cached included; holds from several goroutines at
// once see the file's bytes; and once every hold is given back and the
// file goes, no frame is left.
func TestMappedReadsShared(t *testing.T) {
	for _, v := range writeVariants {
		t.Run(v.name, func(t *testing.T) {
			f, d, c, fr := mountCached(t, v.opts...)
			ino := okIno(t)(f.Create(RootIno, "m", linux.S_IFREG|0o644, 0, 0, 0, 0))
			const pages = 8
			model := make([]byte, pages*pagecache.PageSize)
			for i := range model {
				model[i] = byte(i*7 + i/pagecache.PageSize)
			}
			writeAll(t, f, ino, model, 0)
			ok(t, f.Sync())
			f.Forget(ino) // its pages leave the cache: holds must read them
			check := func(idx uint64) error {
				pa, err := f.HoldPage(ino, idx, false)
				if err != nil {
					return err
				}
				defer f.PutPage(ino, idx, pa, false)
				if !bytes.Equal(fr.Page(pa)[:], model[idx*pagecache.PageSize:(idx+1)*pagecache.PageSize]) {
					return fmt.Errorf("page %d: not the file's bytes", idx)
				}
				return nil
			}
			// The first hold opens the file's pages (the exclusive path).
			ok(t, check(0))
			before := filePages(c)
			inHandles(t, f, func() error {
				for idx := uint64(1); idx < pages; idx++ {
					if err := check(idx); err != nil {
						return err
					}
				}
				_, err := f.HoldPage(ino, pages, false)
				if !errors.Is(err, pagecache.ErrRange) {
					return fmt.Errorf("hold past the end: %v", err)
				}
				return nil
			})
			if filePages(c) <= before {
				t.Errorf("the shared holds read no page in: %d file pages, %d before", filePages(c), before)
			}
			var wg sync.WaitGroup
			errs := make(chan error, 4)
			for w := range 4 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := range 200 {
						if err := check(uint64(i*3+w) % pages); err != nil {
							errs <- err
							return
						}
					}
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatal(err)
			}
			ok(t, f.Unlink(RootIno, "m"))
			ok(t, f.Sync())
			if live := fr.Live(); live != 0 || c.ReadStats().File != 0 {
				t.Fatalf("%d frames, %d file pages left", live, c.ReadStats().File)
			}
			fsck(t, d)
		})
	}
}
