package servers

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"strings"
	"testing"
)

func listen(t *testing.T) net.Listener {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Skipf("no loopback TCP here: %v", err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

func TestEcho(t *testing.T) {
	l := listen(t)
	go Echo(l)
	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, n := range []int{1, 64, 100000} {
		msg := bytes.Repeat([]byte{byte(n)}, n)
		go c.Write(msg)
		got := make([]byte, n)
		if _, err := io.ReadFull(c, got); err != nil || !bytes.Equal(got, msg) {
			t.Fatalf("%d bytes echoed as %d bytes (%v)", n, len(got), err)
		}
	}
}

func TestHTTP(t *testing.T) {
	l := listen(t)
	body := []byte(strings.Repeat("x", 1024))
	go HTTP(l, body)
	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r := bufio.NewReader(c)
	// two keep-alive requests, the second with a body to skip, then one
	// that closes
	reqs := "GET / HTTP/1.1\r\nHost: a\r\n\r\n" +
		"POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhello" +
		"GET / HTTP/1.1\r\nConnection: close\r\n\r\n"
	if _, err := c.Write([]byte(reqs)); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		status, _ := r.ReadString('\n')
		if status != "HTTP/1.1 200 OK\r\n" {
			t.Fatalf("answer %d: status %q", i, status)
		}
		length := -1
		for {
			h, err := r.ReadString('\n')
			if err != nil {
				t.Fatal(err)
			}
			if h == "\r\n" {
				break
			}
			if v, ok := strings.CutPrefix(h, "Content-Length: "); ok {
				length = len(body)
				if strings.TrimSpace(v) != "1024" {
					t.Fatalf("Content-Length %q", v)
				}
			}
		}
		got := make([]byte, length)
		if _, err := io.ReadFull(r, got); err != nil || !bytes.Equal(got, body) {
			t.Fatalf("answer %d: body %d bytes (%v)", i, len(got), err)
		}
	}
	if _, err := r.ReadByte(); err != io.EOF {
		t.Errorf("connection open after Connection: close (%v)", err)
	}
}

func TestBadRequest(t *testing.T) {
	for _, req := range []string{"GARBAGE\r\n\r\n", "GET / HTTP/1.1\r\nNoColon\r\n\r\n", "GET / HTTP/1.1\r\nContent-Length: -1\r\n\r\n", "GET / SPDY/3\r\n\r\n"} {
		_, err := readRequest(bufio.NewReader(strings.NewReader(req)))
		if err != errBadRequest {
			t.Errorf("%q: %v, want a bad request", req, err)
		}
	}
	keep, err := readRequest(bufio.NewReader(strings.NewReader("GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")))
	if err != nil || !keep {
		t.Errorf("HTTP/1.0 keep-alive: %v %v", keep, err)
	}
}
