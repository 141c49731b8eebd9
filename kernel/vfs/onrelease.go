package vfs

import "sync"

// ReleaseWatcher is told when an open file's last reference goes: how an
// epoll instance forgets its interest in a file that was closed
// everywhere, without holding a reference that would keep the file open
// (Linux's eventpoll_release, called from __fput).
type ReleaseWatcher interface {
	// FileReleased runs on the goroutine that dropped the last
	// reference, with no lock of the file held, before the File's
	// Release: the file can still be asked for its readiness until
	// FileReleased returns.
	FileReleased(f *OpenFile)
}

// releaseWatchers are an open file's ReleaseWatchers, made with the
// first one (most files never have any).
type releaseWatchers struct {
	mu sync.Mutex
	ws []ReleaseWatcher // protected by mu
}

// OnRelease registers w to be told when f's last reference goes, until
// StopOnRelease.
// Preconditions: the caller holds a reference to f.
func (f *OpenFile) OnRelease(w ReleaseWatcher) {
	rw := f.onRelease.Load()
	if rw == nil {
		f.onRelease.CompareAndSwap(nil, &releaseWatchers{})
		rw = f.onRelease.Load()
	}
	rw.mu.Lock()
	rw.ws = append(rw.ws, w)
	rw.mu.Unlock()
}

// StopOnRelease undoes OnRelease(w). A release already under way may
// still tell w.
func (f *OpenFile) StopOnRelease(w ReleaseWatcher) {
	rw := f.onRelease.Load()
	if rw == nil {
		return
	}
	rw.mu.Lock()
	for i, x := range rw.ws {
		if x == w {
			rw.ws = append(rw.ws[:i], rw.ws[i+1:]...)
			break
		}
	}
	rw.mu.Unlock()
}

// FindReleaseWatcher returns the first of f's release watchers for which
// match is true, or nil: how epoll finds its interest in a file from the
// file, with no table of its own to look it up in. match runs with the
// watchers' lock held: it must not call f's OnRelease or StopOnRelease.
func (f *OpenFile) FindReleaseWatcher(match func(ReleaseWatcher) bool) ReleaseWatcher {
	rw := f.onRelease.Load()
	if rw == nil {
		return nil
	}
	rw.mu.Lock()
	var found ReleaseWatcher
	for _, w := range rw.ws {
		if match(w) {
			found = w
			break
		}
	}
	rw.mu.Unlock()
	return found
}

// tellReleased runs the release watchers, outside their lock (a watcher
// takes its own locks, and may call StopOnRelease).
func (f *OpenFile) tellReleased() {
	rw := f.onRelease.Load()
	if rw == nil {
		return
	}
	rw.mu.Lock()
	ws := rw.ws
	rw.ws = nil
	rw.mu.Unlock()
	for _, w := range ws {
		w.FileReleased(f)
	}
}
