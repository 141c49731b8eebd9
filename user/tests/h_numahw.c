/*
 * h_numahw: prints the machine's NUMA layout as `numactl --hardware` does
 * (nodes, their CPUs, size and free memory, distances), from
 * /sys/devices/system/node. Exit status 1 if the directory cannot be read.
 */
#include "numa.h"

int main(void)
{
	char buf[512];
	int online[NUMA_MAX], cpus[NUMA_MAX];
	if (numa_read(NUMA_DIR "/online", buf, sizeof buf) < 0) {
		perror(NUMA_DIR "/online");
		return 1;
	}
	int n = numa_list(buf, online);
	if (n < 0) {
		fprintf(stderr, "h_numahw: bad node list %s\n", buf);
		return 1;
	}
	printf("available: %d nodes (%s)\n", n, buf);
	for (int i = 0; i < NUMA_MAX; i++) {
		if (!online[i])
			continue;
		printf("node %d cpus:", i);
		if (numa_cpus(i, cpus) >= 0)
			for (int c = 0; c < NUMA_MAX; c++)
				if (cpus[c])
					printf(" %d", c);
		printf("\n");
		unsigned long long total = 0, freekb = 0;
		numa_meminfo(i, &total, &freekb);
		printf("node %d size: %llu MB\nnode %d free: %llu MB\n", i, total >> 10, i, freekb >> 10);
	}
	printf("node distances:\nnode ");
	for (int i = 0; i < NUMA_MAX; i++)
		if (online[i])
			printf("%4d", i);
	printf("\n");
	for (int i = 0; i < NUMA_MAX; i++) {
		if (!online[i])
			continue;
		char path[128];
		snprintf(path, sizeof path, NUMA_DIR "/node%d/distance", i);
		if (numa_read(path, buf, sizeof buf) < 0)
			buf[0] = 0;
		printf("%4d:", i);
		for (char *p = buf, *end; *p; p = end) {
			long d = strtol(p, &end, 10);
			if (end == p)
				break;
			printf("%4ld", d);
		}
		printf("\n");
	}
	return 0;
}
