// Package vfs is the virtual file system: path walks over a tree of
// mounted file systems, the dentry cache, open file descriptions, file
// descriptor tables, pipes, FIFOs and eventfds, with Linux's semantics
// and errno values (package shortbread/kernel/abi/linux). File systems
// (kernel/fs/tmpfs, kernel/fs/devfs, ...) implement the small interfaces
// in inode.go and never import each other.
//
// Where things are: inode.go (what a file system implements), file.go
// (what an open file does), dentry.go (the tree, the device table),
// mount.go (mount(2), umount2(2), the file system types mount can make,
// /proc/mounts), walk.go (path resolution, chdir, getcwd), open.go, dirops.go
// (mkdir, link, unlink, rename, ...), attr.go (stat, chmod, utimensat,
// truncate, ...), openfile.go (OpenFile), dirfile.go (getdents64),
// fdtable.go, pipe.go, fifo.go, eventfd.go, wait.go (blocking and
// readiness), cred.go (permission checks).
//
// # Setting up (for the process layer)
//
// The root is a tmpfs filled from the initramfs, devfs goes on /dev:
//
//	entries, err := cpio.Parse(initrd)
//	root, err := tmpfs.FromCPIO(entries, tmpfs.Options{Dev: linux.MakeDev(0, 1)})
//	v, err := vfs.New(root.Root(), "rootfs")
//	c := &vfs.Ctx{Root: v.Root(), Cwd: v.Root()} // zero Cred: root
//	v.Mkdir(c, nil, "/dev", 0o755)                // EEXIST is fine
//	dev := devfs.New(devfs.Options{Dev: linux.MakeDev(0, 5), Console: console}) // a *tty.TTY
//	v.Mount(c, nil, "/dev", dev.Root(), "devtmpfs", 0)
//	dev.Register(v) // so mknod'ed and initramfs device nodes work too
//	v.RegisterFSType("tmpfs", vfs.FSType{Make: ...}) // what mount(2) may make
//
// A task keeps its Cred, root and cwd (*Dentry), umask and an *FDTable
// (vfs.NewFDTable(vfs.DefaultNOFILE)); for each system call it builds a
// Ctx from them, with Intr set to the thread's interrupt channel. A
// dirfd of the *at calls becomes the dir argument: nil for AT_FDCWD,
// else the Dentry of the descriptor's OpenFile (fdt.Get, then
// f.Dentry(); nil there means the fd has no path: ENOTDIR). The handlers
// stay thin:
//
//	f, err := v.Open(c, dir, path, flags, mode)  // openat
//	fd, err := fdt.Install(f, flags&linux.O_CLOEXEC != 0)
//	f.DecRef()                                   // the table holds its own reference
//
//	f, err := fdt.Get(fd)                        // read
//	n, err := f.Read(buf, t.intr)
//	f.DecRef()
//
// Errors are linux.Errno values; return -errno. A write that fails with
// EPIPE raises SIGPIPE (the count may be positive: return it). readv and
// writev should gather into one buffer and make one call, so that a
// pipe write of up to PIPE_BUF bytes stays atomic. stat(2) encodes
// Attr.Stat(); statx(2) uses VFS.Statx or OpenFile.Statx. getcwd(2) is
// VFS.Getcwd (ERANGE is the caller's check on the buffer), chdir(2)
// VFS.Chdir. pipe2 is NewPipe, eventfd2 NewEventFD; the caller installs
// the files with O_CLOEXEC as asked. fork copies the table with
// FDTable.Fork (sharing the open files, so offsets and status flags are
// shared); execve calls FDTable.CloseOnExec; the exit of the last thread
// sharing a table calls CloseAll. fcntl maps to FDTable.DupFD, FDFlags,
// SetFDFlags and OpenFile.Flags, SetFlags, and PipeSize, SetPipeSize.
//
// # Blocking, interruption and readiness
//
// A call that may wait (read of an empty pipe or a terminal, write to a
// full pipe, open of a FIFO) blocks the calling goroutine only. It takes
// the open file's O_NONBLOCK into account (EAGAIN instead of waiting)
// and an interrupt channel: when the channel can be received from (a
// value sent, or closed) the wait ends with EINTR, or with the count
// transferred so far. The process layer gives each thread a channel with
// a buffer of one and sends on it when it queues a signal, then decides
// between restarting the call and returning EINTR. It also registers
// an Interrupter for the channel while the thread runs, which wakes
// the channel of the wait in progress, so that a wait can sleep on its
// own channel alone instead of selecting between the two
// (Waiter.Sleep, used by socket waits and epoll_wait).
//
// Every OpenFile reports Readiness() as poll bits (POLLIN, POLLOUT,
// POLLHUP, POLLERR, ...) and accepts Watch(ch), which signals ch each
// time the readiness may have changed, until the returned cancel is
// called. poll and select: Watch every file on one buffered channel,
// check Readiness of each, and if none is ready sleep on the channel,
// the timeout and the interrupt channel, then check again; cancel all
// watches at the end. epoll (kernel/epoll): an instance watches each
// registered file with a function (WakeFunc) that puts the interest on
// its ready list, registering records of its own (Registration) on the
// queues a QueueWatcher names so that EPOLL_CTL_ADD allocates nothing;
// it asks Readiness only of interests on the list (every change
// signals, so edge-triggered mode can report each new event), and is
// itself a File and Poller (readable when an interest on its list would
// report) made with NewFile, so epoll fds nest and poll. Files that never block
// (regular files, directories) are always ready and not Pollable: epoll
// refuses them with EPERM. Queue and WaitFor are the same mechanism for
// anything new (sockets, the terminal).
//
// # Locking
//
// Path walks take no lock of the whole tree: cached names are read
// from a concurrent map per directory, and a dentry's name and parent
// are one atomic pointer. Calls that change a directory hold its own
// lock (Dentry.dirMu, Linux's i_rwsem) for as little as they can: a
// create makes its inode and dentry before it (InodeMaker), and an
// unlink frees the file's data after it (Holder); waiters spin briefly
// before they sleep. In a tmpfs or ext4 directory (ConcurrentNames)
// creates and removals hold dirMu only for reading, plus a lock of their
// name's shard, so those of different names run at once; tmpfs shards
// its name table the same way, ext4 locks the directory's inode for
// each entry's change. /proc/shortbread/dirlocks counts the
// contended acquisitions of these locks, spinning included. A rename
// within an ext4 directory (ConcurrentRenames) is such a change of two
// names; elsewhere it holds the directory whole. A rename across directories also takes the tree's
// rename lock, which keeps ancestors still while it checks that no
// directory moves into itself. Opens and closes of one file count
// themselves in atomics of the inode (AccessCounts, OpenCounter), not
// under a lock. VFS.mu guards only the
// mount and device tables. File systems lock their own data; reads and
// writes of open files take none of these. The rules and the lock order
// are at type VFS in dentry.go; FDTable.mu is never held while calling
// into files, and looking a descriptor up (FDTable.Get: every read,
// write and fstat) takes no lock at all.
package vfs
