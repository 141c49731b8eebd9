/*
 * numa.h: reading the NUMA layout Linux reports under
 * /sys/devices/system/node (t_numa and h_numahw share it).
 */
#ifndef SHORTBREAD_NUMA_H
#define SHORTBREAD_NUMA_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NUMA_DIR "/sys/devices/system/node"
#define NUMA_MAX 64 /* nodes and CPUs this reader keeps apart */

/* numa_read reads a small file into buf (NUL-terminated, newline cut);
 * -1 if it cannot be opened. */
static int numa_read(const char *path, char *buf, size_t n)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	size_t got = fread(buf, 1, n - 1, f);
	fclose(f);
	buf[got] = 0;
	char *nl = strchr(buf, '\n');
	if (nl)
		*nl = 0;
	return 0;
}

/* numa_list parses a Linux list ("0-3,6") into set[0..NUMA_MAX): the
 * count of members, or -1 for a malformed list or a number past NUMA_MAX. */
static int numa_list(const char *s, int set[NUMA_MAX])
{
	memset(set, 0, NUMA_MAX * sizeof set[0]);
	int count = 0;
	while (*s) {
		char *end;
		long a = strtol(s, &end, 10), b = a;
		if (end == s)
			return -1;
		if (*end == '-') {
			s = end + 1;
			b = strtol(s, &end, 10);
			if (end == s)
				return -1;
		}
		if (a < 0 || b < a || b >= NUMA_MAX)
			return -1;
		for (long i = a; i <= b; i++)
			count += !set[i], set[i] = 1;
		s = end;
		if (*s == ',')
			s++;
		else if (*s)
			return -1;
	}
	return count;
}

/* numa_meminfo reads node n's MemTotal and MemFree (KiB); -1 if either is
 * missing. */
static int numa_meminfo(int n, unsigned long long *total, unsigned long long *freekb)
{
	char path[128], line[256];
	snprintf(path, sizeof path, NUMA_DIR "/node%d/meminfo", n);
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	int found = 0, node;
	unsigned long long v;
	char key[64];
	while (fgets(line, sizeof line, f)) {
		if (sscanf(line, "Node %d %63[^:]: %llu kB", &node, key, &v) != 3 || node != n)
			continue;
		if (!strcmp(key, "MemTotal"))
			*total = v, found |= 1;
		else if (!strcmp(key, "MemFree"))
			*freekb = v, found |= 2;
	}
	fclose(f);
	return found == 3 ? 0 : -1;
}

/* numa_cpus reads node n's cpulist into set; the count or -1. */
static int numa_cpus(int n, int set[NUMA_MAX])
{
	char path[128], buf[512];
	snprintf(path, sizeof path, NUMA_DIR "/node%d/cpulist", n);
	if (numa_read(path, buf, sizeof buf) < 0)
		return -1;
	return numa_list(buf, set);
}

#endif
