package testenv

import (
	"net"
	"strings"
	"testing"
)

// LineServer serves a local service on a free port of the loopback until
// the test ends, as a contained server's grants are tried against: each
// connection gets answer(the first line it sent, if any before it
// waited) and is closed. It returns the address.
func LineServer(t testing.TB, answer func(got string) string) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				line := make([]byte, 256)
				n, _ := c.Read(line)
				c.Write([]byte(answer(strings.TrimSpace(string(line[:n]))) + "\n"))
			}()
		}
	}()
	return l.Addr().String()
}
