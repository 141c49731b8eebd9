/* Reads the kernel's GC statistics from /proc/shortbread/gc, asks for a
 * collection by writing "gc" there and checks the cycle count moved; also
 * checks /proc/meminfo. Exit status: the number of failed checks. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static long field(const char *path, const char *key)
{
	char buf[4096];
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		return -1;
	ssize_t n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = 0;
	for (char *line = strtok(buf, "\n"); line; line = strtok(NULL, "\n")) {
		size_t k = strlen(key);
		if (strncmp(line, key, k) == 0 && (line[k] == ' ' || line[k] == ':'))
			return atol(line + k + 1 + strspn(line + k + 1, " "));
	}
	return -1;
}

int main(void)
{
	int failed = 0;
	long before = field("/proc/shortbread/gc", "gc_cycles");
	int fd = open("/proc/shortbread/gc", O_WRONLY);
	if (fd < 0 || write(fd, "gc\n", 3) != 3) {
		printf("not ok write gc\n");
		failed++;
	}
	close(fd);
	long after = field("/proc/shortbread/gc", "gc_cycles");
	long heap = field("/proc/shortbread/gc", "live_heap");
	printf("gc_cycles %ld -> %ld, live_heap %ld\n", before, after, heap);
	if (before < 0 || after < before + 1) {
		printf("not ok gc_cycles did not advance\n");
		failed++;
	}
	if (heap <= 0) {
		printf("not ok live_heap\n");
		failed++;
	}
	long total = field("/proc/meminfo", "MemTotal");
	if (total <= 0) {
		printf("not ok MemTotal %ld\n", total);
		failed++;
	}
	return failed;
}
