package inet

import (
	"fmt"
	"strings"
)

// ProcNetSnmp returns /proc/net/snmp: the IPv4, ICMP, TCP and UDP
// counters in Linux 6.1's layout (a line of names, then a line of
// values, per protocol; Icmp with the rate-limit counters Debian's 6.1
// has), from netstack's stack-wide statistics, which
// count the loopback interface too, as Linux's do. Counters netstack does
// not keep are 0; Tcp's RtoMin and RtoMax are netstack's bounds in ms,
// and MaxConn is -1 (no limit) as on Linux.
func ProcNetSnmp() []byte {
	st := Stack().Stats()
	ip, icmp, tcp, udp := st.IP, st.ICMP.V4, st.TCP, st.UDP
	var b strings.Builder
	row := func(proto string, names string, values ...any) {
		fmt.Fprintf(&b, "%s: %s\n%s:", proto, names, proto)
		for _, v := range values {
			fmt.Fprintf(&b, " %v", v)
		}
		b.WriteString("\n")
	}
	// Forwarding 2: not a router.
	row("Ip", "Forwarding DefaultTTL InReceives InHdrErrors InAddrErrors ForwDatagrams InUnknownProtos InDiscards InDelivers OutRequests OutDiscards OutNoRoutes ReasmTimeout ReasmReqds ReasmOKs ReasmFails FragOKs FragFails FragCreates",
		2, 64, ip.PacketsReceived.Value(), ip.MalformedPacketsReceived.Value(),
		ip.InvalidDestinationAddressesReceived.Value()+ip.InvalidSourceAddressesReceived.Value(),
		0, 0, ip.IPTablesInputDropped.Value(), ip.PacketsDelivered.Value(),
		ip.PacketsSent.Value(), ip.OutgoingPacketErrors.Value(), 0, 0, 0, 0, ip.MalformedFragmentsReceived.Value(), 0, 0, 0)
	in, out := icmp.PacketsReceived, icmp.PacketsSent
	inMsgs := in.EchoRequest.Value() + in.EchoReply.Value() + in.DstUnreachable.Value() + in.SrcQuench.Value() +
		in.Redirect.Value() + in.TimeExceeded.Value() + in.ParamProblem.Value() + in.Timestamp.Value() +
		in.TimestampReply.Value() + in.InfoRequest.Value() + in.InfoReply.Value() + in.Invalid.Value()
	outMsgs := out.EchoRequest.Value() + out.EchoReply.Value() + out.DstUnreachable.Value() + out.SrcQuench.Value() +
		out.Redirect.Value() + out.TimeExceeded.Value() + out.ParamProblem.Value() + out.Timestamp.Value() +
		out.TimestampReply.Value() + out.InfoRequest.Value() + out.InfoReply.Value()
	row("Icmp", "InMsgs InErrors InCsumErrors InDestUnreachs InTimeExcds InParmProbs InSrcQuenchs InRedirects InEchos InEchoReps InTimestamps InTimestampReps InAddrMasks InAddrMaskReps OutMsgs OutErrors OutRateLimitGlobal OutRateLimitHost OutDestUnreachs OutTimeExcds OutParmProbs OutSrcQuenchs OutRedirects OutEchos OutEchoReps OutTimestamps OutTimestampReps OutAddrMasks OutAddrMaskReps",
		inMsgs, in.Invalid.Value(), 0, in.DstUnreachable.Value(), in.TimeExceeded.Value(), in.ParamProblem.Value(),
		in.SrcQuench.Value(), in.Redirect.Value(), in.EchoRequest.Value(), in.EchoReply.Value(), in.Timestamp.Value(),
		in.TimestampReply.Value(), 0, 0,
		outMsgs, out.Dropped.Value(), out.RateLimited.Value(), 0, out.DstUnreachable.Value(), out.TimeExceeded.Value(), out.ParamProblem.Value(),
		out.SrcQuench.Value(), out.Redirect.Value(), out.EchoRequest.Value(), out.EchoReply.Value(), out.Timestamp.Value(),
		out.TimestampReply.Value(), 0, 0)
	row("Tcp", "RtoAlgorithm RtoMin RtoMax MaxConn ActiveOpens PassiveOpens AttemptFails EstabResets CurrEstab InSegs OutSegs RetransSegs InErrs OutRsts InCsumErrors",
		1, 200, 120000, -1, tcp.ActiveConnectionOpenings.Value(), tcp.PassiveConnectionOpenings.Value(),
		tcp.FailedConnectionAttempts.Value(), tcp.EstablishedResets.Value(), tcp.CurrentEstablished.Value(),
		tcp.ValidSegmentsReceived.Value(), tcp.SegmentsSent.Value(), tcp.Retransmits.Value(),
		tcp.InvalidSegmentsReceived.Value()+tcp.ChecksumErrors.Value(), tcp.ResetsSent.Value(), tcp.ChecksumErrors.Value())
	udpRow := func(proto string, in, noPorts, errs, outs, rcvbuf, sndbuf, csum uint64) {
		row(proto, "InDatagrams NoPorts InErrors OutDatagrams RcvbufErrors SndbufErrors InCsumErrors IgnoredMulti MemErrors",
			in, noPorts, errs, outs, rcvbuf, sndbuf, csum, 0, 0)
	}
	udpRow("Udp", udp.PacketsReceived.Value(), udp.UnknownPortErrors.Value(),
		udp.MalformedPacketsReceived.Value()+udp.ReceiveBufferErrors.Value()+udp.ChecksumErrors.Value(),
		udp.PacketsSent.Value(), udp.ReceiveBufferErrors.Value(), udp.PacketSendErrors.Value(), udp.ChecksumErrors.Value())
	udpRow("UdpLite", 0, 0, 0, 0, 0, 0, 0)
	return []byte(b.String())
}
