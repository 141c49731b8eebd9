package ext4

import (
	"bytes"
	"fmt"
	"sync"
	"testing"

	"shortbread/kernel/abi/linux"
	"shortbread/kernel/mm"
	"shortbread/kernel/pagecache"
)

// TestHandleAppend: appends run as handles (they finish while the test
// holds FS.mu for reading), and appends to one file from many writers
// at once neither interleave nor lose a byte: every record is whole, in
// its writer's order, and the size is their sum; each call's returned
// end is where its record ends. An append too big for a handle still
// works (alone). Then e2fsck finds the image clean.
func TestHandleAppend(t *testing.T) {
	dev := loadImage(t, mkfs(t, "32M", "", "-t", "ext4"))
	f, err := mountDev(t, dev, Options{Pages: pagecache.New(&mm.HeapPhys{}, 4<<20)})
	if err != nil {
		t.Fatal(err)
	}
	ino := okIno(t)(f.Create(RootIno, "log", linux.S_IFREG|0o644, 0, 0, 0, 0))
	before := f.handlesRun.Load()
	inHandles(t, f, func() error {
		_, end, err := f.Append(ino, []byte("first\n"))
		if err == nil && end != 6 {
			err = fmt.Errorf("end %d after 6 bytes", end)
		}
		return err
	})
	if f.handlesRun.Load() == before {
		t.Error("the append did not run as a handle")
	}

	const writers, records = 6, 150
	record := func(w, i int) []byte {
		// Lengths from 40 bytes to past a block, so appends cross
		// block boundaries and allocate.
		head := fmt.Sprintf("<%d:%d:", w, i)
		return append([]byte(head), append(bytes.Repeat([]byte{byte('a' + w)}, 40+(i*37+w*101)%4200), '>')...)
	}
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	var total int64 = 6
	var mu sync.Mutex
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range records {
				r := record(w, i)
				n, end, err := f.Append(ino, r)
				if err != nil || n != len(r) {
					errs <- fmt.Errorf("writer %d record %d: %d of %d bytes, %v", w, i, n, len(r), err)
					return
				}
				got := make([]byte, len(r))
				if _, err := f.ReadAt(ino, got, end-int64(len(r))); err != nil || !bytes.Equal(got, r) {
					errs <- fmt.Errorf("writer %d record %d: not at its returned end %d (%v)", w, i, end, err)
					return
				}
				mu.Lock()
				total += int64(len(r))
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	data := readAll(t, f, ino)
	if int64(len(data)) != total {
		t.Fatalf("file holds %d bytes, the appends wrote %d", len(data), total)
	}
	rest := data[6:]
	next := make([]int, writers)
	for len(rest) > 0 {
		var w, i int
		if _, err := fmt.Sscanf(string(rest[:min(len(rest), 16)]), "<%d:%d:", &w, &i); err != nil || w < 0 || w >= writers {
			t.Fatalf("at byte %d: no record starts here (%q)", len(data)-len(rest), rest[:min(len(rest), 16)])
		}
		r := record(w, i)
		if i != next[w] || !bytes.HasPrefix(rest, r) {
			t.Fatalf("at byte %d: record %d:%d torn or out of order (writer %d's next is %d)", len(data)-len(rest), w, i, w, next[w])
		}
		next[w]++
		rest = rest[len(r):]
	}
	for w, n := range next {
		if n != records {
			t.Errorf("writer %d: %d records in the file, want %d", w, n, records)
		}
	}

	// Bigger than a handle takes: the exclusive path.
	big := bytes.Repeat([]byte("B"), handleMaxWrite+1)
	if n, end, err := f.Append(ino, big); err != nil || n != len(big) || end != total+int64(len(big)) {
		t.Errorf("big append: %d bytes, end %d, %v; want %d, %d", n, end, err, len(big), total+int64(len(big)))
	}
	ok(t, f.Sync())
	fsck(t, dev)
}
