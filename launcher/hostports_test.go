package launcher

import (
	"bufio"
	"io"
	"net"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/toolshelf/toolshelf/internal/testenv"
)

// The host's side of a granted port refuses what it cannot carry: a
// connection past the bound is closed at once (not queued), and so is one
// whose port on the host does not answer; the others are carried.
func TestHostPortsRefuseWhatTheyCannotCarry(t *testing.T) {
	// A service that holds every connection open until the test ends.
	held := make(chan struct{})
	t.Cleanup(func() { close(held) })
	addr := testenv.TCPServer(t, func(c net.Conn) { c.Write([]byte("hello\n")); <-held; c.Close() })
	_, p, _ := net.SplitHostPort(addr)
	port, _ := strconv.Atoi(p)
	closedPort := func() int { // a port nothing listens on
		l, _ := net.Listen("tcp", "127.0.0.1:0")
		defer l.Close()
		return l.Addr().(*net.TCPAddr).Port
	}()
	h, err := openHostPorts([]int{port, closedPort})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.close)
	dial := func(p int) net.Conn {
		c, err := net.Dial("unix", filepath.Join(h.dir, strconv.Itoa(p)))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	deadline := time.Now().Add(testenv.Timeout(10 * time.Second))
	for i := range maxPortConns {
		c := dial(port)
		c.SetReadDeadline(deadline)
		if line, err := bufio.NewReader(c).ReadString('\n'); line != "hello\n" {
			t.Fatalf("connection %d: %q %v", i, line, err)
		}
	}
	for name, p := range map[string]int{"past the bound": port, "to a port that does not answer": closedPort} {
		c := dial(p)
		c.SetReadDeadline(deadline)
		if n, err := c.Read(make([]byte, 16)); err != io.EOF {
			t.Errorf("a connection %s: %d bytes, %v; want it closed", name, n, err)
		}
	}
}

// The forwarder in the sandbox does not start the server when it cannot
// offer what it was asked: arguments it cannot read, or a port it cannot
// listen on.
func TestForwarderRefusesWhatItCannotOffer(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	_, port, _ := net.SplitHostPort(busy.Addr().String())
	for name, args := range map[string][]string{
		"no command":       {"15999", "--"},
		"no separator":     {"15999", "true"},
		"not a port":       {"15999,http", "--", "true"},
		"out of range":     {"70000", "--", "true"},
		"a port held here": {"15998," + port, "--", "true"},
	} {
		if code := runForwarder(args); code != 2 {
			t.Errorf("%s: exit %d, want 2", name, code)
		}
	}
}
