/*
 * disks.h: finding the disks a harness attached. Linux names SATA disks
 * in the order their ports finish probing, which varies from boot to
 * boot, so a harness names a SATA disk by its size: "sata:KIB" is the
 * sd disk /proc/partitions lists with KIB 1 KiB blocks (the images are
 * made with distinct sizes). Other names (vda) are taken as they are.
 */
#ifndef SHORTBREAD_DISKS_H
#define SHORTBREAD_DISKS_H

#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* resolve_disk writes the device name for spec into out; it waits up to
 * 10 s for a SATA disk to show up (Linux probes in the background) and
 * returns 0 if none does. */
static int resolve_disk(const char *spec, char *out, size_t n)
{
	if (strncmp(spec, "sata:", 5) != 0) {
		snprintf(out, n, "%s", spec);
		return 1;
	}
	long long want = atoll(spec + 5);
	for (int tries = 0; tries < 100; tries++) {
		FILE *f = fopen("/proc/partitions", "r");
		char line[256], name[64];
		int maj, min;
		long long kib;
		while (f && fgets(line, sizeof line, f)) {
			if (sscanf(line, "%d %d %lld %63s", &maj, &min, &kib, name) == 4 && maj == 8 && min % 16 == 0 &&
			    kib == want && strncmp(name, "sd", 2) == 0) {
				fclose(f);
				snprintf(out, n, "%s", name);
				return 1;
			}
		}
		if (f)
			fclose(f);
		usleep(100 * 1000);
	}
	printf("# no SATA disk of %lld KiB in /proc/partitions\n", want);
	return 0;
}

#endif
