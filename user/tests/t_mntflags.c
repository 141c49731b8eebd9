/* t_mntflags: the per-mount flags of mount(2) and what they change, on
 * tmpfs mounts made here: nosuid (a set-user-ID program runs with its
 * caller's IDs), nodev (device nodes cannot be opened), noexec (nothing
 * runs or maps executable), the access-time modes (relatime by default,
 * noatime, strictatime, nodiratime) with O_NOATIME, how /proc/mounts and
 * statvfs show them, and remounts that change them (an access-time mode
 * not named on a remount stays). Root only. */
#define _GNU_SOURCE
#include "check.h"
#include <dirent.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <time.h>

static char base[64];

/* the options field of the /proc/mounts line of mount point dir */
static const char *mount_opts(const char *dir)
{
	static char line[512], opts[256];
	FILE *f = fopen("/proc/mounts", "r");
	opts[0] = 0;
	if (!f)
		return opts;
	while (fgets(line, sizeof line, f)) {
		char src[128], mnt[128], type[64], o[256];
		if (sscanf(line, "%127s %127s %63s %255s", src, mnt, type, o) == 4 && strcmp(mnt, dir) == 0)
			strcpy(opts, o);
	}
	fclose(f);
	return opts;
}

/* whether the options start with want and then end or go on with ',' */
static int opts_start(const char *opts, const char *want)
{
	size_t n = strlen(want);
	return strncmp(opts, want, n) == 0 && (opts[n] == 0 || opts[n] == ',');
}

static int has_opt(const char *opts, const char *want)
{
	char buf[256];
	snprintf(buf, sizeof buf, "%s", opts);
	for (char *s, *tok = strtok_r(buf, ",", &s); tok; tok = strtok_r(NULL, ",", &s))
		if (strcmp(tok, want) == 0)
			return 1;
	return 0;
}

static int copy_file(const char *from, const char *to, mode_t mode)
{
	int in = open(from, O_RDONLY), out = open(to, O_CREAT | O_WRONLY | O_TRUNC, 0700);
	if (in < 0 || out < 0)
		return -1;
	char buf[65536];
	ssize_t n;
	while ((n = read(in, buf, sizeof buf)) > 0)
		if (write(out, buf, n) != n)
			return -1;
	close(in);
	close(out);
	return chmod(to, mode);
}

/* runs path --euid and returns its exit status (its effective uid's low
 * byte), or -errno when execve failed */
static int run_euid(const char *path)
{
	int p[2];
	if (pipe2(p, O_CLOEXEC))
		return -1000;
	pid_t pid = fork();
	if (pid == 0) {
		char *argv[] = {(char *)path, "--euid", NULL};
		execv(path, argv);
		int e = errno;
		write(p[1], &e, sizeof e);
		_exit(127);
	}
	close(p[1]);
	int e = 0, st;
	ssize_t got = read(p[0], &e, sizeof e);
	close(p[0]);
	waitpid(pid, &st, 0);
	if (got == sizeof e)
		return -e;
	return WIFEXITED(st) ? WEXITSTATUS(st) : -2000;
}

static struct timespec atime_of(const char *path)
{
	struct stat st;
	if (stat(path, &st))
		return (struct timespec){-1, 0};
	return st.st_atim;
}

static void set_atime(const char *path, time_t sec)
{
	struct timespec ts[2] = {{sec, 0}, {0, UTIME_OMIT}};
	utimensat(AT_FDCWD, path, ts, 0);
}

static void read_file(const char *path, int flags)
{
	char b[16];
	int fd = open(path, O_RDONLY | flags);
	if (fd >= 0) {
		if (read(fd, b, sizeof b) < 0)
			perror("read");
		close(fd);
	}
}

static void list_dir(const char *path)
{
	DIR *d = opendir(path);
	if (d) {
		while (readdir(d))
			;
		closedir(d);
	}
}

/* mounts a fresh tmpfs on dir with flags, a file "f" with data in it */
static int fresh(const char *dir, unsigned long flags)
{
	umount2(dir, MNT_DETACH);
	mkdir(dir, 0755);
	if (mount("mntflags", dir, "tmpfs", flags, NULL))
		return -1;
	char f[128];
	snprintf(f, sizeof f, "%s/f", dir);
	int fd = open(f, O_CREAT | O_WRONLY, 0644);
	if (fd < 0)
		return -1;
	write(fd, "data", 4);
	close(fd);
	return 0;
}

static void test_flags_shown(const char *m)
{
	CHECK_SYS("mount.nosuid_nodev_noexec", fresh(m, MS_NOSUID | MS_NODEV | MS_NOEXEC));
	const char *o = mount_opts(m);
	CHECK("mounts.nosuid_nodev_noexec", opts_start(o, "rw,nosuid,nodev,noexec,relatime"));
	struct statvfs sv;
	CHECK_SYS("statvfs", statvfs(m, &sv));
	CHECK_EQ("statvfs.flags", sv.f_flag & (ST_NOSUID | ST_NODEV | ST_NOEXEC | ST_RDONLY | ST_NOATIME | ST_NODIRATIME | ST_RELATIME),
		 ST_NOSUID | ST_NODEV | ST_NOEXEC | ST_RELATIME);

	CHECK_SYS("mount.default", fresh(m, 0));
	CHECK("mounts.default", opts_start(mount_opts(m), "rw,relatime"));
	CHECK_SYS("statvfs.default", statvfs(m, &sv));
	CHECK_EQ("statvfs.default_flags", sv.f_flag & (ST_NOSUID | ST_NODEV | ST_NOEXEC | ST_NOATIME | ST_RELATIME), ST_RELATIME);

	CHECK_SYS("mount.noatime_nodiratime", fresh(m, MS_NOATIME | MS_NODIRATIME));
	CHECK("mounts.noatime_nodiratime", opts_start(mount_opts(m), "rw,noatime,nodiratime"));
	CHECK_SYS("statvfs.noatime", statvfs(m, &sv));
	CHECK_EQ("statvfs.noatime_flags", sv.f_flag & (ST_NOATIME | ST_NODIRATIME | ST_RELATIME), ST_NOATIME | ST_NODIRATIME);

	CHECK_SYS("mount.strictatime", fresh(m, MS_STRICTATIME | MS_NOATIME));
	o = mount_opts(m);
	CHECK("mounts.strictatime", opts_start(o, "rw") && !has_opt(o, "relatime") && !has_opt(o, "noatime"));

	/* a remount naming no access-time flag keeps noatime */
	CHECK_SYS("mount.noatime", fresh(m, MS_NOATIME));
	CHECK_SYS("remount.nosuid", mount(NULL, m, NULL, MS_REMOUNT | MS_NOSUID, NULL));
	o = mount_opts(m);
	CHECK("remount.keeps_noatime", opts_start(o, "rw,nosuid,noatime"));
	CHECK_SYS("remount.relatime", mount(NULL, m, NULL, MS_REMOUNT | MS_RELATIME, NULL));
	o = mount_opts(m);
	CHECK("remount.relatime_shown", opts_start(o, "rw,relatime"));
	CHECK("remount.nosuid_dropped", !has_opt(o, "nosuid"));
}

static void test_noexec(const char *m, const char *self)
{
	char prog[128];
	snprintf(prog, sizeof prog, "%s/prog", m);
	CHECK_SYS("noexec.mount", fresh(m, MS_NOEXEC));
	CHECK_SYS("noexec.copy", copy_file(self, prog, 0755));
	CHECK_EQ("noexec.execve", run_euid(prog), -EACCES);
	int fd = open(prog, O_RDONLY);
	CHECK_SYS("noexec.open", fd);
	void *p = mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
	CHECK("noexec.mmap_exec_eperm", p == MAP_FAILED && errno == EPERM);
	p = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE, fd, 0);
	CHECK("noexec.mmap_read", p != MAP_FAILED);
	if (p != MAP_FAILED) {
		CHECK_ERR("noexec.mprotect_exec_eacces", mprotect(p, 4096, PROT_READ | PROT_EXEC), EACCES);
		munmap(p, 4096);
	}
	close(fd);
	CHECK_SYS("noexec.remount_exec", mount(NULL, m, NULL, MS_REMOUNT, NULL));
	CHECK_EQ("noexec.runs_after_remount", run_euid(prog), 0);
	CHECK_SYS("noexec.remount_noexec", mount(NULL, m, NULL, MS_REMOUNT | MS_NOEXEC, NULL));
	CHECK_EQ("noexec.refused_again", run_euid(prog), -EACCES);
}

static void test_nosuid(const char *m, const char *self)
{
	char prog[128];
	snprintf(prog, sizeof prog, "%s/prog", m);
	CHECK_SYS("nosuid.mount", fresh(m, MS_NOSUID));
	CHECK_SYS("nosuid.copy", copy_file(self, prog, 0755));
	CHECK_SYS("nosuid.chown", chown(prog, 65534, 65534));
	CHECK_SYS("nosuid.chmod", chmod(prog, 04755));
	CHECK_EQ("nosuid.runs_as_caller", run_euid(prog), 0);
	CHECK_SYS("nosuid.remount_suid", mount(NULL, m, NULL, MS_REMOUNT, NULL));
	CHECK_EQ("nosuid.setuid_applies", run_euid(prog), 65534 & 0xff);
}

static void test_nodev(const char *m)
{
	char dev[128];
	snprintf(dev, sizeof dev, "%s/null", m);
	CHECK_SYS("nodev.mount", fresh(m, MS_NODEV));
	CHECK_SYS("nodev.mknod", mknod(dev, S_IFCHR | 0666, makedev(1, 3)));
	CHECK_ERR("nodev.open_eacces", open(dev, O_RDWR), EACCES);
	struct stat st;
	CHECK_SYS("nodev.stat", stat(dev, &st));
	CHECK_SYS("nodev.remount_dev", mount(NULL, m, NULL, MS_REMOUNT, NULL));
	int fd = open(dev, O_RDWR);
	CHECK_SYS("nodev.open_after_remount", fd);
	CHECK_EQ("nodev.write_null", write(fd, "x", 1), 1);
	close(fd);
}

static void test_atime(const char *m)
{
	char f[128], d[128];
	snprintf(f, sizeof f, "%s/f", m);
	snprintf(d, sizeof d, "%s/d", m);
	time_t now = time(NULL);

	/* relatime: an access time before the modification moves; one after
	 * it (and under a day old) does not */
	CHECK_SYS("relatime.mount", fresh(m, 0));
	mkdir(d, 0755);
	set_atime(f, 1000);
	read_file(f, 0);
	CHECK("relatime.stale_moves", atime_of(f).tv_sec >= now - 5);
	set_atime(f, now + 3600);
	read_file(f, 0);
	CHECK_EQ("relatime.fresh_stays", atime_of(f).tv_sec, now + 3600);
	set_atime(f, 1000);
	read_file(f, O_NOATIME);
	CHECK_EQ("relatime.o_noatime", atime_of(f).tv_sec, 1000);
	set_atime(d, 1000);
	list_dir(d);
	CHECK("relatime.dir_moves", atime_of(d).tv_sec >= now - 5);

	/* strictatime: every read moves it */
	CHECK_SYS("strictatime.remount", mount(NULL, m, NULL, MS_REMOUNT | MS_STRICTATIME, NULL));
	set_atime(f, now + 3600);
	read_file(f, 0);
	CHECK("strictatime.moves", atime_of(f).tv_sec <= now + 60 && atime_of(f).tv_sec >= now - 5);

	/* noatime: nothing moves it */
	CHECK_SYS("noatime.remount", mount(NULL, m, NULL, MS_REMOUNT | MS_NOATIME, NULL));
	set_atime(f, 1000);
	set_atime(d, 1000);
	read_file(f, 0);
	list_dir(d);
	CHECK_EQ("noatime.file_stays", atime_of(f).tv_sec, 1000);
	CHECK_EQ("noatime.dir_stays", atime_of(d).tv_sec, 1000);

	/* nodiratime: files move, directories do not */
	CHECK_SYS("nodiratime.remount", mount(NULL, m, NULL, MS_REMOUNT | MS_RELATIME | MS_NODIRATIME, NULL));
	CHECK("nodiratime.shown", opts_start(mount_opts(m), "rw,nodiratime,relatime"));
	read_file(f, 0);
	list_dir(d);
	CHECK("nodiratime.file_moves", atime_of(f).tv_sec >= now - 5);
	CHECK_EQ("nodiratime.dir_stays", atime_of(d).tv_sec, 1000);

	/* read-only: nothing moves */
	CHECK_SYS("ro.remount_rw", mount(NULL, m, NULL, MS_REMOUNT | MS_RELATIME, NULL));
	set_atime(f, 1000);
	CHECK_SYS("ro.remount", mount(NULL, m, NULL, MS_REMOUNT | MS_RDONLY | MS_RELATIME, NULL));
	read_file(f, 0);
	CHECK_EQ("ro.file_stays", atime_of(f).tv_sec, 1000);
}

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "--euid") == 0)
		return geteuid() & 0xff;
	check_start(argv[0]);
	if (geteuid() != 0) {
		printf("# t_mntflags: needs root\n");
		return 0;
	}
	char self[256];
	ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
	if (n <= 0)
		return 1;
	self[n] = 0;
	snprintf(base, sizeof base, "/tmp/mntflags.%d", getpid());
	mkdir(base, 0755);
	test_flags_shown(base);
	test_noexec(base, self);
	test_nosuid(base, self);
	test_nodev(base);
	test_atime(base);
	umount2(base, MNT_DETACH);
	rmdir(base);
	return check_done();
}
