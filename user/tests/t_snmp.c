/*
 * t_snmp: /proc/net/snmp, the counters netstat -s and SNMP agents read.
 * Each protocol is a line of names and a line of values with the same
 * prefix; the names are Debian's Linux 6.1's exactly (its Icmp line has
 * the rate-limit counters stable kernels gained), a value for every name; the
 * constants (Forwarding, DefaultTTL, the RTO bounds, MaxConn) are
 * Linux's; and traffic over 127.0.0.1 moves the counters it must: a TCP
 * connection opens actively and passively and is counted established
 * while open, segments in and out, UDP datagrams delivered, sent, and
 * sent to a port nobody listens on (NoPorts). And ping's raw ICMP socket
 * (root only: EPERM for others, and EACCES for a ping socket, which
 * Linux's default net.ipv4.ping_group_range allows no group): an echo
 * request to 127.0.0.1 is answered, and the Icmp echo counters move.
 */
#include <arpa/inet.h>
#include <fcntl.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "sock.h"

static const char *const protos[] = {"Ip", "Icmp", "Tcp", "Udp", "UdpLite"};
static const char *const names[] = {
	"Forwarding DefaultTTL InReceives InHdrErrors InAddrErrors ForwDatagrams InUnknownProtos InDiscards "
	"InDelivers OutRequests OutDiscards OutNoRoutes ReasmTimeout ReasmReqds ReasmOKs ReasmFails FragOKs "
	"FragFails FragCreates",
	"InMsgs InErrors InCsumErrors InDestUnreachs InTimeExcds InParmProbs InSrcQuenchs InRedirects InEchos "
	"InEchoReps InTimestamps InTimestampReps InAddrMasks InAddrMaskReps OutMsgs OutErrors OutRateLimitGlobal "
	"OutRateLimitHost OutDestUnreachs "
	"OutTimeExcds OutParmProbs OutSrcQuenchs OutRedirects OutEchos OutEchoReps OutTimestamps "
	"OutTimestampReps OutAddrMasks OutAddrMaskReps",
	"RtoAlgorithm RtoMin RtoMax MaxConn ActiveOpens PassiveOpens AttemptFails EstabResets CurrEstab InSegs "
	"OutSegs RetransSegs InErrs OutRsts InCsumErrors",
	"InDatagrams NoPorts InErrors OutDatagrams RcvbufErrors SndbufErrors InCsumErrors IgnoredMulti MemErrors",
	"InDatagrams NoPorts InErrors OutDatagrams RcvbufErrors SndbufErrors InCsumErrors IgnoredMulti MemErrors",
};

/* value returns PROTO's counter NAME, or -2^62 if there is none: the
 * first line that starts "PROTO: " holds the names, the next one the
 * values */
static long long value(const char *proto, const char *name)
{
	char buf[8192], head[32];
	int fd = open("/proc/net/snmp", O_RDONLY);
	ssize_t n = fd < 0 ? -1 : read_fd_all(fd, buf, sizeof buf - 1);
	if (fd >= 0)
		close(fd);
	if (n <= 0)
		return -1LL << 62;
	buf[n] = 0;
	snprintf(head, sizeof head, "%s: ", proto);
	char *lines[2] = {0};
	int found = 0;
	for (char *save = NULL, *l = strtok_r(buf, "\n", &save); l && found < 2; l = strtok_r(NULL, "\n", &save))
		if (strncmp(l, head, strlen(head)) == 0)
			lines[found++] = l + strlen(head);
	if (found < 2)
		return -1LL << 62;
	char *ns = NULL, *vs = NULL;
	for (char *nm = strtok_r(lines[0], " ", &ns), *v = strtok_r(lines[1], " ", &vs); nm && v;
	     nm = strtok_r(NULL, " ", &ns), v = strtok_r(NULL, " ", &vs))
		if (strcmp(nm, name) == 0)
			return strtoll(v, NULL, 10);
	return -1LL << 62;
}

static void test_layout(void)
{
	char buf[8192];
	int fd = open("/proc/net/snmp", O_RDONLY);
	CHECK_SYS("open", fd);
	ssize_t n = fd < 0 ? -1 : read_fd_all(fd, buf, sizeof buf - 1);
	if (fd >= 0)
		close(fd);
	if (!CHECK("read", n > 0))
		return;
	buf[n] = 0;
	for (size_t i = 0; i < sizeof protos / sizeof *protos; i++) {
		char want[1024], tag[80], vals[80], name[64];
		snprintf(want, sizeof want, "%s: %s\n", protos[i], names[i]);
		snprintf(name, sizeof name, "layout.%s.names", protos[i]);
		char *h = strstr(buf, want);
		/* a names line is at the start of the file or of a line */
		CHECK(name, h && (h == buf || h[-1] == '\n'));
		if (!h)
			continue;
		char *v = h + strlen(want);
		snprintf(tag, sizeof tag, "%s:", protos[i]);
		snprintf(vals, sizeof vals, "layout.%s.values_follow", protos[i]);
		CHECK(vals, strncmp(v, tag, strlen(tag)) == 0);
		/* as many numbers as names */
		int nn = 1, nv = 0;
		for (const char *c = names[i]; *c; c++)
			nn += *c == ' ';
		char *p = v + strlen(tag), *eol = strchr(v, '\n');
		while (eol && p < eol) {
			char *end;
			strtoll(p, &end, 10);
			if (end == p)
				break;
			nv++;
			p = end;
		}
		snprintf(name, sizeof name, "layout.%s.one_value_per_name", protos[i]);
		CHECK_EQ(name, nv, nn);
	}
}

static void test_constants(void)
{
	long long fwd = value("Ip", "Forwarding");
	CHECK("ip.forwarding", fwd == 1 || fwd == 2);
	CHECK_EQ("ip.default_ttl", value("Ip", "DefaultTTL"), 64);
	CHECK_EQ("tcp.rto_algorithm", value("Tcp", "RtoAlgorithm"), 1);
	CHECK_EQ("tcp.rto_min", value("Tcp", "RtoMin"), 200);
	CHECK_EQ("tcp.rto_max", value("Tcp", "RtoMax"), 120000);
	CHECK_EQ("tcp.max_conn", value("Tcp", "MaxConn"), -1);
}

static void test_tcp(void)
{
	long long act = value("Tcp", "ActiveOpens"), pas = value("Tcp", "PassiveOpens");
	long long est = value("Tcp", "CurrEstab"), in = value("Tcp", "InSegs"), out = value("Tcp", "OutSegs");
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t al = sizeof a;
	int l = socket(AF_INET, SOCK_STREAM, 0);
	CHECK_SYS("tcp.listen", (bind(l, (void *)&a, sizeof a) == 0 && getsockname(l, (void *)&a, &al) == 0) ? listen(l, 4) : -1);
	int c = socket(AF_INET, SOCK_STREAM, 0);
	CHECK_SYS("tcp.connect", connect(c, (void *)&a, sizeof a));
	int s = accept(l, NULL, NULL);
	CHECK_SYS("tcp.accept", s);
	char buf[16];
	CHECK_EQ("tcp.send", send(c, "0123456789", 10, 0), 10);
	CHECK_EQ("tcp.recv", recv(s, buf, 10, MSG_WAITALL), 10);
	CHECK("tcp.active_opens", value("Tcp", "ActiveOpens") >= act + 1);
	CHECK("tcp.passive_opens", value("Tcp", "PassiveOpens") >= pas + 1);
	/* both ends of a loopback connection are established connections */
	CHECK("tcp.curr_estab_while_open", value("Tcp", "CurrEstab") >= est + 2);
	CHECK("tcp.in_segs", value("Tcp", "InSegs") >= in + 3);
	CHECK("tcp.out_segs", value("Tcp", "OutSegs") >= out + 3);
	close(s);
	close(c);
	close(l);
}

static void test_udp(void)
{
	long long in = value("Udp", "InDatagrams"), noports = value("Udp", "NoPorts"), out = value("Udp", "OutDatagrams");
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t al = sizeof a;
	int r = socket(AF_INET, SOCK_DGRAM, 0), w = socket(AF_INET, SOCK_DGRAM, 0);
	CHECK_SYS("udp.bind", bind(r, (void *)&a, sizeof a) == 0 ? getsockname(r, (void *)&a, &al) : -1);
	char buf[8];
	int got = 0;
	for (int i = 0; i < 3; i++)
		if (sendto(w, "dgram", 5, 0, (void *)&a, sizeof a) == 5 && recv(r, buf, sizeof buf, 0) == 5)
			got++;
	CHECK_EQ("udp.delivered", got, 3);
	/* a port nobody has: the bound socket's, once it is closed */
	close(r);
	for (int i = 0; i < 5; i++)
		sendto(w, "nobody", 6, 0, (void *)&a, sizeof a);
	CHECK("udp.in_datagrams", value("Udp", "InDatagrams") >= in + 3);
	CHECK("udp.out_datagrams", value("Udp", "OutDatagrams") >= out + 8);
	CHECK("udp.no_ports", value("Udp", "NoPorts") >= noports + 5);
	close(w);
}

/* cksum is the Internet checksum of n bytes (n even) */
static unsigned short cksum(const unsigned char *p, int n)
{
	unsigned long sum = 0;
	for (int i = 0; i < n; i += 2)
		sum += p[i] << 8 | p[i + 1];
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (unsigned short)~sum;
}

static void test_icmp(void)
{
	long long in_echos = value("Icmp", "InEchos"), out_reps = value("Icmp", "OutEchoReps");
	long long in_reps = value("Icmp", "InEchoReps"), out_echos = value("Icmp", "OutEchos");
	int s = socket(AF_INET, SOCK_RAW, IPPROTO_ICMP);
	CHECK_SYS("icmp.raw_socket", s);
	struct timeval tv = {5, 0};
	setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	unsigned char req[16] = {8, 0, 0, 0, 0x12, 0x34, 0, 1, 'e', 'c', 'h', 'o', 'p', 'i', 'n', 'g'};
	unsigned short c = cksum(req, sizeof req);
	req[2] = c >> 8;
	req[3] = c & 0xff;
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)}, from;
	CHECK_EQ("icmp.sendto", sendto(s, req, sizeof req, 0, (void *)&a, sizeof a), (long)sizeof req);
	/* A raw ICMP socket sees every ICMP packet to this host, the request
	 * looped back first: read until the reply. */
	int reply = 0, whole = 0, from_lo = 0;
	for (int i = 0; i < 4 && !reply; i++) {
		unsigned char buf[256];
		socklen_t fl = sizeof from;
		ssize_t n = recvfrom(s, buf, sizeof buf, 0, (void *)&from, &fl);
		if (n < 20)
			break;
		int hl = (buf[0] & 15) * 4;
		if (n < hl + (ssize_t)sizeof req || buf[hl] != 0)
			continue;
		reply = 1;
		/* the IP header comes first, as on Linux; then the echo */
		whole = (buf[0] >> 4) == 4 && buf[9] == IPPROTO_ICMP && !memcmp(buf + hl + 4, req + 4, sizeof req - 4);
		from_lo = from.sin_family == AF_INET && from.sin_addr.s_addr == htonl(INADDR_LOOPBACK);
	}
	CHECK("icmp.echo_reply", reply);
	CHECK("icmp.reply_is_ip_packet_with_our_echo", whole);
	CHECK("icmp.reply_from_loopback", from_lo);
	CHECK("icmp.in_echos", value("Icmp", "InEchos") >= in_echos + 1);
	CHECK("icmp.out_echo_reps", value("Icmp", "OutEchoReps") >= out_reps + 1);
	CHECK("icmp.in_echo_reps", value("Icmp", "InEchoReps") >= in_reps + 1);
	CHECK("icmp.out_echos", value("Icmp", "OutEchos") >= out_echos + 1);
	close(s);

	pid_t pid = fork();
	if (pid == 0) {
		if (setuid(65534) != 0)
			_exit(9);
		int e1 = socket(AF_INET, SOCK_RAW, IPPROTO_ICMP) < 0 ? errno : 0;
		int e2 = socket(AF_INET, SOCK_DGRAM, IPPROTO_ICMP) < 0 ? errno : 0;
		_exit((e1 == EPERM ? 0 : 1) | (e2 == EACCES ? 0 : 2));
	}
	int st = 0;
	waitpid(pid, &st, 0);
	CHECK("icmp.raw_unprivileged_eperm", WIFEXITED(st) && (WEXITSTATUS(st) & 9) == 0);
	CHECK("icmp.ping_socket_eacces", WIFEXITED(st) && (WEXITSTATUS(st) & 10) == 0);
}

int main(int argc, char **argv)
{
	(void)argc;
	check_start(argv[0]);
	lo_up();
	test_layout();
	test_constants();
	test_tcp();
	test_udp();
	test_icmp();
	return check_done();
}
