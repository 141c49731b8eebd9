package inet

import (
	"testing"

	"shortbread/kernel/net/socket"
	"shortbread/kernel/vfs"
)

// A socket declares vfs.ExactReader, so read(2), recvfrom(2) and
// recvmsg(2) hand it a lent buffer without clearing it: each receive
// must write the bytes it reports, from the buffer's start, and no more.
func TestReceiveWritesWhatItReports(t *testing.T) {
	var _ vfs.ExactReader = (*sock)(nil)
	c, a := connectedPair(t)
	for _, data := range []string{"abc", "defghij"} {
		if n, err := c.Write(socket.Blocking{}, []byte(data), 0); n != len(data) || err != nil {
			t.Fatalf("write %q: %d %v", data, n, err)
		}
		buf := make([]byte, 64)
		for i := range buf {
			buf[i] = 0xee
		}
		got := 0
		for got < len(data) {
			n, err := a.Read(vfs.Blocking{}, buf[got:], 0)
			if err != nil || n == 0 {
				t.Fatalf("read %q at %d: %d %v", data, got, n, err)
			}
			got += n
		}
		if string(buf[:got]) != data {
			t.Errorf("read %q, want %q", buf[:got], data)
		}
		for i, b := range buf[got:] {
			if b != 0xee {
				t.Fatalf("byte %d past the %d read written: %#x", got+i, got, b)
			}
		}
	}
}
