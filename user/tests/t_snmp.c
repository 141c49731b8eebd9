/*
 * t_snmp: /proc/net/snmp, the counters netstat -s and SNMP agents read.
 * Each protocol is a line of names and a line of values with the same
 * prefix; the names are Debian's Linux 6.1's exactly (its Icmp line has
 * the rate-limit counters stable kernels gained), a value for every name; the
 * constants (Forwarding, DefaultTTL, the RTO bounds, MaxConn) are
 * Linux's; and traffic over 127.0.0.1 moves the counters it must: a TCP
 * connection opens actively and passively and is counted established
 * while open, segments in and out, UDP datagrams delivered, sent, and
 * sent to a port nobody listens on (NoPorts).
 */
#include <arpa/inet.h>
#include <fcntl.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

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

int main(int argc, char **argv)
{
	(void)argc;
	check_start(argv[0]);
	lo_up();
	test_layout();
	test_constants();
	test_tcp();
	test_udp();
	return check_done();
}
