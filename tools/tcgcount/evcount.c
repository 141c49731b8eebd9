/*
 * evcount: a QEMU TCG plugin that counts, over all vCPUs, the executions
 * of instructions that cost far more under TCG than their count says, and
 * the instructions executed in each half of the address space:
 *
 *   cr3           MOV to CR3: QEMU flushes the vCPU's whole soft TLB
 *   hlt           HLT: the vCPU's host thread sleeps until an interrupt
 *   wrmsr         WRMSR: x2APIC ICR (IPIs) and timer writes take QEMU's
 *                 global lock
 *   invlpg        INVLPG
 *   user_insns    instructions at addresses below 2^47
 *   kernel_insns  instructions at addresses at or above 2^47
 *
 * Any guest kernel: nothing depends on symbols (Linux and Shortbread both
 * run in the upper half). Linux without interrupt remapping keeps the
 * xAPIC, whose registers are memory writes, so its wrmsr row is not its
 * IPI count. Counting uses per-vCPU scoreboards (plugin API >= 2), so it
 * is exact under MTTCG too. Arguments: out=FILE (default: stderr), where
 * the totals go at exit, one "name count" line each: the totals, then
 * each event per vCPU ("hlt.cpu1"), then WRMSRs by vCPU and MSR (ECX,
 * read by a callback at each WRMSR), "wrmsr.cpu1.80b" in hex, an x2APIC
 * ICR write (830) also by the vector it sends ("wrmsr.cpu1.830.vec0x39",
 * EAX's low byte).
 * Which MSRs a vCPU wrote depends on the run, so a reader of two files
 * matches lines by name (events.sh does).
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <glib.h>
#include <qemu-plugin.h>

QEMU_PLUGIN_EXPORT int qemu_plugin_version = QEMU_PLUGIN_VERSION;

enum { EV_CR3, EV_HLT, EV_WRMSR, EV_INVLPG, EV_USER, EV_KERNEL, EV_COUNT };

static const char *const ev_names[EV_COUNT] = {
    "cr3", "hlt", "wrmsr", "invlpg", "user_insns", "kernel_insns",
};

static struct qemu_plugin_scoreboard *ev_board[EV_COUNT];
static char *out_path;

/* WRMSRs by MSR, per vCPU: a small table each vCPU's callback fills for
 * itself (so no lock), keys in the order first written. The key is the
 * MSR number, and for the x2APIC ICR also the vector << 32. */
enum { MSR_SLOTS = 64, MAX_VCPUS = 256 };
struct msr_table {
    uint64_t key[MSR_SLOTS];
    uint64_t n[MSR_SLOTS];
    uint64_t lost; /* writes past the table's last slot */
};
static struct qemu_plugin_scoreboard *msr_board;
static struct qemu_plugin_register *reg_rcx[MAX_VCPUS], *reg_rax[MAX_VCPUS];

/* The event an instruction's bytes encode, or -1. Prefixes (operand
 * size, REP, REX) are skipped; the ModRM byte tells MOV CR3 (reg field 3,
 * register operand) and INVLPG (0F 01 /7, memory operand) apart from
 * their neighbours. */
static int classify(const uint8_t *b, size_t n)
{
    size_t i = 0;

    while (i < n && (b[i] == 0x66 || b[i] == 0xf2 || b[i] == 0xf3 || (b[i] & 0xf0) == 0x40)) {
        i++;
    }
    if (i < n && b[i] == 0xf4) {
        return EV_HLT;
    }
    if (i + 1 >= n || b[i] != 0x0f) {
        return -1;
    }
    if (b[i + 1] == 0x30) {
        return EV_WRMSR;
    }
    if (i + 2 < n) {
        uint8_t modrm = b[i + 2];
        if (b[i + 1] == 0x22 && ((modrm >> 3) & 7) == 3 && (modrm >> 6) == 3) {
            return EV_CR3;
        }
        if (b[i + 1] == 0x01 && ((modrm >> 3) & 7) == 7 && (modrm >> 6) != 3) {
            return EV_INVLPG;
        }
    }
    return -1;
}

static uint32_t read_reg32(struct qemu_plugin_register *r)
{
    GByteArray *buf = g_byte_array_sized_new(8);
    uint32_t v = 0;

    if (r != NULL && qemu_plugin_read_register(r, buf) >= 4) {
        memcpy(&v, buf->data, 4); /* little-endian target, as the host */
    }
    g_byte_array_free(buf, TRUE);
    return v;
}

static void on_vcpu_init(qemu_plugin_id_t id, unsigned int vcpu)
{
    GArray *regs = qemu_plugin_get_registers();

    (void)id;
    for (guint i = 0; vcpu < MAX_VCPUS && i < regs->len; i++) {
        qemu_plugin_reg_descriptor *d = &g_array_index(regs, qemu_plugin_reg_descriptor, i);
        if (strcmp(d->name, "rcx") == 0 || strcmp(d->name, "ecx") == 0) {
            reg_rcx[vcpu] = d->handle;
        } else if (strcmp(d->name, "rax") == 0 || strcmp(d->name, "eax") == 0) {
            reg_rax[vcpu] = d->handle;
        }
    }
    g_array_free(regs, TRUE);
}

static void on_wrmsr(unsigned int vcpu, void *udata)
{
    struct msr_table *t = qemu_plugin_scoreboard_find(msr_board, vcpu);
    uint64_t key;

    (void)udata;
    if (vcpu >= MAX_VCPUS) {
        return;
    }
    key = read_reg32(reg_rcx[vcpu]);
    if (key == 0x830) {
        key |= (uint64_t)(read_reg32(reg_rax[vcpu]) & 0xff) << 32;
    }
    for (int i = 0; i < MSR_SLOTS; i++) {
        if (t->n[i] == 0) {
            t->key[i] = key;
        }
        if (t->key[i] == key) {
            t->n[i]++;
            return;
        }
    }
    t->lost++;
}

static void on_translate(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
    size_t n = qemu_plugin_tb_n_insns(tb);
    int half = qemu_plugin_tb_vaddr(tb) >= 0x800000000000ULL ? EV_KERNEL : EV_USER;

    (void)id;
    qemu_plugin_register_vcpu_tb_exec_inline_per_vcpu(tb, QEMU_PLUGIN_INLINE_ADD_U64,
                                                      qemu_plugin_scoreboard_u64(ev_board[half]), n);
    for (size_t i = 0; i < n; i++) {
        struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);
        uint8_t bytes[16];
        size_t len = qemu_plugin_insn_data(insn, bytes, sizeof bytes);
        int ev = classify(bytes, len);

        if (ev >= 0) {
            qemu_plugin_register_vcpu_insn_exec_inline_per_vcpu(insn, QEMU_PLUGIN_INLINE_ADD_U64,
                                                                qemu_plugin_scoreboard_u64(ev_board[ev]), 1);
        }
        if (ev == EV_WRMSR) {
            qemu_plugin_register_vcpu_insn_exec_cb(insn, on_wrmsr, QEMU_PLUGIN_CB_R_REGS, NULL);
        }
    }
}

static void write_totals(qemu_plugin_id_t id, void *data)
{
    FILE *f = out_path ? fopen(out_path, "w") : stderr;

    (void)id;
    (void)data;
    if (f == NULL) {
        return;
    }
    for (int ev = 0; ev < EV_COUNT; ev++) {
        fprintf(f, "%s %" PRIu64 "\n", ev_names[ev],
                qemu_plugin_u64_sum(qemu_plugin_scoreboard_u64(ev_board[ev])));
    }
    for (int cpu = 0; cpu < qemu_plugin_num_vcpus(); cpu++) {
        for (int ev = 0; ev < EV_COUNT; ev++) {
            fprintf(f, "%s.cpu%d %" PRIu64 "\n", ev_names[ev], cpu,
                    qemu_plugin_u64_get(qemu_plugin_scoreboard_u64(ev_board[ev]), cpu));
        }
    }
    for (int cpu = 0; cpu < qemu_plugin_num_vcpus() && cpu < MAX_VCPUS; cpu++) {
        struct msr_table *t = qemu_plugin_scoreboard_find(msr_board, cpu);
        for (int i = 0; i < MSR_SLOTS && t->n[i] != 0; i++) {
            uint32_t msr = (uint32_t)t->key[i];
            if (msr == 0x830) {
                fprintf(f, "wrmsr.cpu%d.%x.vec%#x %" PRIu64 "\n", cpu, msr,
                        (unsigned)(t->key[i] >> 32), t->n[i]);
            } else {
                fprintf(f, "wrmsr.cpu%d.%x %" PRIu64 "\n", cpu, msr, t->n[i]);
            }
        }
        if (t->lost != 0) {
            fprintf(f, "wrmsr.cpu%d.other %" PRIu64 "\n", cpu, t->lost);
        }
    }
    if (f != stderr) {
        fclose(f);
    }
}

QEMU_PLUGIN_EXPORT int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info,
                                           int argc, char **argv)
{
    (void)info;
    for (int i = 0; i < argc; i++) {
        if (strncmp(argv[i], "out=", 4) == 0) {
            out_path = g_strdup(argv[i] + 4);
        }
    }
    for (int ev = 0; ev < EV_COUNT; ev++) {
        ev_board[ev] = qemu_plugin_scoreboard_new(sizeof(uint64_t));
    }
    msr_board = qemu_plugin_scoreboard_new(sizeof(struct msr_table));
    qemu_plugin_register_vcpu_init_cb(id, on_vcpu_init);
    qemu_plugin_register_vcpu_tb_trans_cb(id, on_translate);
    qemu_plugin_register_atexit_cb(id, write_totals, NULL);
    return 0;
}
