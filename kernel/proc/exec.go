package proc

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"

	"shortbread/kernel/abi/linux"
	"shortbread/kernel/arch"
	"shortbread/kernel/elf"
	"shortbread/kernel/machine"
	"shortbread/kernel/mm"
	"shortbread/kernel/vfs"
)

// hwcap is AT_HWCAP: on x86-64, CPUID.1:EDX, the processor's base
// feature bits, as Linux passes it (not a fixed value a smaller CPU lacks).
var hwcap = sync.OnceValue(func() uint64 {
	_, _, _, edx := arch.CPUID(1, 0)
	return uint64(edx)
})

// Layout of a new program's address space.
const (
	stackTop  = 0x7ffffffde000 // Linux-like: just below 128 TiB, with room above
	stackSize = 8 << 20        // RLIMIT_STACK's usual 8 MiB
	pieBase   = 0x555555554000 // the lowest base of PIE programs, Linux's ELF_ET_DYN_BASE
	userTop   = 0x0000800000000000
	mmapTop   = stackTop - stackSize - 1<<30
	// The stack grows on faults down to RLIMIT_STACK's soft limit, as
	// Linux's (mm/stack.go), taken at exec and kept at least 128 KiB and
	// at most 1 GiB, which the gap below the stack leaves room for (an
	// unlimited stack gets 1 GiB).
	minStack, maxStack = 128 << 10, 1 << 30
	// One argument or environment string may take 32 pages with its NUL
	// (Linux's MAX_ARG_STRLEN); all of them, and their pointers, a
	// quarter of RLIMIT_STACK, between 128 KiB (ARG_MAX) and 6 MiB
	// (three quarters of _STK_LIM): argRoom.
	maxArgStrlen           = 32 * mm.PageSize
	minArgRoom, maxArgRoom = 128 << 10, 6 << 20
)

// argRoom is the room exec gives argv, envp and the program's name,
// for a stack limited to stackCur (Linux's bprm_stack_limits).
func argRoom(stackCur uint64) int {
	return int(max(min(stackCur/4, maxArgRoom), minArgRoom))
}

// checkArgRoom is E2BIG for strings that do not fit room: each string
// with its NUL, and a pointer for each (argv counts as one at least).
func checkArgRoom(room int, name string, argv, envp []string) error {
	ptrs := (max(len(argv), 1) + len(envp)) * 8
	if room <= ptrs {
		return errArgTooLong
	}
	size := len(name) + 1
	for _, s := range argv {
		size += len(s) + 1
	}
	for _, s := range envp {
		size += len(s) + 1
	}
	if size > room-ptrs {
		return errArgTooLong
	}
	return nil
}

// notBusy is open_exec's ETXTBSY: a file open for writing is neither run
// nor read as a script or loader. The program's own file is held from
// the commit on; a script or loader is checked while it is read.
func notBusy(f *execFile) error {
	if f.exe == nil {
		return nil
	}
	release, err := vfs.DenyWrite(f.exe)
	if err != nil {
		return err
	}
	release()
	return nil
}

// maxInterpDepth bounds "#!" interpreter chains (Linux allows 4 + 1).
const maxInterpDepth = 5

// parseShebang splits a "#!" line into interpreter and its single optional
// argument (everything after the blanks that follow the interpreter, as on
// Linux), reading only the first 256 bytes as Linux's load_script does.
// Without a newline in them the line is cut at byte 255, but only when
// the interpreter's name ends before that (a blank or NUL after it): a
// name that may be cut short is not run (ENOEXEC). Only blanks (spaces
// and tabs) separate; a carriage return is part of the name, as on Linux.
func parseShebang(data []byte) (interp, arg string, ok bool) {
	var buf [256]byte
	copy(buf[:], data)
	blank := func(c byte) bool { return c == ' ' || c == '\t' }
	end := bytes.IndexByte(buf[:], '\n')
	if end < 0 {
		i := 2
		for i <= 255 && blank(buf[i]) {
			i++
		}
		j := i
		for j <= 255 && !blank(buf[j]) && buf[j] != 0 {
			j++
		}
		if i > 255 || j > 255 {
			return "", "", false
		}
		end = 255
	}
	line := buf[2:end]
	if i := bytes.IndexByte(line, 0); i >= 0 {
		line = line[:i]
	}
	s := strings.Trim(string(line), " \t")
	if s == "" {
		return "", "", false
	}
	interp = s
	if i := strings.IndexAny(s, " \t"); i >= 0 {
		interp, arg = s[:i], strings.TrimLeft(s[i:], " \t")
	}
	return interp, arg, true
}

// ErrNoExec is returned for a file that is not a runnable program.
var ErrNoExec = elf.ErrNoExec

var errArgTooLong = errors.New("argument list too long")

// execTarget is the program an exec runs: path from dir, as
// execveat(2) names it.
type execTarget struct {
	dir   *vfs.Dentry // where a relative path starts; nil: the cwd
	path  string
	flags int // AT_EMPTY_PATH, AT_SYMLINK_NOFOLLOW
	// name is what the program is called (Linux's bprm->filename): in
	// AT_EXECFN, as a script's argument to its interpreter, and in
	// /proc. path, or "/dev/fd/N" and "/dev/fd/N/path" for a program
	// named by a descriptor.
	name string
	// closedByExec: the descriptor is close-on-exec, so a script's
	// interpreter could not open name (Linux's
	// BINPRM_FLAGS_PATH_INACCESSIBLE): such a script is ENOENT.
	closedByExec bool
}

// execPath is the target of execve(path).
func execPath(path string) execTarget { return execTarget{path: path, name: path} }

// exec replaces the thread's process image with the program tgt names.
func (t *Thread) exec(tgt execTarget, argv, envp []string) error {
	p := t.Proc
	file, err := t.readFileAt(tgt.dir, tgt.path, tgt.flags)
	if err != nil {
		return err
	}
	path := tgt.name
	defer file.release()
	if err := notBusy(file); err != nil {
		return err
	}
	data := file.data
	// A "#!" script runs its interpreter with the script's path in place
	// of argv[0]; interpreters may themselves be scripts, a few deep.
	for depth := 0; len(data) >= 2 && data[0] == '#' && data[1] == '!'; depth++ {
		if depth == maxInterpDepth {
			return linux.ELOOP
		}
		if depth == 0 && tgt.closedByExec {
			return linux.ENOENT
		}
		interp, arg, ok := parseShebang(data)
		if !ok {
			return ErrNoExec
		}
		args := []string{interp}
		if arg != "" {
			args = append(args, arg)
		}
		args = append(args, path)
		if len(argv) > 1 {
			args = append(args, argv[1:]...)
		}
		path, argv = interp, args
		if file, err = t.readFile(path); err != nil {
			return err
		}
		defer file.release()
		if err := notBusy(file); err != nil {
			return err
		}
		data = file.data
	}
	f, err := file.parse(false)
	if err != nil {
		return err
	}
	// A dynamically linked program runs its loader first; the loader is
	// opened as a program is (search and execute permission), and must
	// itself be a loadable ELF image (ELIBBAD otherwise, as Linux).
	var interp *execFile
	var fi *elf.File
	if f.Dynamic {
		if interp, err = t.readFile(f.Interp); err != nil {
			return err
		}
		defer interp.release()
		if err := notBusy(interp); err != nil {
			return err
		}
		if interp.size < 64 {
			return linux.EIO // Linux reads a whole ELF header first
		}
		if fi, err = interp.parse(true); err != nil {
			return err
		}
	}
	mapName := path // /proc/<pid>/maps names the program's segments by path
	if file.exe != nil && fsys != nil {
		mapName = fsys.Path(&vfs.Ctx{}, file.exe)
	}
	// A script's interpreter and its argument count too.
	t.Proc.mu.Lock()
	room := argRoom(t.Proc.rlimits()[rlimitStack].cur)
	t.Proc.mu.Unlock()
	if err := checkArgRoom(room, tgt.name, argv, envp); err != nil {
		return err
	}
	// From here the program's file may not be opened for writing
	// (ETXTBSY), for as long as this process runs it.
	var hold func()
	if file.exe != nil {
		if hold, err = vfs.DenyWrite(file.exe); err != nil {
			return err
		}
	}
	committed := false
	defer func() {
		if !committed && hold != nil {
			hold()
		}
	}()
	space, err := newSpace()
	if err != nil {
		return err
	}
	t.Proc.mu.Lock()
	lim := t.Proc.rlimits()
	space.SetLimit(asLimit(lim[rlimitAS].cur))
	space.SetDataLimit(asLimit(lim[rlimitData].cur))
	stack := uintptr(min(max(lim[rlimitStack].cur, minStack), maxStack)) &^ (mm.PageSize - 1)
	// A set-user-ID or set-group-ID program drops the personality flags
	// that would weaken it (Linux's PER_CLEAR_ON_SETID), randomisation
	// among them, before its layout is drawn.
	var perClear uint32
	if setID(file, t.noNewPrivs.Load()) {
		perClear = perClearOnSetID
	}
	lay := newLayout(t.Proc.persona &^ perClear)
	t.Proc.mu.Unlock()
	space.SetMmapTop(lay.mmapTop)
	bias := uint64(0)
	if f.Type == 3 { // ET_DYN
		// A position-independent program (or a loader run as one) goes
		// above Linux's ELF_ET_DYN_BASE, randomised up to 1 TiB higher
		// (mmap_rnd_bits 28), at its segments' alignment.
		bias = alignUp(pieBase+uint64(lay.draw(mmapRandPages))*mm.PageSize, f.Align)
	}
	end, err := mapSegments(space, f, file, bias, mapName)
	if err != nil {
		space.Destroy()
		return err
	}
	entry, interpBase := bias+f.Entry, uint64(0)
	if fi != nil {
		// The loader at the top of the mmap area (whose top the layout
		// randomised), at its alignment: the first mapping placed there,
		// as Linux's mmap of it.
		lo, hi := fi.Span()
		top := uint64(lay.mmapTop)
		if fi.Type == 3 {
			interpBase = (top-(hi-lo))&^(fi.Align-1) - lo
		}
		name := f.Interp
		if interp.exe != nil && fsys != nil {
			name = fsys.Path(&vfs.Ctx{}, interp.exe)
		}
		if _, err := mapSegments(space, fi, interp, interpBase, name); err != nil {
			space.Destroy()
			return fmt.Errorf("%w: %v", elf.ErrBadInterp, err)
		}
		entry = interpBase + fi.Entry
	}
	// The break just past the program, or up to 32 MiB higher at random
	// (arch_randomize_brk).
	brk := uintptr(end+mm.PageSize-1) &^ (mm.PageSize - 1)
	if lay.randomBrk {
		brk += uintptr(rand.IntN(brkRandPages)) * mm.PageSize
	}
	space.SetBrk(brk)
	// The stack starts one page long and grows down to RLIMIT_STACK's
	// floor as it is used (mm/stack.go): building it below grows it.
	floor := lay.stackTop - stack
	if err := space.Map(mm.VMA{Start: lay.stackTop - mm.PageSize, End: lay.stackTop, Prot: mm.ProtRead | mm.ProtWrite, Name: "[stack]",
		GrowsDown: true, Floor: floor}); err != nil {
		space.Destroy()
		return err
	}
	sysinfo, err := mapVDSO(space, lay)
	if err != nil {
		space.Destroy()
		return err
	}
	p.mu.Lock()
	cred := p.cred
	p.mu.Unlock()
	secure := execCreds(&cred, file, t.noNewPrivs.Load())
	execCaps(&cred, t.securebits)
	sp, err := buildStack(space, lay, f, bias, interpBase, sysinfo, path, argv, envp, &cred, secure)
	if err == nil {
		// 128 KiB below the arguments, as Linux's setup_arg_pages leaves
		// (stack_expand), within RLIMIT_STACK.
		low := max(uintptr(sp)&^(mm.PageSize-1)-128<<10, floor)
		err = space.GrowStack(low)
	}
	if err != nil {
		space.Destroy()
		return err
	}
	// The point of no return, in Linux's order (begin_new_exec): the
	// other threads end first, each releasing its robust and PI futexes
	// in the old memory, then this thread's are (futex_exec_release),
	// while the old program's memory is still the process's.
	if err := p.deThread(t); err != nil {
		space.Destroy()
		return err
	}
	t.futexExecRelease()
	t.becomeLeader()
	p.mu.Lock()
	p.execing = nil
	old := p.space.Swap(newSpaceRef(space))
	p.cred = cred
	p.persona &^= perClear
	// A program or loader the caller could not read makes the process
	// undumpable, as Linux's would_dump checks both.
	p.nonDumpable.Store(secure || !file.readable || interp != nil && !interp.readable)
	// Published with the new image, before anything a waiter can see
	// (close-on-exec descriptors reaching EOF, a vfork parent waking): a
	// parent that saw the pipe close must find setpgid refused.
	p.execed = true
	p.name = path
	t.comm.Store(nil) // the new program's base name, as Linux's begin_new_exec sets comm
	p.exe, p.argv, p.envp = file.exe, argv, envp
	oldHold := p.exeHold
	p.exeHold, committed = hold, true
	p.mu.Unlock()
	if oldHold != nil {
		oldHold()
	}
	if old != nil {
		old.put()
	}
	// The count of preemptions goes on: exec keeps the thread's
	// context switches, as Linux does (Thread.switches).
	t.regs = machine.UserRegs{RIP: entry, RSP: sp, RFLAGS: 0x202, Preempts: t.regs.Preempts}
	// x87 control word and MXCSR at their reset values (FXSAVE layout).
	binary.LittleEndian.PutUint16(t.regs.FPU()[0:], 0x37f)
	binary.LittleEndian.PutUint32(t.regs.FPU()[24:], 0x1f80)
	return nil
}

func alignUp(v, align uint64) uint64 { return (v + align - 1) &^ (align - 1) }

// mapSegments maps an ELF image's PT_LOAD segments at bias into space and
// returns the end of the highest one. Each segment is backed by the
// file's bytes from its page-aligned start; the rest (bss) reads as
// zeros. When the file system keeps the file's pages (tmpfs, and ext4's
// in the page cache), they are mapped copy-on-write, as Linux maps the
// page cache: exec then costs no copy, however large the image.
func mapSegments(space *mm.Space, f *elf.File, file *execFile, bias uint64, name string) (uint64, error) {
	var end uint64
	for _, s := range f.Segments {
		start := bias + s.Vaddr
		if start < bias || start+s.Memsz < start || start+s.Memsz > userTop {
			return 0, fmt.Errorf("%w: segment at %#x+%#x outside user space", ErrNoExec, start, s.Memsz)
		}
		pageOff := start & (mm.PageSize - 1)
		if s.Off < pageOff {
			// Only possible without an alignment, which Parse lets pass
			// unchecked: the segment's page would start before the file.
			return 0, fmt.Errorf("%w: segment at %#x starts before its file page", ErrNoExec, start)
		}
		v := mm.VMA{Start: uintptr(start - pageOff), End: uintptr(start + s.Memsz), Prot: s.Prot, Name: name}
		switch {
		case s.Filesz == 0:
			// All zeros: nothing of the file is mapped for a segment
			// without file contents, as Linux does since 6.7 (6.1 still
			// mapped the bytes before its offset in its first page).
		case file.pages != nil && (s.Off-pageOff)%mm.PageSize == 0:
			v.Shm, v.Private = file.pages, true
			v.Off, v.FileEnd = uintptr(s.Off-pageOff), uintptr(s.Off+s.Filesz)
		default: // execFile.parse read the whole file
			v.Data = file.data[s.Off-pageOff : s.Off+s.Filesz]
		}
		if err := space.Map(v); err != nil {
			return 0, fmt.Errorf("%w: segment at %#x: %v", ErrNoExec, start, err)
		}
		end = max(end, start+s.Memsz)
	}
	return end, nil
}

// parse checks the file's ELF headers (a dynamic loader's if interp). It
// reads the whole file first when the head holds too little of the
// headers, or when a segment cannot be mapped from the file's pages and
// is copied from its bytes instead (mapSegments).
func (e *execFile) parse(interp bool) (*elf.File, error) {
	parse := elf.ParseHead
	if interp {
		parse = elf.ParseInterpHead
	}
	f, err := parse(e.data, uint64(e.size))
	if int64(len(e.data)) < e.size && (err == elf.ErrShortHead || err == nil && !e.mappable(f)) {
		if e.data, err = readAt(e.file, e.size); err != nil {
			return nil, err
		}
		f, err = parse(e.data, uint64(len(e.data)))
	}
	return f, err
}

// mappable reports whether every segment of f with file contents maps
// the file's pages (mapSegments).
func (e *execFile) mappable(f *elf.File) bool {
	for _, s := range f.Segments {
		if s.Filesz > 0 && (e.pages == nil || (s.Off-s.Vaddr&(mm.PageSize-1))%mm.PageSize != 0) {
			return false
		}
	}
	return true
}

// execCreds applies a program's set-user-ID and set-group-ID bits to
// the IDs it will run with, as Linux does on a file system without
// nosuid: the effective ID becomes the file's owner (group: only when
// the file is also group-executable), and the saved and file-system IDs
// follow the effective ones whether or not a bit was set. It reports a
// "secure" exec (AT_SECURE): the program runs with IDs its caller did
// not have, so libc distrusts the environment and the process is not
// dumpable. Under no_new_privs the bits are ignored.
func execCreds(c *creds, file *execFile, noNewPrivs bool) bool {
	if setID(file, noNewPrivs) {
		if file.attr.Mode&linux.S_ISUID != 0 {
			c.euid = file.attr.UID
		}
		if file.attr.Mode&(linux.S_ISGID|linux.S_IXGRP) == linux.S_ISGID|linux.S_IXGRP {
			c.egid = file.attr.GID
		}
	}
	c.suid, c.fsuid = c.euid, c.euid
	c.sgid, c.fsgid = c.egid, c.egid
	return c.euid != c.ruid || c.egid != c.rgid
}

// setID reports whether exec'ing file applies its set-user-ID or
// set-group-ID bit (Linux's bprm_fill_uid; no_new_privs forbids it).
func setID(file *execFile, noNewPrivs bool) bool {
	m := file.attr.Mode
	return file.exe != nil && !noNewPrivs && (m&linux.S_ISUID != 0 || m&(linux.S_ISGID|linux.S_IXGRP) == linux.S_ISGID|linux.S_IXGRP)
}

// Auxiliary vector types (Linux include/uapi/linux/auxvec.h).
const (
	atNull     = 0
	atPhdr     = 3
	atPhent    = 4
	atPhnum    = 5
	atPagesz   = 6
	atBase     = 7
	atFlags    = 8
	atEntry    = 9
	atUID      = 11
	atEUID     = 12
	atGID      = 13
	atEGID     = 14
	atHwcap    = 16
	atClktck   = 17
	atSecure   = 23
	atRandom   = 25
	atExecfn   = 31
	atPlatform = 15
	atHwcap2   = 26
	// atSysinfoEhdr is the vDSO's ELF header (kernel/vdso).
	atSysinfoEhdr = 33
	// atMinSigStkSz is the most stack a signal frame takes (x86-64's
	// ARCH_DLINFO since Linux 5.14): what sigaltstack must allow for.
	atMinSigStkSz = 51
)

// hwcap2 is AT_HWCAP2: on x86-64 Linux sets HWCAP2_RING3MWAIT (Xeon Phi
// only) and HWCAP2_FSGSBASE (when it turned on CR4.FSGSBASE, so user
// code may run RDFSBASE and WRFSBASE). The machine layer turns
// CR4.FSGSBASE on exactly when CPUID leaf 7 reports the instructions
// (sb_cpu.go; its trap path uses them), so the same test gives the bit.
var hwcap2 = func() uint64 {
	const hwcap2FSGSBase = 2
	if max, _, _, _ := arch.CPUID(0, 0); max >= 7 {
		if _, b, _, _ := arch.CPUID(7, 0); b&1 != 0 {
			return hwcap2FSGSBase
		}
	}
	return 0
}()

// buildStack lays out argc, argv, envp and the auxiliary vector at the top
// of the new stack (System V x86-64 psABI §3.4.1) and returns the stack
// pointer.
func buildStack(s *mm.Space, lay layout, f *elf.File, bias, interpBase, sysinfo uint64, path string, argv, envp []string, c *creds, secure bool) (uint64, error) {
	sp := uint64(lay.stackTop)
	push := func(b []byte) (uint64, error) {
		sp -= uint64(len(b))
		return sp, s.CopyOut(uintptr(sp), b)
	}
	pushStr := func(str string) (uint64, error) { return push(append([]byte(str), 0)) }
	execfn, err := pushStr(path)
	if err != nil {
		return 0, err
	}
	strs := make([]uint64, 0, len(argv)+len(envp))
	for _, a := range append(append([]string(nil), argv...), envp...) {
		at, err := pushStr(a)
		if err != nil {
			return 0, err
		}
		strs = append(strs, at)
	}
	// Below the strings, a random drop of up to 8 KiB, 16-byte aligned
	// (arch_align_stack), then the platform's name and AT_RANDOM's bytes.
	sp = (sp - uint64(lay.draw(spRandBytes))) &^ 15
	platform, err := pushStr("x86_64")
	if err != nil {
		return 0, err
	}
	var rnd [16]byte
	for i := range rnd {
		rnd[i] = byte(rand.Uint32())
	}
	random, err := push(rnd[:])
	if err != nil {
		return 0, err
	}
	sp &^= 15
	secureFlag := uint64(0)
	if secure {
		secureFlag = 1
	}
	// Linux's order: the architecture's entries (the vDSO, the signal
	// frame's size) first, AT_HWCAP2 after AT_RANDOM.
	var auxv []uint64
	if sysinfo != 0 {
		auxv = append(auxv, atSysinfoEhdr, sysinfo)
	}
	auxv = append(auxv, atMinSigStkSz, minSigStackSize(),
		atHwcap, hwcap(), atPagesz, mm.PageSize, atClktck, 100,
		atPhdr, f.PhdrAddr(bias), atPhent, 56, atPhnum, uint64(f.Phnum),
		atBase, interpBase, atFlags, 0, atEntry, bias+f.Entry,
		atUID, uint64(c.ruid), atEUID, uint64(c.euid), atGID, uint64(c.rgid), atEGID, uint64(c.egid),
		atSecure, secureFlag, atRandom, random, atHwcap2, hwcap2, atExecfn, execfn, atPlatform, platform)
	auxv = append(auxv, atNull, 0)
	words := []uint64{uint64(len(argv))}
	words = append(words, strs[:len(argv)]...)
	words = append(words, 0)
	words = append(words, strs[len(argv):]...)
	words = append(words, 0)
	words = append(words, auxv...)
	if len(words)%2 == 1 {
		sp -= 8 // keep the final stack pointer 16-byte aligned
	}
	buf := make([]byte, 8*len(words))
	for i, w := range words {
		binary.LittleEndian.PutUint64(buf[8*i:], w)
	}
	return push(buf)
}
