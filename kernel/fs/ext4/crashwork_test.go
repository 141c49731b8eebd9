package ext4

import (
	"fmt"
	"math/rand"
	"os/exec"
	"path"
	"sort"
	"strings"
	"testing"

	"shortbread/kernel/abi/linux"
)

// A model of the tree a workload builds: directories, and names of
// files sharing contents through inode ids (hard links).
type model struct {
	dirs  map[string]bool
	files map[string]int // path -> inode id
	data  map[int][]byte
}

func newModel() *model {
	return &model{dirs: map[string]bool{"": true}, files: map[string]int{}, data: map[int][]byte{}}
}

// render describes the tree as one string, to compare states.
func (m *model) render() string {
	var lines []string
	for d := range m.dirs {
		lines = append(lines, "d "+d)
	}
	for p, id := range m.files {
		lines = append(lines, fmt.Sprintf("f %s %x", p, m.data[id]))
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// renderFS describes the tree in f the same way.
func renderFS(t *testing.T, f *FS) string {
	var lines []string
	var walkDir func(ino uint32, p string)
	walkDir = func(ino uint32, p string) {
		lines = append(lines, "d "+p)
		ents, err := f.ReadDir(ino)
		if err != nil {
			t.Fatalf("readdir %q: %v", p, err)
		}
		for _, e := range ents {
			if e.Name == "." || e.Name == ".." || (p == "" && e.Name == "lost+found") {
				continue
			}
			cp := strings.TrimPrefix(p+"/"+e.Name, "/")
			st, err := f.Stat(e.Ino)
			if err != nil {
				t.Fatalf("stat %q: %v", cp, err)
			}
			if st.Mode&linux.S_IFMT == linux.S_IFDIR {
				walkDir(e.Ino, cp)
				continue
			}
			lines = append(lines, fmt.Sprintf("f %s %x", cp, readAll(t, f, e.Ino)))
		}
	}
	walkDir(RootIno, "")
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// TestRandomPowerCuts runs a random workload of creates, appends,
// renames, links, unlinks, truncates to zero, mkdirs and rmdirs with a
// Sync every few operations, then cuts power at random points (with
// random subsets of the writes in flight lost): after recovery e2fsck
// must find nothing and the tree must be exactly the one of the last
// Sync before the cut, or of the Sync in progress.
func TestRandomPowerCuts(t *testing.T) {
	t.Parallel() // one of the longest: with the others, on every core
	for _, seed := range []int64{1, 2, 3} {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			rng := rand.New(rand.NewSource(seed))
			img := loadImage(t, mkfs(t, "16M", "", "-t", "ext4"))
			d := &recDev{memDev: memDev{b: append([]byte(nil), img.b...)}, base: append([]byte(nil), img.b...)}
			f, err := Mount(d, Options{})
			ok(t, err)
			m := newModel()
			inoOf := func(p string) uint32 { return walk(t, f, p) }
			pick := func(set map[string]bool) string {
				var keys []string
				for k := range set {
					keys = append(keys, k)
				}
				sort.Strings(keys)
				return keys[rng.Intn(len(keys))]
			}
			files := func() map[string]bool {
				s := map[string]bool{}
				for p := range m.files {
					s[p] = true
				}
				return s
			}
			snaps := []string{m.render()}
			syncAt := []int{len(d.flushes)}
			nextID := 0
			for op := 0; op < 80; op++ {
				dir := pick(m.dirs)
				name := fmt.Sprintf("n%d", op)
				p := strings.TrimPrefix(dir+"/"+name, "/")
				switch k := rng.Intn(10); {
				case k < 3 || len(m.files) == 0:
					data := make([]byte, rng.Intn(20000))
					rng.Read(data)
					ino := okIno(t)(f.Create(inoOf(dir), name, linux.S_IFREG|0o644, 0, 0, 0, 0))
					writeAll(t, f, ino, data, 0)
					nextID++
					m.files[p], m.data[nextID] = nextID, data
				case k == 3:
					src := pick(files())
					more := make([]byte, 1+rng.Intn(5000))
					rng.Read(more)
					_, _, err := f.Append(inoOf(src), more)
					ok(t, err)
					id := m.files[src]
					m.data[id] = append(append([]byte(nil), m.data[id]...), more...)
				case k == 4:
					src := pick(files())
					ok(t, f.Rename(inoOf(path.Dir("/"+src)), path.Base(src), inoOf(dir), name, 0))
					m.files[p] = m.files[src]
					delete(m.files, src)
				case k == 5:
					src := pick(files())
					ok(t, f.Link(inoOf(dir), name, inoOf(src)))
					m.files[p] = m.files[src]
				case k == 6:
					src := pick(files())
					ok(t, f.Unlink(inoOf(path.Dir("/"+src)), path.Base(src)))
					delete(m.files, src)
				case k == 7:
					src := pick(files())
					ok(t, f.Truncate(inoOf(src), 0))
					m.data[m.files[src]] = nil
				case k == 8:
					okIno(t)(f.Mkdir(inoOf(dir), name, 0o755, 0, 0))
					m.dirs[p] = true
				default:
					// rmdir an empty directory, if there is one
					for _, cand := range sortedKeys(m.dirs) {
						if cand == "" || !m.emptyDir(cand) {
							continue
						}
						ok(t, f.Rmdir(inoOf(path.Dir("/"+cand)), path.Base(cand)))
						delete(m.dirs, cand)
						break
					}
				}
				if rng.Intn(4) == 0 {
					ok(t, f.Sync())
					snaps = append(snaps, m.render())
					syncAt = append(syncAt, len(d.flushes))
				}
			}
			ok(t, f.Sync())
			snaps = append(snaps, m.render())
			syncAt = append(syncAt, len(d.flushes))
			if got := renderFS(t, f); got != snaps[len(snaps)-1] {
				t.Fatal("the live file system differs from the model")
			}
			// Cut within each Sync: after flush k, between the flushes
			// the previous Sync ended with and this one's last.
			checked := 0
			for i := 1; i < len(snaps); i++ {
				lo, hi := syncAt[i-1]-1, syncAt[i]-1
				for trial := 0; trial < 2; trial++ {
					k := lo + rng.Intn(hi-lo+1)
					c := d.cut(k, func(int) bool { return rng.Intn(2) == 0 })
					raw := append([]byte(nil), c.b...)
					g, err := mountDev(t, c, Options{})
					if err != nil {
						t.Fatalf("sync %d, cut after flush %d: mount: %v", i, k, err)
					}
					if ro, why := g.ReadOnly(); ro {
						t.Fatalf("sync %d, cut after flush %d: mounted read-only: %s", i, k, why)
					}
					fsck(t, c)
					got := renderFS(t, g)
					if got != snaps[i-1] && got != snaps[i] {
						t.Fatalf("sync %d, cut after flush %d: the tree is neither the state before nor after it", i, k)
					}
					if checked%5 == 0 {
						// e2fsck's replay of the same disk agrees.
						ref := &memDev{b: e2fsckReplay(t, raw)}
						h, err := Mount(ref, Options{ReadOnly: true})
						ok(t, err)
						if ref := renderFS(t, h); ref != got {
							which := func(s string) int {
								for j, sn := range snaps {
									if sn == s {
										return j
									}
								}
								return -1
							}
							img := saveImage(t, &memDev{b: raw})
							out, _ := exec.Command("e2fsck", "-fy", img).CombinedOutput()
							t.Fatalf("sync %d, cut %d (syncs end at %v): ours is state %d, e2fsck's %d\n%s", i, k, syncAt, which(got), which(ref), out)
						}
					}
					checked++
				}
			}
			t.Logf("%d syncs, %d flushes, %d cuts checked", len(snaps)-1, len(d.flushes), checked)
		})
	}
}

func sortedKeys(s map[string]bool) []string {
	var out []string
	for k := range s {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func (m *model) emptyDir(d string) bool {
	for p := range m.dirs {
		if p != d && strings.HasPrefix(p, d+"/") {
			return false
		}
	}
	for p := range m.files {
		if strings.HasPrefix(p, d+"/") {
			return false
		}
	}
	return true
}
