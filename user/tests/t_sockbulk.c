/* t_sockbulk: 64 MiB each way over every socket family and type, every
 * byte checked by hash, between two processes: AF_UNIX stream, seqpacket
 * and datagram (socketpair), TCP and UDP over 127.0.0.1 and ::1. The
 * client sends first, then the server; each side checks what it got.
 * Message types also check that every message arrives whole, once and in
 * order (a sequence number in each). UDP may drop a datagram when the
 * receiver's buffer is full, so its sender waits for an acknowledgement
 * every few datagrams, keeping far less in flight than the buffer holds:
 * a loss is then a kernel bug, and a lost acknowledgement times out
 * instead of hanging. */
#define _GNU_SOURCE
#include "check.h"
#include "sock.h"

#include <arpa/inet.h>
#include <netinet/in.h>

enum {
	TOTAL = 64 << 20,
	STREAM_CHUNK = 64 << 10,
	UDP_MSG = 8 << 10,
	UDP_WINDOW = 4, /* datagrams in flight: 32 KiB against a 208 KiB buffer */
};

/* The bytes of direction dir at offset off: a xorshift of the 8-byte word
 * index, so every word differs and a byte in the wrong place shows. */
static uint64_t word(int dir, uint64_t i)
{
	uint64_t x = i * 0x9e3779b97f4a7c15ull + (uint64_t)dir;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return x;
}

static void fill(int dir, uint64_t off, unsigned char *buf, size_t n)
{
	for (size_t i = 0; i < n; i += 8) {
		uint64_t w = word(dir, (off + i) / 8);
		memcpy(buf + i, &w, 8);
	}
}

/* hash folds buf (a multiple of 8 bytes) into h. */
static uint64_t hash(uint64_t h, const unsigned char *buf, size_t n)
{
	for (size_t i = 0; i < n; i += 8) {
		uint64_t w;
		memcpy(&w, buf + i, 8);
		h = (h ^ w) * 0x100000001b3ull;
	}
	return h;
}

/* want is the hash of direction dir's TOTAL bytes. */
static uint64_t want(int dir)
{
	static unsigned char buf[STREAM_CHUNK];
	uint64_t h = 14695981039346656037ull;
	for (uint64_t off = 0; off < TOTAL; off += sizeof buf) {
		fill(dir, off, buf, sizeof buf);
		h = hash(h, buf, sizeof buf);
	}
	return h;
}

/* A stream: TOTAL bytes in chunks. */
static int send_stream(int fd, int dir)
{
	static unsigned char buf[STREAM_CHUNK];
	for (uint64_t off = 0; off < TOTAL; off += sizeof buf) {
		fill(dir, off, buf, sizeof buf);
		if (write_all(fd, buf, sizeof buf) != 0)
			return -1;
	}
	return 0;
}

/* recv_stream reads exactly TOTAL bytes (reads end on 8-byte bounds only
 * by chance, so it hashes whole words as they complete). */
static int recv_stream(int fd, uint64_t *h)
{
	static unsigned char buf[STREAM_CHUNK + 8];
	size_t have = 0;
	uint64_t got = 0;
	*h = 14695981039346656037ull;
	while (got < TOTAL) {
		ssize_t k = read(fd, buf + have, STREAM_CHUNK);
		if (k <= 0) {
			printf("# read returned %zd (%s) after %llu of %llu bytes\n", k, k < 0 ? strerror(errno) : "end of file",
			       (unsigned long long)got, (unsigned long long)TOTAL);
			return -1;
		}
		got += k;
		have += k;
		size_t whole = have & ~(size_t)7;
		*h = hash(*h, buf, whole);
		memmove(buf, buf + whole, have - whole);
		have -= whole;
	}
	return got == TOTAL && have == 0 ? 0 : -1;
}

/* Messages of msg bytes, each starting with its sequence number in place
 * of its first word; with ack, every UDP_WINDOW-th waits for the peer. */
static int send_msgs(int fd, int dir, size_t msg, int ack)
{
	static unsigned char buf[STREAM_CHUNK];
	uint64_t n = TOTAL / msg;
	for (uint64_t seq = 0; seq < n; seq++) {
		fill(dir, seq * msg, buf, msg);
		memcpy(buf, &seq, 8);
		if (send(fd, buf, msg, 0) != (ssize_t)msg)
			return -1;
		if (ack && (seq % UDP_WINDOW == UDP_WINDOW - 1 || seq == n - 1)) {
			uint64_t a;
			if (recv(fd, &a, sizeof a, 0) != sizeof a || a != seq + 1)
				return -2;
		}
	}
	return 0;
}

/* recv_msgs checks each message's size and sequence number and hashes
 * them with their first word as the sender generated it. */
static int recv_msgs(int fd, int dir, size_t msg, int ack, uint64_t *h)
{
	static unsigned char buf[STREAM_CHUNK + 1];
	uint64_t n = TOTAL / msg;
	*h = 14695981039346656037ull;
	for (uint64_t seq = 0; seq < n; seq++) {
		ssize_t k = recv(fd, buf, msg + 1, 0);
		uint64_t s;
		memcpy(&s, buf, 8);
		if (k != (ssize_t)msg || s != seq) {
			printf("# message %llu: %zd bytes, sequence %llu\n", (unsigned long long)seq, k,
			       (unsigned long long)(k >= 8 ? s : ~0ull));
			return -1;
		}
		uint64_t w = word(dir, seq * msg / 8);
		memcpy(buf, &w, 8);
		*h = hash(*h, buf, msg);
		if (ack && (seq % UDP_WINDOW == UDP_WINDOW - 1 || seq == n - 1)) {
			uint64_t a = seq + 1;
			if (send(fd, &a, sizeof a, 0) != sizeof a)
				return -2;
		}
	}
	return 0;
}

struct kind {
	const char *name;
	int type;  /* SOCK_STREAM, SOCK_SEQPACKET, SOCK_DGRAM */
	size_t msg; /* message size; 0 for a stream */
	int ack;   /* UDP's acknowledgements */
};

static int send_dir(int fd, const struct kind *k, int dir)
{
	return k->msg ? send_msgs(fd, dir, k->msg, k->ack) : send_stream(fd, dir);
}

static int recv_dir(int fd, const struct kind *k, int dir, uint64_t *h)
{
	return k->msg ? recv_msgs(fd, dir, k->msg, k->ack, h) : recv_stream(fd, h);
}

/* run moves TOTAL bytes from client sv[0] (a child) to server sv[1] and
 * back, and checks both. */
static void run(const struct kind *k, int sv[2], uint64_t h1, uint64_t h2)
{
	char name[96];
	struct timeval tv = { 20, 0 }; /* a lost datagram fails, not hangs */
	setsockopt(sv[0], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	setsockopt(sv[1], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	pid_t pid = fork();
	if (pid == 0) {
		close(sv[1]);
		if (send_dir(sv[0], k, 1) != 0)
			_exit(10);
		uint64_t h;
		if (recv_dir(sv[0], k, 2, &h) != 0)
			_exit(11);
		_exit(h == h2 ? 0 : 12);
	}
	uint64_t h = 0;
	int r = recv_dir(sv[1], k, 1, &h);
	snprintf(name, sizeof name, "%s.to_server", k->name);
	if (!CHECK(name, r == 0 && h == h1)) {
		/* The child may still be writing to a peer that stopped
		 * reading, and would never read what the server sends: end it
		 * so the failure is reported instead of hanging the run. */
		printf("# %s: receive status %d, hash %s\n", k->name, r, h == h1 ? "right" : "wrong");
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		close(sv[0]);
		close(sv[1]);
		return;
	}
	snprintf(name, sizeof name, "%s.to_client_sent", k->name);
	CHECK_EQ(name, send_dir(sv[1], k, 2), 0);
	int st = 0;
	waitpid(pid, &st, 0);
	snprintf(name, sizeof name, "%s.to_client", k->name);
	if (!CHECK(name, WIFEXITED(st) && WEXITSTATUS(st) == 0))
		printf("# %s: client status %#x\n", k->name, st);
	close(sv[0]);
	close(sv[1]);
}

/* inet_pair connects two sockets of family over its loopback address:
 * TCP through a listener, UDP bound and connected to each other. */
static int inet_pair(int family, int type, int sv[2])
{
	struct sockaddr_storage a, b;
	socklen_t len = family == AF_INET ? sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6);
	memset(&a, 0, sizeof a);
	a.ss_family = family;
	if (family == AF_INET)
		((struct sockaddr_in *)&a)->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	else
		((struct sockaddr_in6 *)&a)->sin6_addr = in6addr_loopback;
	b = a;
	int s = socket(family, type, 0), c = socket(family, type, 0);
	if (s < 0 || c < 0 || bind(s, (void *)&a, len) != 0 || getsockname(s, (void *)&a, &len) != 0)
		return -1;
	if (type == SOCK_STREAM) {
		if (listen(s, 1) != 0 || connect(c, (void *)&a, len) != 0)
			return -1;
		sv[0] = c;
		sv[1] = accept(s, NULL, NULL);
		close(s);
		return sv[1] < 0 ? -1 : 0;
	}
	if (bind(c, (void *)&b, len) != 0 || getsockname(c, (void *)&b, &len) != 0 ||
	    connect(c, (void *)&a, len) != 0 || connect(s, (void *)&b, len) != 0)
		return -1;
	sv[0] = c;
	sv[1] = s;
	return 0;
}

int main(int argc, char **argv)
{
	(void)argc;
	check_start(argv[0]);
	lo_up();
	uint64_t h1 = want(1), h2 = want(2);
	static const struct kind unix_kinds[] = {
		{ "unix_stream", SOCK_STREAM, 0, 0 },
		{ "unix_seqpacket", SOCK_SEQPACKET, 32 << 10, 0 },
		{ "unix_dgram", SOCK_DGRAM, 32 << 10, 0 },
	};
	for (size_t i = 0; i < sizeof unix_kinds / sizeof unix_kinds[0]; i++) {
		int sv[2];
		char name[64];
		snprintf(name, sizeof name, "%s.socketpair", unix_kinds[i].name);
		if (CHECK_SYS(name, socketpair(AF_UNIX, unix_kinds[i].type, 0, sv)))
			run(&unix_kinds[i], sv, h1, h2);
	}
	static const struct {
		int family;
		struct kind k;
	} inet_kinds[] = {
		{ AF_INET, { "tcp4", SOCK_STREAM, 0, 0 } },
		{ AF_INET6, { "tcp6", SOCK_STREAM, 0, 0 } },
		{ AF_INET, { "udp4", SOCK_DGRAM, UDP_MSG, 1 } },
		{ AF_INET6, { "udp6", SOCK_DGRAM, UDP_MSG, 1 } },
	};
	for (size_t i = 0; i < sizeof inet_kinds / sizeof inet_kinds[0]; i++) {
		int sv[2];
		char name[64];
		snprintf(name, sizeof name, "%s.connect", inet_kinds[i].k.name);
		if (CHECK(name, inet_pair(inet_kinds[i].family, inet_kinds[i].k.type, sv) == 0))
			run(&inet_kinds[i].k, sv, h1, h2);
	}
	return check_done();
}
