// Package elf parses the ELF64 executables Shortbread runs: x86-64
// programs, ET_EXEC or ET_DYN (PIE), static or naming a dynamic loader in
// PT_INTERP, and the loaders themselves. It only reads headers; package
// proc maps the segments. A malformed program is ErrNoExec (ENOEXEC), a
// malformed loader ErrBadInterp (ELIBBAD). Reference: System V gABI,
// chapters 4 and 5; the x86-64 psABI §5.
package elf

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
)

// ErrNoExec reports a file that is not a runnable executable.
var ErrNoExec = errors.New("exec format error")

// ErrShortHead reports that the bytes ParseHead was given hold too little
// of the file to check its headers: the caller reads the whole file and
// parses again.
var ErrShortHead = errors.New("ELF headers past the bytes read")

// ErrBadInterp reports a dynamic loader (the file PT_INTERP names) that is
// not a loadable x86-64 ELF image: Linux's ELIBBAD.
var ErrBadInterp = errors.New("accessing a corrupted shared library")

// Segment is one PT_LOAD segment.
type Segment struct {
	Vaddr, Memsz uint64
	Off, Filesz  uint64
	Prot         int // mm.Prot* bits: 1 read, 2 write, 4 exec
}

// File is what exec needs from an executable.
type File struct {
	Type             uint16 // 2 = ET_EXEC, 3 = ET_DYN
	Entry            uint64
	Phoff            uint64
	Phentsize, Phnum uint16
	Segments         []Segment
	Interp           string // PT_INTERP's path: the dynamic loader to run first
	Dynamic          bool   // has PT_INTERP (whose path may be empty: ENOENT)
	Align            uint64 // the largest PT_LOAD alignment, a power of two (at least a page)
	StackX           bool   // PT_GNU_STACK asks for an executable stack
	TLS              *Segment
}

const (
	etExec = 2
	etDyn  = 3
	emX86  = 62

	ptLoad     = 1
	ptInterp   = 3
	ptTLS      = 7
	ptGNUStack = 0x6474e551

	maxPhnum = 128
	pathMax  = 4096 // Linux's PATH_MAX bounds PT_INTERP's size
	maxAlign = 1 << 30
	userTop  = 0x0000800000000000
)

func errf(format string, a ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrNoExec}, a...)...)
}

// Parse checks the headers of an executable image.
func Parse(b []byte) (*File, error) { return ParseHead(b, uint64(len(b))) }

// ParseHead is Parse for a file of size bytes of which b holds the first
// (exec reads only the head of a file whose segments it maps from the
// file's pages): the segments are checked against size, and the program
// headers and PT_INTERP's path must lie in b, else ErrShortHead.
func ParseHead(b []byte, size uint64) (*File, error) {
	if size < 64 {
		return nil, errf("%d bytes is too short for an ELF header", size)
	}
	if len(b) < 64 {
		return nil, ErrShortHead
	}
	if string(b[:4]) != "\x7fELF" {
		return nil, errf("no ELF magic")
	}
	if b[4] != 2 || b[5] != 1 || b[6] != 1 {
		return nil, errf("not a little-endian 64-bit ELF version 1")
	}
	le := binary.LittleEndian
	f := &File{
		Type:      le.Uint16(b[16:]),
		Entry:     le.Uint64(b[24:]),
		Phoff:     le.Uint64(b[32:]),
		Phentsize: le.Uint16(b[54:]),
		Phnum:     le.Uint16(b[56:]),
	}
	if machine := le.Uint16(b[18:]); machine != emX86 {
		return nil, errf("machine %d is not x86-64", machine)
	}
	if f.Type != etExec && f.Type != etDyn {
		return nil, errf("type %d is not an executable", f.Type)
	}
	if f.Phentsize != 56 || f.Phnum == 0 || f.Phnum > maxPhnum {
		return nil, errf("%d program headers of %d bytes", f.Phnum, f.Phentsize)
	}
	end := f.Phoff + uint64(f.Phnum)*56
	if f.Phoff > size || end > size || end < f.Phoff {
		return nil, errf("program headers outside the file")
	}
	if end > uint64(len(b)) {
		return nil, ErrShortHead
	}
	for i := uint64(0); i < uint64(f.Phnum); i++ {
		ph := b[f.Phoff+i*56:]
		typ, flags := le.Uint32(ph), le.Uint32(ph[4:])
		s := Segment{
			Off: le.Uint64(ph[8:]), Vaddr: le.Uint64(ph[16:]),
			Filesz: le.Uint64(ph[32:]), Memsz: le.Uint64(ph[40:]),
		}
		if flags&4 != 0 {
			s.Prot |= 1
		}
		if flags&2 != 0 {
			s.Prot |= 2
		}
		if flags&1 != 0 {
			s.Prot |= 4
		}
		switch typ {
		case ptLoad:
			if s.Filesz > s.Memsz || s.Off+s.Filesz > size || s.Off+s.Filesz < s.Off {
				return nil, errf("segment %d: file range outside the file", i)
			}
			if s.Vaddr+s.Memsz < s.Vaddr || s.Vaddr+s.Memsz > userTop {
				return nil, errf("segment %d: address range %#x+%#x outside user space", i, s.Vaddr, s.Memsz)
			}
			align := le.Uint64(ph[48:])
			if align > 1 && (s.Vaddr-s.Off)%4096 != 0 {
				return nil, errf("segment %d: address and offset not congruent modulo the page size", i)
			}
			// Only a power-of-two alignment counts (Linux ignores others),
			// and none beyond 1 GiB.
			if align&(align-1) == 0 && align <= maxAlign {
				f.Align = max(f.Align, align)
			}
			f.Segments = append(f.Segments, s)
		case ptInterp:
			if f.Dynamic {
				break // Linux reads only the first
			}
			// As Linux: a size past PATH_MAX or under 2 bytes, or a
			// path not ending in NUL, is no program.
			if s.Filesz < 2 || s.Filesz > pathMax {
				return nil, errf("PT_INTERP of %d bytes", s.Filesz)
			}
			if s.Off > size || s.Off+s.Filesz > size {
				return nil, errf("PT_INTERP outside the file")
			}
			if s.Off+s.Filesz > uint64(len(b)) {
				return nil, ErrShortHead
			}
			path := b[s.Off : s.Off+s.Filesz]
			if path[len(path)-1] != 0 {
				return nil, errf("PT_INTERP path not NUL-terminated")
			}
			f.Interp, f.Dynamic = string(path[:bytes.IndexByte(path, 0)]), true
		case ptTLS:
			t := s
			f.TLS = &t
		case ptGNUStack:
			f.StackX = flags&1 != 0
		}
	}
	if len(f.Segments) == 0 {
		return nil, errf("no loadable segments")
	}
	f.Align = max(f.Align, 4096)
	return f, nil
}

// ParseInterp checks the headers of a dynamic loader as Parse checks a
// program's; any fault is ErrBadInterp. A loader's own PT_INTERP is
// ignored, as Linux ignores it.
func ParseInterp(b []byte) (*File, error) { return ParseInterpHead(b, uint64(len(b))) }

// ParseInterpHead is ParseInterp for the head b of a file of size bytes,
// as ParseHead.
func ParseInterpHead(b []byte, size uint64) (*File, error) {
	f, err := ParseHead(b, size)
	if err == ErrShortHead {
		return nil, err
	}
	if err != nil {
		return nil, fmt.Errorf("%w: dynamic loader: %v", ErrBadInterp, err)
	}
	f.Interp, f.Dynamic = "", false
	return f, nil
}

// Span returns the lowest and highest addresses the segments cover.
func (f *File) Span() (lo, hi uint64) {
	lo = ^uint64(0)
	for _, s := range f.Segments {
		lo = min(lo, s.Vaddr&^4095)
		hi = max(hi, s.Vaddr+s.Memsz)
	}
	return lo, hi
}

// PhdrAddr returns where the program headers appear in memory (AT_PHDR)
// once loaded at bias, if a segment maps them.
func (f *File) PhdrAddr(bias uint64) uint64 {
	for _, s := range f.Segments {
		if f.Phoff >= s.Off && f.Phoff+uint64(f.Phnum)*56 <= s.Off+s.Filesz {
			return bias + s.Vaddr + (f.Phoff - s.Off)
		}
	}
	return 0
}
