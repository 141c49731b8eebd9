/*
 * t_numa: the NUMA layout under /sys/devices/system/node, as Linux reports
 * it and numactl/libnuma read it, on any machine (one node by default, the
 * nodes of the ACPI SRAT under tools/numatest.sh):
 *   - online and possible are node lists, online within possible;
 *   - every node's cpulist parses, the lists are disjoint and together
 *     hold exactly the CPUs this process may run on;
 *   - getcpu's node is the node whose cpulist holds getcpu's CPU;
 *   - every node's meminfo has MemTotal >= MemFree, and the nodes add up
 *     to /proc/meminfo's MemTotal and MemFree (within 1/64 and 1/16 of
 *     MemTotal: memory moves while the files are read);
 *   - memory comes from the toucher's node first: threads (one per CPU,
 *     at most 8) each touch 32 MiB in 1 MiB chunks at once, a chunk counted
 *     for a node when getcpu names that node before and after it; each
 *     node's MemFree must drop by at least half of its chunks (each thread
 *     asks to run on its own CPU; a kernel that does not pin may move it,
 *     which only moves chunks between the counts);
 *   - h_numahw (the numactl --hardware-like tool) counts the same nodes.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/syscall.h>

#include "check.h"
#include "numa.h"

static unsigned long long proc_meminfo(const char *key)
{
	FILE *f = fopen("/proc/meminfo", "r");
	char line[256], k[64];
	unsigned long long v, got = 0;
	if (!f)
		return 0;
	while (fgets(line, sizeof line, f))
		if (sscanf(line, "%63[^:]: %llu kB", k, &v) == 2 && !strcmp(k, key))
			got = v;
	fclose(f);
	return got;
}

static unsigned long long diff(unsigned long long a, unsigned long long b) { return a > b ? a - b : b - a; }

static int getcpu_node(unsigned *cpu, unsigned *node)
{
	return syscall(SYS_getcpu, cpu, node, NULL);
}

#define CHUNKS 32
#define CHUNK (1 << 20)

static pthread_barrier_t start;

/* A toucher asks to run on cpu, then touches CHUNKS MiB one MiB at a time,
 * counting per node the chunks getcpu placed on that node before and
 * after. */
struct toucher {
	int cpu;
	char *p;
	int local[NUMA_MAX];
};

static void *touch(void *arg)
{
	struct toucher *t = arg;
	cpu_set_t one;
	CPU_ZERO(&one);
	CPU_SET(t->cpu, &one);
	sched_setaffinity(0, sizeof one, &one);
	char *p = mmap(NULL, CHUNKS * CHUNK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	pthread_barrier_wait(&start);
	if (p == MAP_FAILED)
		return NULL;
	t->p = p;
	for (int i = 0; i < CHUNKS; i++) {
		unsigned c0, n0, c1, n1;
		syscall(SYS_getcpu, &c0, &n0, NULL);
		memset(p + (size_t)i * CHUNK, 1, CHUNK);
		syscall(SYS_getcpu, &c1, &n1, NULL);
		if (n0 == n1 && n0 < NUMA_MAX)
			t->local[n0]++;
	}
	return NULL;
}

static unsigned long long node_free(int n)
{
	unsigned long long t = 0, f = 0;
	numa_meminfo(n, &t, &f);
	return f;
}

int main(int argc, char **argv)
{
	(void)argc;
	check_prog = "t_numa";
	char buf[512];
	int online[NUMA_MAX], possible[NUMA_MAX], cpus[NUMA_MAX][NUMA_MAX], cpunode[NUMA_MAX];
	if (!CHECK_SYS("online.read", numa_read(NUMA_DIR "/online", buf, sizeof buf)))
		return check_done();
	int nnodes = numa_list(buf, online);
	CHECK("online.parse", nnodes >= 1);
	CHECK_SYS("possible.read", numa_read(NUMA_DIR "/possible", buf, sizeof buf));
	CHECK("possible.parse", numa_list(buf, possible) >= nnodes);
	int within = 1;
	for (int i = 0; i < NUMA_MAX; i++)
		within &= !online[i] || possible[i];
	CHECK("online.within_possible", within);

	cpu_set_t aff;
	CPU_ZERO(&aff);
	CHECK_SYS("sched_getaffinity", sched_getaffinity(0, sizeof aff, &aff));
	int disjoint = 1, parsed = 1;
	for (int c = 0; c < NUMA_MAX; c++)
		cpunode[c] = -1;
	unsigned long long total = 0, freekb = 0, memtotal = proc_meminfo("MemTotal");
	int meminfo_ok = 1, free_le_total = 1;
	for (int n = 0; n < NUMA_MAX; n++) {
		if (!online[n])
			continue;
		parsed &= numa_cpus(n, cpus[n]) >= 0;
		for (int c = 0; c < NUMA_MAX; c++) {
			if (!cpus[n][c])
				continue;
			disjoint &= cpunode[c] < 0;
			cpunode[c] = n;
		}
		unsigned long long t = 0, f = 0;
		meminfo_ok &= numa_meminfo(n, &t, &f) == 0;
		free_le_total &= f <= t;
		total += t;
		freekb += f;
	}
	unsigned long long memfree = proc_meminfo("MemFree");
	CHECK("cpulist.parse", parsed);
	CHECK("cpulist.disjoint", disjoint);
	int covers = 1;
	for (int c = 0; c < NUMA_MAX; c++)
		if (CPU_ISSET(c, &aff) && cpunode[c] < 0)
			covers = 0;
	CHECK("cpulist.covers_affinity", covers);
	CHECK("meminfo.parse", meminfo_ok);
	CHECK("meminfo.free_le_total", free_le_total);
	check_report("meminfo.total_adds_up", memtotal > 0 && diff(total, memtotal) <= memtotal / 64,
		     "nodes %llu kB, /proc/meminfo %llu kB", total, memtotal);
	check_report("meminfo.free_adds_up", diff(freekb, memfree) <= memtotal / 16,
		     "nodes %llu kB free, /proc/meminfo %llu kB", freekb, memfree);

	unsigned cpu = ~0u, node = ~0u;
	CHECK_SYS("getcpu", getcpu_node(&cpu, &node));
	check_report("getcpu.node", cpu < NUMA_MAX && cpunode[cpu] == (int)node,
		     "cpu %u node %u, cpulists put it on %d", cpu, node, cpu < NUMA_MAX ? cpunode[cpu] : -1);

	/* Locality: a thread per CPU we may use (up to 8), each asking to run
	 * on its CPU, touches its memory at the same time as the others. */
	pthread_t th[8];
	struct toucher t[8];
	int nthreads = 0;
	pthread_barrier_init(&start, NULL, CPU_COUNT(&aff) < 8 ? CPU_COUNT(&aff) : 8);
	unsigned long long before[NUMA_MAX], after[NUMA_MAX];
	for (int n = 0; n < NUMA_MAX; n++)
		before[n] = online[n] ? node_free(n) : 0;
	for (int c = 0; c < NUMA_MAX && nthreads < 8 && nthreads < CPU_COUNT(&aff); c++) {
		if (!CPU_ISSET(c, &aff))
			continue;
		memset(&t[nthreads], 0, sizeof t[nthreads]);
		t[nthreads].cpu = c;
		if (pthread_create(&th[nthreads], NULL, touch, &t[nthreads]) != 0)
			break;
		nthreads++;
	}
	int local[NUMA_MAX] = {0}, mapped = 1;
	for (int i = 0; i < nthreads; i++) {
		pthread_join(th[i], NULL);
		mapped &= t[i].p != NULL;
		for (int n = 0; n < NUMA_MAX; n++)
			local[n] += t[i].local[n];
	}
	for (int n = 0; n < NUMA_MAX; n++)
		after[n] = online[n] ? node_free(n) : 0;
	CHECK("locality.mmap", mapped);
	for (int n = 0; n < NUMA_MAX; n++) {
		if (!online[n])
			continue;
		long long dropped = (long long)before[n] - (long long)after[n];
		char name[64];
		snprintf(name, sizeof name, "locality.node%d", n);
		printf("# node %d: %d MiB touched on the node, its free memory dropped %lld kB\n", n, local[n], dropped);
		check_report(name, dropped >= (long long)local[n] * (long long)(CHUNK >> 10) / 2,
			     "node %d free %llu -> %llu kB (%lld kB) after %d local MiB", n, before[n], after[n], dropped, local[n]);
	}
	for (int i = 0; i < nthreads; i++)
		if (t[i].p)
			munmap(t[i].p, CHUNKS * CHUNK);

	/* The numactl --hardware-like tool sees the same nodes. */
	char tool_path[512];
	const char *slash = strrchr(argv[0], '/');
	snprintf(tool_path, sizeof tool_path, "%.*sh_numahw", slash ? (int)(slash - argv[0] + 1) : 0, argv[0]);
	FILE *tool = popen(tool_path, "r");
	int avail = -1;
	if (tool) {
		while (fgets(buf, sizeof buf, tool))
			sscanf(buf, "available: %d nodes", &avail);
		pclose(tool);
	}
	CHECK_EQ("h_numahw.nodes", avail, nnodes);
	return check_done();
}
