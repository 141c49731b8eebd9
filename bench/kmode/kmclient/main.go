// Command kmclient is the echo client of the kernel-mode experiment:
// conns connections each send size bytes and wait for them to come
// back, for the given time; it prints the round trips per second.
package main

import (
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:7100", "echo server")
	conns := flag.Int("conns", 4, "connections")
	size := flag.Int("size", 64, "bytes per message")
	secs := flag.Float64("seconds", 10, "how long to run")
	flag.Parse()
	var trips atomic.Int64
	var wg sync.WaitGroup
	end := time.Now().Add(time.Duration(*secs * float64(time.Second)))
	start := time.Now()
	for i := 0; i < *conns; i++ {
		c, err := net.Dial("tcp", *addr)
		if err != nil {
			fmt.Fprintln(os.Stderr, "kmclient:", err)
			os.Exit(1)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer c.Close()
			msg, got := make([]byte, *size), make([]byte, *size)
			for n := 0; time.Now().Before(end); n++ {
				msg[0] = byte(n)
				if _, err := c.Write(msg); err != nil {
					fmt.Fprintln(os.Stderr, "kmclient:", err)
					os.Exit(1)
				}
				if _, err := io.ReadFull(c, got); err != nil || got[0] != msg[0] {
					fmt.Fprintln(os.Stderr, "kmclient: the echo is wrong or missing:", err)
					os.Exit(1)
				}
				trips.Add(1)
			}
		}()
	}
	wg.Wait()
	el := time.Since(start).Seconds()
	fmt.Printf("round trips/s: %.1f (%d in %.2f s, %d connections of %d bytes)\n", float64(trips.Load())/el, trips.Load(), el, *conns, *size)
}
