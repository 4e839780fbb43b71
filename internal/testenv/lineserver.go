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
	return TCPServer(t, func(c net.Conn) {
		defer c.Close()
		line := make([]byte, 256)
		n, _ := c.Read(line)
		c.Write([]byte(answer(strings.TrimSpace(string(line[:n]))) + "\n"))
	})
}

// TCPServer listens on a free port of the loopback until the test ends
// and hands each connection to serve, in a goroutine of its own. It
// returns the address.
func TCPServer(t testing.TB, serve func(net.Conn)) string {
	t.Helper()
	return TCPServerOn(t, "127.0.0.1:0", serve)
}

// TCPServerOn is TCPServer listening at addr: "0.0.0.0:0" for a service
// on every interface of the host, as a test of what reaches the host by
// an address other than its loopback's needs.
func TCPServerOn(t testing.TB, addr string, serve func(net.Conn)) string {
	t.Helper()
	l, err := net.Listen("tcp", addr)
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
			go serve(c)
		}
	}()
	return l.Addr().String()
}
