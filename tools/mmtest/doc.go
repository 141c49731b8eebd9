// Package mmtest unit-tests the machine layer's memory management on the
// host: the physical frame allocator (runtime-patches/sb_frames.go) and the
// page tables, VMAs, mmap family and page-fault handler
// (runtime-patches/sb_mm.go).
//
// Those files belong to package runtime and only build inside the kernel,
// so they cannot be tested directly, and a copy for testing would drift
// from them. Instead the test compiles the real files against a simulated
// machine: it copies them unchanged into a temporary module, except that it
// drops the shortbread build constraint and renames the package to sim,
// adds testdata/shim.go.txt and testdata/sim_test.go.txt, and runs go test
// there.
//
// The shim defines exactly what the two files take from the rest of the
// machine layer. Physical memory is a 64 MiB host mapping: sbPhys(pa) is
// pa + sbDmapBase as on the machine, and the tests point sbDmapBase at the
// mapping, so page tables are built and walked in host memory by the
// unchanged code. Privileged instructions (INVLPG, CR3 loads, TLB
// shootdowns) are recorded, sbFatal panics, and the spinlock is a real
// lock, so tests can also fault pages in from several goroutines.
//
// The simulation tests check the frame allocator (range ordering,
// memory boot keeps back, zeroed frames, reuse, accounting, exhaustion, NUMA nodes:
// ranges cut at nodes' edges, per-node lists, own node first), the page
// tables (walks, 2 MiB pages, the kernel page tables built from an ELF
// header) and the address space (mmap hints and MAP_FIXED, VMA merging and
// splitting, munmap, mprotect, madvise, faults, touch), each against the
// invariants that tie VMAs, page tables and frames together, plus a
// randomized run checked against a model of Linux behavior.
package mmtest
