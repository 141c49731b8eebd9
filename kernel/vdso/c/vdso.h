/*
 * The vDSO's data page ([vvar]), which the kernel writes and every
 * process maps read-only just below the vDSO's text. struct vvar mirrors
 * kernel/wallclock's Data field by field (vdso_test.go checks the
 * offsets against VVAR_OFF_* below); struct vcpu follows it at
 * VVAR_CPU_OFF.
 */
#ifndef SHORTBREAD_VDSO_H
#define SHORTBREAD_VDSO_H

#define VVAR_OFF_SEQ 0
#define VVAR_OFF_MODE 4
#define VVAR_OFF_COUNTER0 8
#define VVAR_OFF_HZ 16
#define VVAR_OFF_OFFSET 24
#define VVAR_OFF_ADJAT 32
#define VVAR_OFF_SLEW 40
#define VVAR_OFF_FREQ 48
#define VVAR_CPU_OFF 128

#define VVAR_MODE_COUNTER 1 /* user code may read the TSC */
#define VVAR_COARSE_NS 4000000 /* the coarse clocks' tick: wallclock.CoarseTick */
#define VCPU_RDPID 1        /* IA32_TSC_AUX holds the CPU number: RDPID */
#define VCPU_RDTSCP 2       /* ... and RDTSCP reads it */

#ifndef __ASSEMBLER__
#include <stdint.h>

struct vvar {
	uint32_t seq;      /* odd while the kernel changes the fields */
	uint32_t mode;     /* VVAR_MODE_COUNTER, or 0: make the system call */
	uint64_t counter0; /* TSC at CLOCK_MONOTONIC's zero */
	uint64_t hz;       /* TSC ticks a second */
	int64_t offset;    /* realtime = monotonic + offset + adjustment */
	int64_t adj_at;    /* monotonic ns the slew and frequency run from */
	int64_t slew;      /* one-shot adjustment left at adj_at, ns */
	int64_t freq;      /* frequency correction, ppm << 16 */
};

struct vcpu {
	uint32_t how; /* VCPU_RDPID | VCPU_RDTSCP, or 0: make the system call */
};
#endif
#endif
