// Package servers holds the two servers of the kernel-mode experiment
// (issue 14, item 7; Wasmer's kernel-mode WebAssembly found a TCP echo
// server ~10% and an HTTP server ~6% faster without the user/kernel
// boundary): the same source runs as a static user program over
// Shortbread's sockets (bench/kmode/kmserver) and as kernel goroutines
// on netstack (kernel/kmode), so the difference between the two is the
// boundary's cost. Only package net's interfaces are used.
package servers

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net"
	"strconv"
	"strings"
)

// Echo serves each connection accepted from l by writing back what it
// reads, until the listener closes.
func Echo(l net.Listener) error {
	return serve(l, echo)
}

func echo(c net.Conn) {
	defer c.Close()
	buf := make([]byte, 64<<10)
	for {
		n, err := c.Read(buf)
		if n > 0 {
			if _, werr := c.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// HTTP serves each connection accepted from l as HTTP/1.1 with
// keep-alive, answering every request with body (a fixed page, as a
// static file server answers one URL). It reads the request line and
// headers and skips a request body of Content-Length bytes; that is
// all the benchmark's clients (wrk) send. Deliberately not net/http:
// a small server keeps the kernel image small and makes the kernel's
// share of each request, which the experiment is about, larger.
func HTTP(l net.Listener, body []byte) error {
	head := []byte("HTTP/1.1 200 OK\r\nServer: kmode\r\nContent-Type: application/octet-stream\r\nContent-Length: " +
		strconv.Itoa(len(body)) + "\r\n\r\n")
	resp := append(head, body...)
	return serve(l, func(c net.Conn) { httpConn(c, resp) })
}

func httpConn(c net.Conn, resp []byte) {
	defer c.Close()
	r := bufio.NewReaderSize(c, 4096)
	for {
		keep, err := readRequest(r)
		if err != nil {
			if !errors.Is(err, io.EOF) {
				c.Write([]byte("HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"))
			}
			return
		}
		if _, err := c.Write(resp); err != nil || !keep {
			return
		}
	}
}

// errBadRequest is a request this server cannot parse.
var errBadRequest = errors.New("bad request")

// readRequest reads one request's line, headers and body, and reports
// whether the connection stays open after the answer (HTTP/1.1 without
// "Connection: close", or HTTP/1.0 with "Connection: keep-alive").
func readRequest(r *bufio.Reader) (keep bool, err error) {
	line, err := r.ReadSlice('\n')
	if err != nil {
		if len(line) == 0 && errors.Is(err, io.EOF) {
			return false, io.EOF
		}
		return false, errBadRequest
	}
	f := bytes.Fields(line)
	if len(f) != 3 || !bytes.HasPrefix(f[2], []byte("HTTP/1.")) {
		return false, errBadRequest
	}
	keep = string(f[2]) == "HTTP/1.1"
	length := 0
	for {
		h, err := r.ReadSlice('\n')
		if err != nil {
			return false, errBadRequest
		}
		h = bytes.TrimRight(h, "\r\n")
		if len(h) == 0 {
			break
		}
		name, value, ok := bytes.Cut(h, []byte(":"))
		if !ok {
			return false, errBadRequest
		}
		v := strings.TrimSpace(string(value))
		switch strings.ToLower(string(name)) {
		case "connection":
			switch strings.ToLower(v) {
			case "close":
				keep = false
			case "keep-alive":
				keep = true
			}
		case "content-length":
			if length, err = strconv.Atoi(v); err != nil || length < 0 {
				return false, errBadRequest
			}
		}
	}
	if _, err := r.Discard(length); err != nil {
		return false, errBadRequest
	}
	return keep, nil
}

// Page returns the n-byte page the HTTP server answers with in both
// modes: numbered lines, as apps/stage.sh makes nginx's files.
func Page(n int) []byte {
	var b bytes.Buffer
	for i := 0; b.Len() < n; i++ {
		b.WriteString("shortbread line ")
		b.WriteString(strconv.Itoa(100000 + i)[1:])
		b.WriteString(" ..........................................\n")
	}
	return b.Bytes()[:n]
}

func serve(l net.Listener, handle func(net.Conn)) error {
	for {
		c, err := l.Accept()
		if err != nil {
			return err
		}
		go handle(c)
	}
}
