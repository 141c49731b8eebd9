/* System V semaphores: semget (sizes, EINVAL), semctl SETALL/GETALL/
 * SETVAL/GETVAL/GETPID/GETNCNT/GETZCNT/IPC_STAT, semop all-or-nothing,
 * IPC_NOWAIT, semtimedop's timeout, ERANGE, EFBIG, E2BIG, waiting for a
 * value and for zero between processes, SEM_UNDO at exit and its reset by
 * SETVAL, EIDRM on removal, EINTR not restarted, another user's access. */
#define _GNU_SOURCE
#include "check.h"
#include <signal.h>
#include <sys/ipc.h>
#include <sys/sem.h>
#include <sys/wait.h>
#include <time.h>

union semun {
	int val;
	struct semid_ds *buf;
	unsigned short *array;
};

static int op1(int id, unsigned short num, short op, short flg)
{
	struct sembuf b = {num, op, flg};
	return semop(id, &b, 1);
}

static int val(int id, int num) { return semctl(id, num, GETVAL); }

static int child_status(pid_t pid)
{
	int st;
	waitpid(pid, &st, 0);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static void on_alarm(int s) { (void)s; }

static long ms_since(struct timespec a)
{
	struct timespec b;
	clock_gettime(CLOCK_MONOTONIC, &b);
	return (b.tv_sec - a.tv_sec) * 1000 + (b.tv_nsec - a.tv_nsec) / 1000000;
}

int main(int argc, char **argv)
{
	(void)argc;
	check_start(argv[0]);
	CHECK_ERR("get.zero_new", semget(IPC_PRIVATE, 0, 0600), EINVAL);
	int id = semget(IPC_PRIVATE, 3, 0600);
	CHECK_SYS("get", id);
	unsigned short init[3] = {1, 0, 5}, got[3] = {9, 9, 9};
	CHECK_SYS("setall", semctl(id, 0, SETALL, (union semun){.array = init}));
	CHECK_SYS("getall", semctl(id, 0, GETALL, (union semun){.array = got}));
	CHECK("getall.values", got[0] == 1 && got[1] == 0 && got[2] == 5);
	CHECK_EQ("getval", val(id, 2), 5);
	CHECK_ERR("getval.bad_num", semctl(id, 3, GETVAL), EINVAL);
	struct semid_ds ds;
	CHECK_SYS("stat", semctl(id, 0, IPC_STAT, (union semun){.buf = &ds}));
	CHECK_EQ("stat.nsems", ds.sem_nsems, 3);
	CHECK_EQ("stat.otime_none", ds.sem_otime, 0);

	CHECK_SYS("op.down", op1(id, 0, -1, 0));
	CHECK_EQ("op.down_value", val(id, 0), 0);
	CHECK_EQ("op.getpid", semctl(id, 0, GETPID), getpid());
	CHECK_ERR("op.nowait", op1(id, 0, -1, IPC_NOWAIT), EAGAIN);
	struct sembuf two[2] = {{2, -1, 0}, {1, -1, IPC_NOWAIT}};
	CHECK_ERR("op.all_or_nothing", semop(id, two, 2), EAGAIN);
	CHECK_EQ("op.all_or_nothing_untouched", val(id, 2), 5);
	CHECK_ERR("op.zero_nowait", op1(id, 2, 0, IPC_NOWAIT), EAGAIN);
	CHECK_ERR("op.erange", op1(id, 2, 32767, 0), ERANGE);
	CHECK_ERR("op.efbig", op1(id, 3, 1, 0), EFBIG);
	CHECK_ERR("op.none", semop(id, two, 0), EINVAL);
	static struct sembuf many[501];
	CHECK_ERR("op.too_many", semop(id, many, 501), E2BIG);
	CHECK_ERR("setval.erange", semctl(id, 0, SETVAL, (union semun){.val = 32768}), ERANGE);
	struct timespec t0, tmo = {0, 150000000};
	clock_gettime(CLOCK_MONOTONIC, &t0);
	struct sembuf down = {1, -1, 0};
	CHECK_ERR("timedop.timeout", semtimedop(id, &down, 1, &tmo), EAGAIN);
	CHECK("timedop.waited", ms_since(t0) >= 120);
	semctl(id, 0, IPC_STAT, (union semun){.buf = &ds});
	CHECK("stat.otime_set", ds.sem_otime > 0);

	/* a waiter for a value, counted by GETNCNT, released by an up */
	pid_t pid = fork();
	if (pid == 0)
		_exit(op1(id, 1, -1, 0) == 0 ? 0 : 1);
	int n = 0;
	for (int i = 0; i < 100 && n != 1; i++, usleep(10000))
		n = semctl(id, 1, GETNCNT);
	CHECK_EQ("ncnt.one_waiter", n, 1);
	CHECK_SYS("ncnt.up", op1(id, 1, 1, 0));
	CHECK_EQ("ncnt.waiter_done", child_status(pid), 0);
	CHECK_EQ("ncnt.getpid_child", semctl(id, 1, GETPID), pid);
	/* a waiter for zero, counted by GETZCNT, released by SETVAL 0 */
	pid = fork();
	if (pid == 0)
		_exit(op1(id, 2, 0, 0) == 0 ? 0 : 1);
	n = 0;
	for (int i = 0; i < 100 && n != 1; i++, usleep(10000))
		n = semctl(id, 2, GETZCNT);
	CHECK_EQ("zcnt.one_waiter", n, 1);
	CHECK_SYS("zcnt.setval0", semctl(id, 2, SETVAL, (union semun){.val = 0}));
	CHECK_EQ("zcnt.waiter_done", child_status(pid), 0);

	/* SEM_UNDO: undone at exit, unless SETVAL reset it */
	pid = fork();
	if (pid == 0)
		_exit(op1(id, 0, 3, SEM_UNDO) == 0 && val(id, 0) == 3 ? 0 : 1);
	CHECK_EQ("undo.child_up", child_status(pid), 0);
	CHECK_EQ("undo.undone_at_exit", val(id, 0), 0);
	int p[2];
	pipe(p);
	pid = fork();
	if (pid == 0) {
		char c;
		if (op1(id, 0, 2, SEM_UNDO))
			_exit(1);
		read(p[0], &c, 1);
		_exit(0);
	}
	for (int i = 0; i < 100 && val(id, 0) != 2; i++)
		usleep(10000);
	CHECK_SYS("undo.setval_resets", semctl(id, 0, SETVAL, (union semun){.val = 10}));
	write(p[1], "x", 1);
	CHECK_EQ("undo.child2", child_status(pid), 0);
	CHECK_EQ("undo.reset_kept", val(id, 0), 10);

	/* interrupted under SA_RESTART: EINTR all the same */
	struct sigaction sa = {.sa_handler = on_alarm, .sa_flags = SA_RESTART};
	sigaction(SIGALRM, &sa, NULL);
	alarm(1);
	CHECK_ERR("eintr.not_restarted", op1(id, 1, -1, 0), EINTR);

	/* another user */
	pid = fork();
	if (pid == 0) {
		if (setgid(65534) || setuid(65534))
			_exit(10);
		if (op1(id, 0, 1, IPC_NOWAIT) != -1 || errno != EACCES)
			_exit(11);
		if (semctl(id, 0, GETVAL) != -1 || errno != EACCES)
			_exit(12);
		if (semctl(id, 0, IPC_RMID) != -1 || errno != EPERM)
			_exit(13);
		_exit(0);
	}
	CHECK_EQ("other_user", child_status(pid), 0);
	CHECK_ERR("get.more_than_exists", semget(0x5d00 + getpid(), 1, 0), ENOENT);
	int k = semget(0x5d00 + getpid(), 2, IPC_CREAT | 0600);
	CHECK_SYS("key.create", k);
	CHECK_ERR("key.more_sems", semget(0x5d00 + getpid(), 3, 0), EINVAL);
	CHECK_EQ("key.fewer_sems", semget(0x5d00 + getpid(), 1, 0), k);
	semctl(k, 0, IPC_RMID);

	/* removal wakes a waiter with EIDRM */
	pid = fork();
	if (pid == 0)
		_exit(op1(id, 1, -1, 0) == -1 && errno == EIDRM ? 0 : 1);
	usleep(200000);
	CHECK_SYS("rmid", semctl(id, 0, IPC_RMID));
	CHECK_EQ("rmid.waiter_eidrm", child_status(pid), 0);
	CHECK_ERR("rmid.gone", semctl(id, 0, GETVAL), EINVAL);
	return check_done();
}
