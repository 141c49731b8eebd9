/*
 * t_pci: the PCI device listing user space reads. busybox lspci walks
 * /sys/bus/pci/devices, where every entry must be a symbolic link (it
 * treats a directory as one to descend into), and parses each one's
 * uevent file (DRIVER=, PCI_CLASS=, PCI_ID=, PCI_SUBSYS_ID=,
 * PCI_SLOT_NAME=).
 *
 * Checks, for every function /proc/bus/pci/devices lists (the other
 * listing, which gives the IDs and the bound driver): its entry in
 * /sys/bus/pci/devices is a link into /sys/devices/pci0000:00/...;
 * vendor, device, class, subsystem_vendor and subsystem_device hold
 * Linux's "0x%04x"/"0x%06x" values, agreeing with the /proc row and with
 * uevent, whose lines are in Linux's formats (uppercase hex, the class
 * padded to four digits only, DRIVER= first and only when a driver is
 * bound, named as in /proc); a bound function's driver link names its
 * driver. Nothing else is listed. Then the q35 host bridge at
 * 0000:00:00.0 (8086:29c0, class 060000, QEMU's subsystem 1af4:1100),
 * and busybox lspci, -m and -k: one line per function, each as expected
 * from the /proc row and the class file.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <limits.h>

#include "check.h"

#define MAX_FUNCS 64

struct func {
	char name[20];   /* 0000:00:1f.2 */
	unsigned vendor, device;
	char driver[64]; /* "" when none is bound */
	unsigned class, subvendor, subdevice; /* from sysfs */
};

static struct func funcs[MAX_FUNCS];
static int nfuncs;

/* the rows of /proc/bus/pci/devices: bus and devfn, IDs, driver (the
 * field after the 17th tab) */
static int read_proc(void)
{
	FILE *f = fopen("/proc/bus/pci/devices", "r");
	if (!f)
		return -1;
	char line[1024];
	while (nfuncs < MAX_FUNCS && fgets(line, sizeof line, f)) {
		unsigned bdf, id;
		if (sscanf(line, "%x\t%x", &bdf, &id) != 2)
			continue;
		struct func *fn = &funcs[nfuncs++];
		snprintf(fn->name, sizeof fn->name, "0000:%02x:%02x.%u", (bdf >> 8) & 0xff, (bdf >> 3) & 31, bdf & 7);
		fn->vendor = id >> 16;
		fn->device = id & 0xffff;
		char *p = line;
		for (int tabs = 0; p && tabs < 17; tabs++)
			p = strchr(p, '\t') ? strchr(p, '\t') + 1 : NULL;
		if (p) {
			p[strcspn(p, "\n")] = 0;
			snprintf(fn->driver, sizeof fn->driver, "%s", p);
		}
	}
	fclose(f);
	return nfuncs;
}

/* reads /sys/bus/pci/devices/NAME/FILE into buf; its length or -1 */
static ssize_t sys_read(const char *name, const char *file, char *buf, size_t size)
{
	char path[PATH_MAX];
	snprintf(path, sizeof path, "/sys/bus/pci/devices/%s/%s", name, file);
	return check_read_file(path, buf, size);
}

/* a "0xHEX\n" file with exactly digits digits; the value or -1 */
static long hex_file(const char *name, const char *file, int digits)
{
	char buf[64];
	ssize_t n = sys_read(name, file, buf, sizeof buf);
	if (n != digits + 3 || strncmp(buf, "0x", 2) != 0 || buf[n - 1] != '\n')
		return -1;
	char *end;
	long v = strtol(buf + 2, &end, 16);
	return end == buf + n - 1 ? v : -1;
}

/* the first function failing a check, for the report */
static char bad[128];

static void note_bad(const struct func *fn, const char *what)
{
	if (!bad[0])
		snprintf(bad, sizeof bad, "%s: %s", fn->name, what);
}

/* the entry is a link into /sys/devices/pci0000:00, ending in its name */
static int check_link(const struct func *fn)
{
	char path[PATH_MAX], target[PATH_MAX];
	struct stat st;
	snprintf(path, sizeof path, "/sys/bus/pci/devices/%s", fn->name);
	if (lstat(path, &st) != 0 || !S_ISLNK(st.st_mode))
		return 0;
	ssize_t n = readlink(path, target, sizeof target - 1);
	if (n <= 0)
		return 0;
	target[n] = 0;
	const char *base = strrchr(target, '/');
	return strstr(target, "/devices/pci0000:00/") && base && strcmp(base + 1, fn->name) == 0 &&
	       stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* the ID files agree with /proc and are in Linux's widths */
static int check_ids(struct func *fn)
{
	long class = hex_file(fn->name, "class", 6);
	long sv = hex_file(fn->name, "subsystem_vendor", 4);
	long sd = hex_file(fn->name, "subsystem_device", 4);
	if (class < 0 || sv < 0 || sd < 0)
		return 0;
	fn->class = (unsigned)class;
	fn->subvendor = (unsigned)sv;
	fn->subdevice = (unsigned)sd;
	return hex_file(fn->name, "vendor", 4) == fn->vendor && hex_file(fn->name, "device", 4) == fn->device;
}

/* uevent, line by line, as Linux writes it */
static int check_uevent(const struct func *fn)
{
	char got[1024], want[1024], drv[96] = "";
	if (sys_read(fn->name, "uevent", got, sizeof got) < 0)
		return 0;
	if (fn->driver[0])
		snprintf(drv, sizeof drv, "DRIVER=%s\n", fn->driver);
	snprintf(want, sizeof want, "%sPCI_CLASS=%04X\nPCI_ID=%04X:%04X\nPCI_SUBSYS_ID=%04X:%04X\nPCI_SLOT_NAME=%s\n",
		 drv, fn->class, fn->vendor, fn->device, fn->subvendor, fn->subdevice, fn->name);
	/* MODALIAS= follows; its fields repeat these */
	return strncmp(got, want, strlen(want)) == 0 && strncmp(got + strlen(want), "MODALIAS=pci:v", 14) == 0;
}

/* a bound function's driver link ends in the driver's name */
static int check_driver_link(const struct func *fn)
{
	char path[PATH_MAX], target[PATH_MAX];
	snprintf(path, sizeof path, "/sys/bus/pci/devices/%s/driver", fn->name);
	ssize_t n = readlink(path, target, sizeof target - 1);
	if (!fn->driver[0])
		return n < 0 && errno == ENOENT;
	if (n <= 0)
		return 0;
	target[n] = 0;
	const char *base = strrchr(target, '/');
	return base && strcmp(base + 1, fn->driver) == 0;
}

static void test_functions(void)
{
	int links = 1, ids = 1, uevents = 1, drivers = 1;
	for (int i = 0; i < nfuncs; i++) {
		struct func *fn = &funcs[i];
		if (!check_link(fn)) {
			links = 0;
			note_bad(fn, "not a link to a directory under /sys/devices/pci0000:00");
		}
		if (!check_ids(fn)) {
			ids = 0;
			note_bad(fn, "ID files");
			continue;
		}
		if (!check_uevent(fn)) {
			uevents = 0;
			note_bad(fn, "uevent");
		}
		if (!check_driver_link(fn)) {
			drivers = 0;
			note_bad(fn, "driver link");
		}
	}
	check_report("sys.links", links, "%s", bad);
	check_report("sys.id_files", ids, "%s", bad);
	check_report("sys.uevent", uevents, "%s", bad);
	check_report("sys.driver_link", drivers, "%s", bad);

	DIR *d = opendir("/sys/bus/pci/devices");
	int entries = 0;
	if (d) {
		struct dirent *e;
		while ((e = readdir(d)))
			entries += e->d_name[0] != '.';
		closedir(d);
	}
	CHECK_EQ("sys.entries", entries, nfuncs);
}

static void test_host_bridge(void)
{
	const char *h = "0000:00:00.0";
	char buf[1024];
	CHECK_EQ("host.vendor", hex_file(h, "vendor", 4), 0x8086);
	CHECK_EQ("host.device", hex_file(h, "device", 4), 0x29c0);
	CHECK_EQ("host.class", hex_file(h, "class", 6), 0x060000);
	CHECK_EQ("host.subsystem_vendor", hex_file(h, "subsystem_vendor", 4), 0x1af4);
	CHECK_EQ("host.subsystem_device", hex_file(h, "subsystem_device", 4), 0x1100);
	CHECK("host.uevent", sys_read(h, "uevent", buf, sizeof buf) > 0 &&
			     strstr(buf, "PCI_CLASS=60000\nPCI_ID=8086:29C0\nPCI_SUBSYS_ID=1AF4:1100\n"
					 "PCI_SLOT_NAME=0000:00:00.0\n"
					 "MODALIAS=pci:v00008086d000029C0sv00001AF4sd00001100bc06sc00i00\n"));
}

/* busybox lspci with opt ("", "-m", "-k"): one line per function, as
 * expected from the /proc row and the sysfs class and subsystem files */
static void test_lspci(const char *busybox, const char *opt, const char *check)
{
	char out[16384];
	char *argv[] = { "lspci", (char *)opt, NULL };
	if (!*opt)
		argv[1] = NULL;
	int st = check_run(busybox, argv, NULL, NULL, out, sizeof out);
	int lines = 0, found = 0;
	char missing[256] = "";
	for (char *p = out; *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : p + strlen(p))
		lines++;
	for (int i = 0; i < nfuncs; i++) {
		const struct func *fn = &funcs[i];
		char want[256];
		const char *slot = fn->name + 5; /* busybox drops the domain */
		if (strcmp(opt, "-m") == 0)
			snprintf(want, sizeof want, "%s \"Class %04x\" \"%04x\" \"%04x\" \"%04x\" \"%04x\"\n", slot,
				 fn->class >> 8, fn->vendor, fn->device, fn->subvendor, fn->subdevice);
		else
			snprintf(want, sizeof want, "%s Class %04x: %04x:%04x%s%s\n", slot, fn->class >> 8,
				 fn->vendor, fn->device, strcmp(opt, "-k") == 0 && fn->driver[0] ? " " : "",
				 strcmp(opt, "-k") == 0 ? fn->driver : "");
		/* whole lines only: at the start of the output or after a newline */
		char *at = strstr(out, want);
		while (at && at != out && at[-1] != '\n')
			at = strstr(at + 1, want);
		if (at)
			found++;
		else if (!missing[0])
			snprintf(missing, sizeof missing, "%s", want);
	}
	check_report(check, st == 0 && lines == nfuncs && found == nfuncs,
		     "status %d, %d lines, %d of %d functions found (first missing: %s); output:\n%s", st, lines, found,
		     nfuncs, missing, out);
}

int main(int argc, char **argv)
{
	(void)argc;
	check_start(argv[0]);
	CHECK("proc.rows", read_proc() >= 3);
	test_functions();
	test_host_bridge();
	const char *busybox = getenv("BUSYBOX");
	if (!busybox || !*busybox)
		busybox = "/bin/busybox";
	test_lspci(busybox, "", "lspci.plain");
	test_lspci(busybox, "-m", "lspci.m");
	test_lspci(busybox, "-k", "lspci.k");
	return check_done();
}
