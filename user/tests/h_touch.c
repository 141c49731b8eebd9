/*
 * h_touch MIB: maps MIB MiB of anonymous memory, writes every page and
 * reads it back, and checks /proc/meminfo's MemFree dropped by at least
 * 90% of it; prints "touched N MiB, MemTotal T kB, MemFree A -> B kB".
 * tools/memtest.sh runs it on machines with memory above 4 GiB, where
 * touching more than the RAM below 4 GiB needs the frames above.
 * Exit status 0 iff the memory was there.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

static unsigned long long meminfo(const char *key)
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

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: h_touch MIB\n");
		return 2;
	}
	size_t mib = strtoull(argv[1], NULL, 10), n = mib << 20;
	unsigned long long before = meminfo("MemFree");
	unsigned char *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED) {
		perror("h_touch: mmap");
		return 1;
	}
	for (size_t i = 0; i < n; i += 4096)
		p[i] = (unsigned char)(i >> 12);
	unsigned long long after = meminfo("MemFree");
	size_t bad = 0;
	for (size_t i = 0; i < n; i += 4096)
		bad += p[i] != (unsigned char)(i >> 12);
	printf("touched %zu MiB, MemTotal %llu kB, MemFree %llu -> %llu kB, %zu pages wrong\n", mib,
	       meminfo("MemTotal"), before, after, bad);
	return bad == 0 && before > after && before - after >= (unsigned long long)mib * 1024 * 9 / 10 ? 0 : 1;
}
