package launcher

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	ossignal "os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// A contained server's network reaches nothing of the host's loopback
// (see netns.go). "network": {"hostPorts": [5432]} grants it some ports
// of it, at 127.0.0.1 in its own network, as a server configured for a
// local database or collector expects. slirp4netns forwards only from the
// host inward, so toolshelf carries each granted port itself:
//
//   - on the host, a Unix socket per port in a folder of the server's
//     own, whose connections toolshelf joins to the host's 127.0.0.1:PORT;
//   - in the sandbox, that folder (read-only), and toolshelf's own program,
//     which runs first as the port forwarder: it listens on 127.0.0.1:PORT
//     in the server's network, joins each connection to its port's socket,
//     and runs the server as its child, on the same stdio.
//
// Ports are the server's alone: nothing else of the host's loopback (the
// gateway's own port, unless granted) answers it.

// forwardArg, as the first argument, makes a program linking this package
// the in-sandbox forwarder (see init). Every program that can start a
// contained server links this package, and so can serve as it.
const forwardArg = "--toolshelf-forward-host-ports"

// Where the sandbox finds the forwarder's program and the port sockets.
const (
	forwarderPath = "/run/toolshelf/forward"
	portsPath     = "/run/toolshelf/ports"
)

// maxPortConns bounds the connections one server holds open through its
// granted ports at once.
const maxPortConns = 64

func init() {
	// Here rather than in main: a library's users start contained
	// servers too, and the forwarder is whatever program started them.
	if len(os.Args) > 1 && os.Args[1] == forwardArg {
		os.Exit(runForwarder(os.Args[2:]))
	}
}

// hostPorts is the host's side of a server's granted ports: a folder of
// Unix sockets, one a port, each joined to the host's 127.0.0.1:PORT.
type hostPorts struct {
	dir       string
	listeners []net.Listener
	conns     chan struct{} // a token per connection open
	wg        sync.WaitGroup
}

// openHostPorts listens for the sandbox's connections to ports. The
// folder is passable by anyone (a server of a root toolshelf runs as
// nobody) but not listable, and made anew for each start.
func openHostPorts(ports []int) (*hostPorts, error) {
	dir, err := os.MkdirTemp("", "toolshelf-ports-")
	if err != nil {
		return nil, err
	}
	h := &hostPorts{dir: dir, conns: make(chan struct{}, maxPortConns)}
	if err := os.Chmod(dir, 0o711); err != nil {
		h.close()
		return nil, err
	}
	for _, p := range ports {
		sock := filepath.Join(dir, strconv.Itoa(p))
		l, err := net.Listen("unix", sock)
		if err != nil {
			h.close()
			return nil, fmt.Errorf("the socket for host port %d: %w", p, err)
		}
		h.listeners = append(h.listeners, l)
		if err := os.Chmod(sock, 0o666); err != nil {
			h.close()
			return nil, err
		}
		h.wg.Add(1)
		go h.serve(l, net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
	}
	return h, nil
}

// serve joins each connection on l to target until l is closed.
func (h *hostPorts) serve(l net.Listener, target string) {
	defer h.wg.Done()
	joinEach(l, h.conns, func() (net.Conn, error) { return net.DialTimeout("tcp", target, 10*time.Second) })
}

// joinEach accepts connections on l until it is closed and joins each to
// one dial opens, while open (a token per connection) has room: one past
// the bound is closed at once, not queued, and so is one dial cannot
// open.
func joinEach(l net.Listener, open chan struct{}, dial func() (net.Conn, error)) {
	for {
		c, err := l.Accept()
		if err != nil {
			return
		}
		select {
		case open <- struct{}{}:
		default:
			c.Close()
			continue
		}
		go func() {
			defer func() { <-open }()
			out, err := dial()
			if err != nil {
				c.Close()
				return
			}
			join(c, out)
		}()
	}
}

// close stops listening and removes the sockets; connections open end
// with their peers.
func (h *hostPorts) close() {
	if h == nil {
		return
	}
	for _, l := range h.listeners {
		l.Close()
	}
	h.wg.Wait()
	os.RemoveAll(h.dir)
}

// join copies a to b and b to a until both directions end, then closes
// both.
func join(a, b net.Conn) {
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		io.Copy(dst, src)
		if cw, ok := dst.(interface{ CloseWrite() error }); ok {
			cw.CloseWrite()
		} else {
			dst.Close()
		}
		done <- struct{}{}
	}
	go pipe(a, b)
	go pipe(b, a)
	<-done
	<-done
	a.Close()
	b.Close()
}

// forwarderArgs are what the sandbox runs before the server's command for
// its granted ports.
func forwarderArgs(ports []int) []string {
	list := make([]string, len(ports))
	for i, p := range ports {
		list[i] = strconv.Itoa(p)
	}
	return []string{forwarderPath, forwardArg, strings.Join(list, ","), "--"}
}

// runForwarder is the forwarder in the sandbox: args are the ports
// ("5432,6379"), "--" and the server's command. It listens on each port
// at 127.0.0.1 of the server's network, then runs the server as its
// child and ends as it does. It prints only errors, on stderr, which the
// gateway shows as the server's.
func runForwarder(args []string) int {
	if len(args) < 3 || args[1] != "--" {
		fmt.Fprintln(os.Stderr, "toolshelf: the port forwarder wants PORTS -- COMMAND [ARG...]")
		return 2
	}
	var ports []string
	for _, p := range strings.Split(args[0], ",") {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			fmt.Fprintf(os.Stderr, "toolshelf: the port forwarder: bad port %q\n", p)
			return 2
		}
		ports = append(ports, p)
	}
	var listeners []net.Listener
	for _, p := range ports {
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", p))
		if err != nil {
			fmt.Fprintf(os.Stderr, "toolshelf: host port %s cannot be offered in the sandbox: %v\n", p, err)
			for _, l := range listeners {
				l.Close()
			}
			return 2
		}
		listeners = append(listeners, l)
	}
	for i, l := range listeners {
		go forwardPort(l, filepath.Join(portsPath, ports[i]))
	}
	cmd := exec.Command(args[2], args[3:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	signals := make(chan os.Signal, 4)
	ossignal.Notify(signals, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "toolshelf: starting %s: %v\n", args[2], err)
		return 127
	}
	go func() {
		for s := range signals {
			cmd.Process.Signal(s)
		}
	}()
	err := cmd.Wait()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &exit):
		if st, ok := exit.Sys().(syscall.WaitStatus); ok && st.Signaled() {
			return 128 + int(st.Signal())
		}
		return exit.ExitCode()
	}
	return 1
}

// forwardPort joins each connection on l to the Unix socket sock.
func forwardPort(l net.Listener, sock string) {
	joinEach(l, make(chan struct{}, maxPortConns), func() (net.Conn, error) { return net.Dial("unix", sock) })
}
