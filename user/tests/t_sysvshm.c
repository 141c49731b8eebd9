/* System V shared memory: shmget by IPC_PRIVATE and by key (IPC_CREAT,
 * IPC_EXCL, size and ENOENT checks), shmat and shmdt (shared between
 * processes, inherited by fork, SHM_RDONLY, SHM_RND, EINVAL addresses),
 * shmctl IPC_STAT/IPC_SET/IPC_RMID (nattch, SHM_DEST while attached, gone
 * after the last detach or exit, permissions for another user),
 * /proc/sysvipc/shm. */
#define _GNU_SOURCE
#include "check.h"
#include <signal.h>
#include <sys/ipc.h>
#include <sys/shm.h>
#include <sys/wait.h>

static int nattch(int id)
{
	struct shmid_ds ds;
	if (shmctl(id, IPC_STAT, &ds) < 0)
		return -errno;
	return (int)ds.shm_nattch;
}

static int child_status(pid_t pid)
{
	int st;
	waitpid(pid, &st, 0);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static int listed(int id)
{
	FILE *f = fopen("/proc/sysvipc/shm", "r");
	char line[512];
	int found = 0, key, shmid;
	while (f && fgets(line, sizeof line, f))
		if (sscanf(line, "%d %d", &key, &shmid) == 2 && shmid == id)
			found = 1;
	if (f)
		fclose(f);
	return found;
}

static void test_private(void)
{
	int id = shmget(IPC_PRIVATE, 10000, 0600);
	CHECK_SYS("private.get", id);
	struct shmid_ds ds;
	CHECK_SYS("private.stat", shmctl(id, IPC_STAT, &ds));
	CHECK_EQ("private.segsz", ds.shm_segsz, 10000);
	CHECK_EQ("private.mode", ds.shm_perm.mode & 0777, 0600);
	CHECK_EQ("private.uid", ds.shm_perm.uid, getuid());
	CHECK_EQ("private.cpid", ds.shm_cpid, getpid());
	CHECK_EQ("private.nattch_0", ds.shm_nattch, 0);
	CHECK("private.listed", listed(id));
	char *p = shmat(id, NULL, 0);
	CHECK("private.attach", p != (void *)-1);
	if (p == (void *)-1)
		return;
	CHECK_EQ("private.nattch_1", nattch(id), 1);
	CHECK_EQ("private.zero_filled", p[9999], 0);
	strcpy(p, "parent");
	pid_t pid = fork();
	if (pid == 0) {
		/* the child inherits the attachment */
		if (strcmp(p, "parent") || nattch(id) != 2)
			_exit(1);
		strcpy(p + 100, "child");
		_exit(0);
	}
	CHECK_EQ("fork.child_sees_and_writes", child_status(pid), 0);
	CHECK_STR("fork.parent_sees_child", p + 100, "child");
	CHECK_EQ("fork.exit_detaches", nattch(id), 1);
	/* a second attachment of the same segment, read-only */
	char *r = shmat(id, NULL, SHM_RDONLY);
	CHECK("rdonly.attach", r != (void *)-1);
	CHECK_STR("rdonly.same_memory", r + 100, "child");
	CHECK_EQ("rdonly.nattch_2", nattch(id), 2);
	pid = fork();
	if (pid == 0) {
		signal(SIGSEGV, SIG_DFL);
		r[0] = 'x';
		_exit(0);
	}
	CHECK_EQ("rdonly.write_segv", child_status(pid), 128 + SIGSEGV);
	CHECK_SYS("rdonly.detach", shmdt(r));
	CHECK_ERR("detach.again", shmdt(r), EINVAL);
	CHECK_ERR("detach.not_attached", shmdt(p + 4096), EINVAL);
	CHECK_ERR("attach.unaligned", (long)shmat(id, p + 1, 0), EINVAL);
	/* IPC_RMID while attached: usable until the last detach */
	CHECK_SYS("rmid.attached", shmctl(id, IPC_RMID, NULL));
	CHECK_SYS("rmid.still_stat", shmctl(id, IPC_STAT, &ds));
	CHECK("rmid.dest_flag", ds.shm_perm.mode & 01000);
	CHECK_STR("rmid.still_usable", p, "parent");
	CHECK_SYS("rmid.detach", shmdt(p));
	CHECK_ERR("rmid.gone", shmctl(id, IPC_STAT, &ds), EINVAL);
	CHECK("rmid.unlisted", !listed(id));
}

static void test_keys(void)
{
	key_t key = 0x5b000000 | (getpid() & 0xffff);
	int id = shmget(key, 4096, IPC_CREAT | IPC_EXCL | 0640);
	CHECK_SYS("key.create", id);
	CHECK_ERR("key.excl", shmget(key, 4096, IPC_CREAT | IPC_EXCL | 0640), EEXIST);
	CHECK_EQ("key.lookup", shmget(key, 0, 0), id);
	CHECK_EQ("key.create_existing", shmget(key, 100, IPC_CREAT | 0640), id);
	CHECK_ERR("key.bigger", shmget(key, 8192, 0), EINVAL);
	CHECK_ERR("key.absent", shmget(key + 1, 4096, 0), ENOENT);
	CHECK_ERR("key.zero_size", shmget(IPC_PRIVATE, 0, 0600), EINVAL);
	/* SHM_RND rounds the address down to SHMLBA */
	char *p = shmat(id, NULL, 0);
	CHECK_SYS("rnd.detach_first", shmdt(p));
	char *q = shmat(id, p + 123, SHM_RND);
	CHECK("rnd.rounded", q == p);
	strcpy(q, "by key");
	shmdt(q);
	/* another user: read by the group/other bits, no write, no remove */
	struct shmid_ds ds;
	shmctl(id, IPC_STAT, &ds);
	ds.shm_perm.mode = 0604;
	CHECK_SYS("set.mode", shmctl(id, IPC_SET, &ds));
	shmctl(id, IPC_STAT, &ds);
	CHECK_EQ("set.mode_seen", ds.shm_perm.mode & 0777, 0604);
	pid_t pid = fork();
	if (pid == 0) {
		if (setgid(65534) || setuid(65534))
			_exit(10);
		int j = shmget(key, 0, 0);
		if (j != id)
			_exit(11);
		if (shmat(j, NULL, 0) != (void *)-1 || errno != EACCES)
			_exit(12);
		char *r = shmat(j, NULL, SHM_RDONLY);
		if (r == (void *)-1 || strcmp(r, "by key"))
			_exit(13);
		if (shmctl(j, IPC_RMID, NULL) != -1 || errno != EPERM)
			_exit(14);
		if (shmget(key, 0, 0600 /* asks for rw */) != -1 || errno != EACCES)
			_exit(15);
		_exit(0); /* exits attached: the exit detaches */
	}
	CHECK_EQ("other_user.rules", child_status(pid), 0);
	CHECK_EQ("other_user.exit_detached", nattch(id), 0);
	CHECK_SYS("key.rmid", shmctl(id, IPC_RMID, NULL));
	CHECK_ERR("key.gone", shmget(key, 0, 0), ENOENT);
	CHECK_ERR("ctl.bad_id", shmctl(id, IPC_STAT, &ds), EINVAL);
	CHECK_ERR("ctl.negative_id", shmctl(-1, IPC_STAT, &ds), EINVAL);
}

int main(int argc, char **argv)
{
	(void)argc;
	check_start(argv[0]);
	test_private();
	test_keys();
	return check_done();
}
