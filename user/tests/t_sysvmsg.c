/* System V message queues: msgget, msgsnd and msgrcv by type (first,
 * exact, MSG_EXCEPT, lowest at most -type), E2BIG and MSG_NOERROR,
 * MSG_COPY, IPC_NOWAIT (EAGAIN, ENOMSG), blocking both ways between
 * processes, EIDRM for a waiter when the queue is removed, EINTR not
 * restarted, msgctl IPC_STAT/IPC_SET (msg_qbytes, EPERM past msgmnb for
 * another user), bad arguments. */
#define _GNU_SOURCE
#include "check.h"
#include <signal.h>
#include <sys/ipc.h>
#include <sys/msg.h>
#include <sys/wait.h>

#ifndef MSG_COPY
#define MSG_COPY 040000
#endif

struct msg {
	long type;
	char text[64];
};

static int snd(int id, long type, const char *text, int flags)
{
	struct msg m = {.type = type};
	strcpy(m.text, text);
	return msgsnd(id, &m, strlen(text), flags);
}

/* receives and compares: 1 when the message is text of type want */
static int rcv(int id, long type, int flags, long want, const char *text)
{
	struct msg m;
	memset(&m, 0, sizeof m);
	ssize_t n = msgrcv(id, &m, sizeof m.text, type, flags | IPC_NOWAIT);
	return n == (ssize_t)strlen(text) && m.type == want && memcmp(m.text, text, n) == 0;
}

static int child_status(pid_t pid)
{
	int st;
	waitpid(pid, &st, 0);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static void on_alarm(int s) { (void)s; }

int main(int argc, char **argv)
{
	(void)argc;
	check_start(argv[0]);
	int id = msgget(IPC_PRIVATE, 0600);
	CHECK_SYS("get", id);
	CHECK_SYS("send.1", snd(id, 1, "one", 0));
	CHECK_SYS("send.2", snd(id, 2, "two", 0));
	CHECK_SYS("send.3", snd(id, 3, "three", 0));
	CHECK_SYS("send.1b", snd(id, 1, "uno", 0));
	struct msqid_ds ds;
	CHECK_SYS("stat", msgctl(id, IPC_STAT, &ds));
	CHECK_EQ("stat.qnum", ds.msg_qnum, 4);
	CHECK_EQ("stat.cbytes", ds.__msg_cbytes, 14);
	CHECK_EQ("stat.lspid", ds.msg_lspid, getpid());
	CHECK_EQ("stat.qbytes", ds.msg_qbytes, 16384);
	struct msg m;
	ssize_t n = msgrcv(id, &m, sizeof m.text, 0, MSG_COPY | IPC_NOWAIT);
	CHECK("copy.first", n == 3 && m.type == 1 && memcmp(m.text, "one", 3) == 0);
	CHECK_ERR("copy.needs_nowait", msgrcv(id, &m, sizeof m.text, 0, MSG_COPY), EINVAL);
	msgctl(id, IPC_STAT, &ds);
	CHECK_EQ("copy.left_it", ds.msg_qnum, 4);
	CHECK("recv.first", rcv(id, 0, 0, 1, "one"));
	CHECK("recv.type3", rcv(id, 3, 0, 3, "three"));
	CHECK("recv.lowest_upto2", rcv(id, -2, 0, 1, "uno"));
	CHECK_ERR("recv.except_none", msgrcv(id, &m, sizeof m.text, 2, MSG_EXCEPT | IPC_NOWAIT), ENOMSG);
	CHECK("recv.type2", rcv(id, 2, 0, 2, "two"));
	CHECK_ERR("recv.empty_nowait", msgrcv(id, &m, sizeof m.text, 0, IPC_NOWAIT), ENOMSG);
	/* a message longer than the buffer */
	snd(id, 5, "0123456789", 0);
	CHECK_ERR("recv.e2big", msgrcv(id, &m, 4, 0, IPC_NOWAIT), E2BIG);
	n = msgrcv(id, &m, 4, 0, IPC_NOWAIT | MSG_NOERROR);
	CHECK("recv.noerror_cut", n == 4 && memcmp(m.text, "0123", 4) == 0);
	CHECK_ERR("recv.noerror_took_it", msgrcv(id, &m, sizeof m.text, 0, IPC_NOWAIT), ENOMSG);
	CHECK_ERR("send.type0", snd(id, 0, "x", IPC_NOWAIT), EINVAL);
	static char big[9000];
	CHECK_ERR("send.past_msgmax", msgsnd(id, big, 8193, IPC_NOWAIT), EINVAL);
	/* a small queue fills */
	msgctl(id, IPC_STAT, &ds);
	ds.msg_qbytes = 100;
	CHECK_SYS("set.qbytes", msgctl(id, IPC_SET, &ds));
	memset(big, 'b', 60);
	big[60] = 0;
	CHECK_SYS("full.first", snd(id, 1, big, IPC_NOWAIT));
	CHECK_ERR("full.eagain", snd(id, 1, big, IPC_NOWAIT), EAGAIN);
	/* a blocked sender is let in when another process takes a message */
	pid_t pid = fork();
	if (pid == 0) {
		usleep(100000);
		struct msg r;
		_exit(msgrcv(id, &r, sizeof r.text, 0, 0) == 60 ? 0 : 1);
	}
	CHECK_SYS("full.blocking_send", snd(id, 1, big, 0));
	CHECK_EQ("full.receiver", child_status(pid), 0);
	CHECK("full.second_arrived", rcv(id, 0, 0, 1, big));
	/* a blocked receiver gets another process's message */
	pid = fork();
	if (pid == 0) {
		usleep(100000);
		_exit(snd(id, 7, "late", 0) == 0 ? 0 : 1);
	}
	n = msgrcv(id, &m, sizeof m.text, 7, 0);
	CHECK("block.receive", n == 4 && m.type == 7);
	CHECK_EQ("block.sender", child_status(pid), 0);
	/* interrupted by a handler with SA_RESTART: EINTR all the same */
	struct sigaction sa = {.sa_handler = on_alarm, .sa_flags = SA_RESTART};
	sigaction(SIGALRM, &sa, NULL);
	alarm(1);
	CHECK_ERR("eintr.not_restarted", msgrcv(id, &m, sizeof m.text, 0, 0), EINTR);
	/* another user: no access, no raising msg_qbytes */
	pid = fork();
	if (pid == 0) {
		if (setgid(65534) || setuid(65534))
			_exit(10);
		if (snd(id, 1, "x", IPC_NOWAIT) != -1 || errno != EACCES)
			_exit(11);
		int mine = msgget(IPC_PRIVATE, 0600);
		struct msqid_ds d;
		msgctl(mine, IPC_STAT, &d);
		d.msg_qbytes = 1 << 20;
		if (msgctl(mine, IPC_SET, &d) != -1 || errno != EPERM)
			_exit(12);
		msgctl(mine, IPC_RMID, NULL);
		_exit(0);
	}
	CHECK_EQ("other_user", child_status(pid), 0);
	/* removal wakes a waiter with EIDRM */
	pid = fork();
	if (pid == 0) {
		struct msg r;
		_exit(msgrcv(id, &r, sizeof r.text, 0, 0) == -1 && errno == EIDRM ? 0 : 1);
	}
	usleep(200000);
	CHECK_SYS("rmid", msgctl(id, IPC_RMID, NULL));
	CHECK_EQ("rmid.waiter_eidrm", child_status(pid), 0);
	CHECK_ERR("rmid.gone", msgctl(id, IPC_STAT, &ds), EINVAL);
	CHECK_ERR("get.absent_key", msgget(0x5c00 + getpid(), 0600), ENOENT);
	return check_done();
}
