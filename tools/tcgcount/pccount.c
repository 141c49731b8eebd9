/*
 * pccount: a QEMU TCG plugin (plugin API version 1 of QEMU 7.2, or 2 and
 * later: QEMU 9 and 10) that counts how many times every instruction in one
 * virtual-address range executes.
 *
 *   qemu-system-x86_64 ... -plugin libpccount.so,start=0xffffffff81000000,end=0xffffffff810fcaf1,out=FILE
 *                                 [,on=0xPC[,on_n=N],off=0xPC]
 *
 * When a block is translated, every instruction whose virtual address is
 * in [start, end) gets an inline "add 1" (QEMU_PLUGIN_INLINE_ADD_U64) on
 * its own 64-bit counter, in a flat array indexed by (pc - start). The
 * inline op runs in the translated code itself, before the instruction,
 * with no helper call, so the cost is small (1.1-1.5x). API version 2
 * dropped inline ops on plain pointers: there the counters are a
 * scoreboard, one array per vCPU (QEMU allocates it for 16 vCPUs at
 * first, zeroed: 16 times the memory of API version 1), summed whenever
 * they are read. At exit the
 * non-zero counters are written to FILE as little-endian records
 *
 *   uint64 pc, uint64 count          (16 bytes, sorted by pc)
 *
 * Window: with on=PC the plugin also puts an execution callback on the
 * instruction at PC (and at off=PC). The on_n-th execution of on (default
 * the first) takes a snapshot of the counters, the first execution of off
 * after it a second one, and FILE.window gets the difference: exactly the
 * instructions executed from the on instruction (included) to the off
 * instruction (excluded). If off never runs, the window ends at exit. A
 * marker can be any instruction in [start, end), for example the entry of
 * the function that starts a measurement.
 *
 * Exactness: a counter counts executions of the instruction as QEMU runs
 * it: a REP string instruction once per iteration plus one, an
 * instruction that faults (a page fault that is then served and retried)
 * once per attempt. Counters are keyed by virtual address only: code of
 * another address space mapped in the range (a user program) would be
 * counted too, so choose a range only kernel code uses. The adds are not
 * atomic: under MTTCG (several vCPUs running in parallel threads) two
 * vCPUs running the same instruction at the same moment can lose an
 * increment, and the window snapshots are taken while other vCPUs run.
 * Use -smp 1 (or -icount, which runs all vCPUs in one thread) for exact
 * counts.
 *
 * Summary line on stderr at exit: "pccount: ...".
 */
#include <errno.h>
#include <glib.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <qemu-plugin.h>

QEMU_PLUGIN_EXPORT int qemu_plugin_version = QEMU_PLUGIN_VERSION;

/* Largest range accepted: 2^28 counters (2 GiB of memory). */
#define MAX_RANGE (1ULL << 28)

static uint64_t range_start, range_end;
static uint64_t *counts;   /* range_end - range_start counters */
#if QEMU_PLUGIN_VERSION >= 2
static struct qemu_plugin_scoreboard *board; /* per vCPU: the counters */
static unsigned int max_vcpus;

/* Sums every vCPU's counters into counts. */
static void gather(void)
{
    size_t n = range_end - range_start;
    memset(counts, 0, n * sizeof(uint64_t));
    for (unsigned int v = 0; v < max_vcpus; v++) {
        const uint64_t *c = qemu_plugin_scoreboard_find(board, v);
        for (size_t i = 0; i < n; i++) {
            counts[i] += c[i];
        }
    }
}
#else
static void gather(void) {}
#endif
static char *out_path;

static uint64_t on_pc, off_pc; /* 0: none */
static uint64_t on_n = 1;      /* snapshot at this execution of on_pc */
static uint64_t on_hits;
static uint64_t *snap_on, *snap_off;
static GMutex mark_lock;

enum { MARK_ON = 1, MARK_OFF = 2 };

static uint64_t *snapshot(void)
{
    size_t n = range_end - range_start;
    uint64_t *s = g_try_malloc(n * sizeof(uint64_t));
    if (s == NULL) {
        fprintf(stderr, "pccount: no memory for a window snapshot\n");
        return NULL;
    }
    gather();
    memcpy(s, counts, n * sizeof(uint64_t));
    return s;
}

/*
 * Runs before the marker instruction executes (and before its own inline
 * add: QEMU emits an instruction's callbacks before its inline ops).
 */
static void mark_exec(unsigned int vcpu_index, void *udata)
{
    uintptr_t what = (uintptr_t)udata;
    (void)vcpu_index;
    g_mutex_lock(&mark_lock);
    if (what & MARK_ON) {
        on_hits++;
        if (on_hits == on_n && snap_on == NULL) {
            snap_on = snapshot();
        }
    }
    if ((what & MARK_OFF) && snap_on != NULL && snap_off == NULL) {
        snap_off = snapshot();
    }
    g_mutex_unlock(&mark_lock);
}

static void tb_trans(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
    size_t n = qemu_plugin_tb_n_insns(tb);
    (void)id;
    for (size_t i = 0; i < n; i++) {
        struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);
        uint64_t pc = qemu_plugin_insn_vaddr(insn);
        if (pc < range_start || pc >= range_end) {
            continue;
        }
        uintptr_t mark = 0;
        if (on_pc != 0 && pc == on_pc) {
            mark |= MARK_ON;
        }
        if (off_pc != 0 && pc == off_pc) {
            mark |= MARK_OFF;
        }
        if (mark != 0) {
            qemu_plugin_register_vcpu_insn_exec_cb(insn, mark_exec, QEMU_PLUGIN_CB_NO_REGS,
                                                   (void *)mark);
        }
#if QEMU_PLUGIN_VERSION >= 2
        qemu_plugin_u64 entry = {board, (pc - range_start) * sizeof(uint64_t)};
        qemu_plugin_register_vcpu_insn_exec_inline_per_vcpu(insn, QEMU_PLUGIN_INLINE_ADD_U64,
                                                            entry, 1);
#else
        qemu_plugin_register_vcpu_insn_exec_inline(insn, QEMU_PLUGIN_INLINE_ADD_U64,
                                                   &counts[pc - range_start], 1);
#endif
    }
}

static void put64(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++) {
        p[i] = (unsigned char)(v >> (8 * i));
    }
}

/*
 * Writes the non-zero entries of c (minus base, if given) to path, and
 * returns the number of records, or -1 on error. Sets *total to the sum.
 */
static long write_counts(const char *path, const uint64_t *c, const uint64_t *base, uint64_t *total)
{
    char *tmp = g_strdup_printf("%s.tmp", path);
    FILE *f = fopen(tmp, "wb");
    long recs = 0;
    *total = 0;
    if (f == NULL) {
        fprintf(stderr, "pccount: %s: %s\n", tmp, strerror(errno));
        g_free(tmp);
        return -1;
    }
    size_t n = range_end - range_start;
    for (size_t i = 0; i < n; i++) {
        uint64_t v = c[i] - (base != NULL ? base[i] : 0);
        if (v == 0) {
            continue;
        }
        unsigned char rec[16];
        put64(rec, range_start + i);
        put64(rec + 8, v);
        if (fwrite(rec, sizeof rec, 1, f) != 1) {
            break;
        }
        recs++;
        *total += v;
    }
    if (ferror(f) | (fclose(f) != 0) || rename(tmp, path) != 0) {
        fprintf(stderr, "pccount: writing %s: %s\n", path, strerror(errno));
        remove(tmp);
        g_free(tmp);
        return -1;
    }
    g_free(tmp);
    return recs;
}

static void at_exit(qemu_plugin_id_t id, void *p)
{
    uint64_t total, wtotal = 0;
    long recs, wrecs = 0;
    (void)id;
    (void)p;
    g_mutex_lock(&mark_lock);
    gather();
    recs = write_counts(out_path, counts, NULL, &total);
    if (on_pc != 0) {
        char *wpath = g_strdup_printf("%s.window", out_path);
        if (snap_on != NULL) {
            const uint64_t *end = snap_off != NULL ? snap_off : counts;
            wrecs = write_counts(wpath, end, snap_on, &wtotal);
        } else {
            remove(wpath);
        }
        g_free(wpath);
    }
    fprintf(stderr, "pccount: %" PRIu64 " instructions in [%#" PRIx64 ", %#" PRIx64 ") at %ld PCs -> %s",
            total, range_start, range_end, recs, out_path);
    if (on_pc != 0) {
        if (snap_on == NULL) {
            fprintf(stderr, "; window: on=%#" PRIx64 " ran %" PRIu64 " times, fewer than on_n=%" PRIu64
                    ", no window written", on_pc, on_hits, on_n);
        } else {
            fprintf(stderr, "; window %s: %" PRIu64 " instructions at %ld PCs -> %s.window",
                    snap_off != NULL ? "on..off" : "on..exit (off never ran)", wtotal, wrecs, out_path);
        }
    }
    fprintf(stderr, "\n");
    g_mutex_unlock(&mark_lock);
}

static int parse_u64(const char *key, const char *val, uint64_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(val, &end, 0);
    if (errno != 0 || end == val || *end != '\0') {
        fprintf(stderr, "pccount: %s=%s: not a number\n", key, val);
        return -1;
    }
    *out = v;
    return 0;
}

QEMU_PLUGIN_EXPORT int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info,
                                           int argc, char **argv)
{
    int have_start = 0, have_end = 0;
    for (int i = 0; i < argc; i++) {
        char *eq = strchr(argv[i], '=');
        if (eq == NULL) {
            fprintf(stderr, "pccount: argument %s: want key=value\n", argv[i]);
            return -1;
        }
        *eq = '\0';
        const char *k = argv[i], *v = eq + 1;
        int err = 0;
        if (strcmp(k, "start") == 0) {
            err = parse_u64(k, v, &range_start);
            have_start = 1;
        } else if (strcmp(k, "end") == 0) {
            err = parse_u64(k, v, &range_end);
            have_end = 1;
        } else if (strcmp(k, "out") == 0) {
            out_path = g_strdup(v);
        } else if (strcmp(k, "on") == 0) {
            err = parse_u64(k, v, &on_pc);
        } else if (strcmp(k, "on_n") == 0) {
            err = parse_u64(k, v, &on_n);
        } else if (strcmp(k, "off") == 0) {
            err = parse_u64(k, v, &off_pc);
        } else {
            fprintf(stderr, "pccount: unknown argument %s (want start, end, out, on, on_n, off)\n", k);
            return -1;
        }
        *eq = '=';
        if (err != 0) {
            return -1;
        }
    }
    if (!have_start || !have_end || out_path == NULL) {
        fprintf(stderr, "pccount: usage: -plugin libpccount.so,start=0x...,end=0x...,out=FILE"
                        "[,on=0xPC[,on_n=N],off=0xPC]\n");
        return -1;
    }
    if (range_end <= range_start || range_end - range_start > MAX_RANGE) {
        fprintf(stderr, "pccount: bad range [%#" PRIx64 ", %#" PRIx64 ") (at most %#llx bytes)\n",
                range_start, range_end, MAX_RANGE);
        return -1;
    }
    if ((on_pc != 0 && (on_pc < range_start || on_pc >= range_end)) ||
        (off_pc != 0 && (off_pc < range_start || off_pc >= range_end))) {
        fprintf(stderr, "pccount: on and off must be inside [start, end)\n");
        return -1;
    }
    if (off_pc != 0 && on_pc == 0) {
        fprintf(stderr, "pccount: off needs on\n");
        return -1;
    }
    if (on_n == 0) {
        fprintf(stderr, "pccount: on_n counts from 1\n");
        return -1;
    }
    if (info->system_emulation && info->system.smp_vcpus > 1 && !getenv("PCCOUNT_QUIET")) {
        fprintf(stderr, "pccount: %d vCPUs: counts are exact only if the vCPUs run in one thread "
                        "(-icount or -accel tcg,thread=single); use -smp 1 for exact runs\n",
                info->system.smp_vcpus);
    }
    /* Zeroed on demand by the kernel: untouched pages cost nothing. */
    counts = g_try_malloc0((range_end - range_start) * sizeof(uint64_t));
    if (counts == NULL) {
        fprintf(stderr, "pccount: no memory for %" PRIu64 " counters\n", range_end - range_start);
        return -1;
    }
#if QEMU_PLUGIN_VERSION >= 2
    max_vcpus = info->system_emulation ? (unsigned int)info->system.max_vcpus : 1;
    board = qemu_plugin_scoreboard_new((range_end - range_start) * sizeof(uint64_t));
#endif
    g_mutex_init(&mark_lock);
    qemu_plugin_register_vcpu_tb_trans_cb(id, tb_trans);
    qemu_plugin_register_atexit_cb(id, at_exit, NULL);
    return 0;
}
