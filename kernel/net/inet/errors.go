package inet

import (
	"gvisor.dev/gvisor/pkg/tcpip"

	"shortbread/kernel/abi/linux"
)

// errno turns a netstack error into the errno Linux returns for the
// same condition. ErrClosedForReceive is end of file to a reader and
// never reaches here.
func errno(e tcpip.Error) error {
	if e == nil {
		return nil
	}
	switch e.(type) {
	case *tcpip.ErrWouldBlock:
		return linux.EAGAIN
	case *tcpip.ErrPortInUse, *tcpip.ErrDuplicateAddress:
		return linux.EADDRINUSE
	case *tcpip.ErrBadLocalAddress:
		return linux.EADDRNOTAVAIL
	case *tcpip.ErrConnectionRefused:
		return linux.ECONNREFUSED
	case *tcpip.ErrConnectionReset:
		return linux.ECONNRESET
	case *tcpip.ErrConnectionAborted:
		return linux.ECONNABORTED
	case *tcpip.ErrConnectStarted:
		return linux.EINPROGRESS
	case *tcpip.ErrAlreadyConnecting:
		return linux.EALREADY
	case *tcpip.ErrAlreadyConnected:
		return linux.EISCONN
	case *tcpip.ErrNotConnected:
		return linux.ENOTCONN
	case *tcpip.ErrClosedForSend, *tcpip.ErrAborted:
		return linux.EPIPE
	case *tcpip.ErrTimeout:
		return linux.ETIMEDOUT
	case *tcpip.ErrNetworkUnreachable:
		return linux.ENETUNREACH
	case *tcpip.ErrHostUnreachable:
		return linux.EHOSTUNREACH
	case *tcpip.ErrMessageTooLong:
		return linux.EMSGSIZE
	case *tcpip.ErrUnknownProtocolOption:
		return linux.ENOPROTOOPT
	case *tcpip.ErrAddressFamilyNotSupported:
		return linux.EAFNOSUPPORT
	case *tcpip.ErrDestinationRequired:
		return linux.EDESTADDRREQ
	case *tcpip.ErrNotSupported:
		return linux.EOPNOTSUPP
	case *tcpip.ErrNoBufferSpace:
		return linux.ENOBUFS
	case *tcpip.ErrBroadcastDisabled:
		return linux.EACCES
	case *tcpip.ErrNotPermitted:
		return linux.EPERM
	case *tcpip.ErrBadBuffer, *tcpip.ErrBadAddress:
		return linux.EFAULT
	case *tcpip.ErrUnknownDevice:
		return linux.ENODEV
	}
	return linux.EINVAL
}
