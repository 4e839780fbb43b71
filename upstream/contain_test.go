package upstream

import (
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/toolshelf/toolshelf/config"
	"github.com/toolshelf/toolshelf/internal/testenv"
	"github.com/toolshelf/toolshelf/launcher"
)

// needSandbox skips a test where servers cannot be contained, saying why.
func needSandbox(t *testing.T) {
	t.Helper()
	if why := launcher.CannotContain(); why != "" {
		t.Skip("servers run uncontained here: " + why)
	}
}

// contained is fake's server, contained.
func contained(name, mode string, tools []string, extra ...string) config.ServerConfig {
	cfg := fake(name, mode, tools, extra...)
	cfg.NoContain = false
	return cfg
}

// TestContainedServerServes: a contained stdio server starts, lists its
// tools and answers calls, and its status says it is contained.
func TestContainedServerServes(t *testing.T) {
	needSandbox(t)
	p := startPool(t, []config.ServerConfig{contained("box", "serve", []string{"echo"}), fake("open", "serve", []string{"echo"})}, nil)
	st := p.Status()
	if st[0].Name != "box" || st[0].State != StateReady || !st[0].Contained || st[0].Uncontained != "" {
		t.Fatalf("contained server: %+v", st[0])
	}
	if st[1].Contained || !strings.Contains(st[1].Uncontained, `"contain": false`) {
		t.Errorf("uncontained server: %+v", st[1])
	}
	res, err := p.Scope(nil).Call(context.Background(), "mcp__box__echo", json.RawMessage(`{"text":"hi"}`))
	if err != nil || len(res.Content) == 0 {
		t.Fatalf("call: %v %v", res, err)
	}
}

// TestContainedCommandNotFound: a missing command is said as plainly as
// when uncontained, not as bwrap's or setpriv's failure.
func TestContainedCommandNotFound(t *testing.T) {
	needSandbox(t)
	cfg := contained("missing", "serve", nil)
	cfg.Command = "toolshelf-no-such-command-xyz"
	p := startPool(t, []config.ServerConfig{cfg}, nil)
	if st := p.Status()[0]; !strings.Contains(st.Error, `command "toolshelf-no-such-command-xyz" not found`) {
		t.Errorf("error = %q", st.Error)
	}
}

// A server whose cwd does not exist is told so, not that its command
// does not exist.
func TestMissingCwdNamed(t *testing.T) {
	cfg := contained("nocwd", "serve", nil)
	cfg.Cwd = filepath.Join(t.TempDir(), "gone")
	p := startPool(t, []config.ServerConfig{cfg}, nil)
	if st := p.Status()[0]; !strings.Contains(st.Error, "cwd "+cfg.Cwd+" does not exist") || strings.Contains(st.Error, "command") {
		t.Errorf("error = %q", st.Error)
	}
}

// TestContainedWithoutNetwork: a contained server has a network of its
// own, with no route to the host's loopback (slirp4netns; where it is
// not installed the test says so and checks "network": false only), and
// "network": false leaves it none at all.
func TestContainedWithoutNetwork(t *testing.T) {
	needSandbox(t)
	addr := testenv.TCPServer(t, func(c net.Conn) {
		c.Write([]byte("a local service answers\n"))
		c.Close()
	})
	on := contained("on", "hostile", nil)
	off := contained("off", "hostile", nil)
	off.NoNetwork = true
	p := startPool(t, []config.ServerConfig{on, off}, nil)
	hostile := func(server, tool, args string) string {
		res, err := p.Scope(nil).Call(context.Background(), "mcp__"+server+"__"+tool, json.RawMessage(args))
		if err != nil {
			t.Fatal(err)
		}
		return textOf(t, res)
	}
	ownNet := launcher.OwnNetworks()
	for _, server := range []string{"on", "off"} {
		got := hostile(server, "connect", `{"address":"`+addr+`","line":"hello"}`)
		if server == "on" && !ownNet {
			t.Logf("slirp4netns is not installed: a contained server shares the host's network (%.80s)", got)
			continue
		}
		if !strings.HasPrefix(got, "refused") {
			t.Errorf("%s: a contained server reached a service on the host's loopback: %s", server, got)
		}
		// Through the address a user-mode network gives the host.
		if got := hostile(server, "connect", `{"address":"10.0.2.2:`+addr[strings.LastIndex(addr, ":")+1:]+`","line":"hello"}`); !strings.HasPrefix(got, "refused") {
			t.Errorf("%s: a contained server reached the host's loopback through 10.0.2.2: %s", server, got)
		}
	}
	// The host's own addresses other than the loopback's (a LAN
	// address, a container bridge's) answer as little, whatever listens
	// there on every interface.
	if ownNet {
		any := testenv.TCPServerOn(t, "0.0.0.0:0", func(c net.Conn) {
			c.Write([]byte("a service on every interface answers\n"))
			c.Close()
		})
		port := any[strings.LastIndex(any, ":")+1:]
		addrs, err := launcher.HostAddresses()
		if err != nil || len(addrs) == 0 {
			t.Fatalf("no address of the host's but the loopback's to try: %v %v", addrs, err)
		}
		for _, a := range addrs {
			if got := hostile("on", "connect", `{"address":"`+a+`:`+port+`","line":"hello"}`); !strings.HasPrefix(got, "refused") {
				t.Errorf("a contained server reached the host at %s: %s", a, got)
			}
		}
	}
	// /proc/net/dev lists the interfaces of the server's network
	// namespace: the way out (tap0) with network, loopback alone without.
	if got := hostile("on", "read", `{"path":"/proc/net/dev"}`); ownNet && !strings.Contains(got, "tap0") {
		t.Errorf("with network, no way out:\n%.400s", got)
	}
	if got := hostile("off", "read", `{"path":"/proc/net/dev"}`); strings.Contains(got, "tap0") || strings.Contains(got, "eth") {
		t.Errorf(`with "network": false, an interface out:\n%.400s`, got)
	}
}

// BenchmarkServerStart measures what containment costs a server's start:
// the time from starting the process to its tool list (stopping it is
// not counted), contained and
// not, for the Go fixture and for a real Node server (server-memory).
// docs/benchmarks.md has the figures.
func BenchmarkServerStart(b *testing.B) {
	memory, _ := filepath.Abs("../testdata/servers/node_modules/@modelcontextprotocol/server-memory/dist/index.js")
	ports := fake("s", "serve", []string{"echo"})
	ports.HostPorts = []int{15432} // contained only: its forwarder starts first
	servers := map[string]config.ServerConfig{"fixture": fake("s", "serve", []string{"echo"}), "fixture-hostports": ports}
	if _, err := os.Stat(memory); err == nil {
		servers["node"] = config.ServerConfig{Name: "s", Command: "node", Args: []string{memory}, Env: map[string]string{"MEMORY_FILE_PATH": filepath.Join(b.TempDir(), "m.jsonl")}}
	}
	for _, kind := range []string{"fixture", "fixture-hostports", "node"} {
		cfg, ok := servers[kind]
		if !ok {
			continue
		}
		for _, contain := range []bool{false, true} {
			if !contain && len(cfg.HostPorts) > 0 {
				continue
			}
			name := kind + "/uncontained"
			if contain {
				name = kind + "/contained"
			}
			b.Run(name, func(b *testing.B) {
				if contain && launcher.CannotContain() != "" {
					b.Skip(launcher.CannotContain())
				}
				cfg := cfg
				cfg.NoContain = !contain
				for b.Loop() {
					p := NewPool([]config.ServerConfig{cfg}, nil)
					ctx, cancel := context.WithCancel(context.Background())
					done := make(chan struct{})
					go func() { p.Run(ctx); close(done) }()
					p.Wait(ctx)
					if st := p.Status()[0]; st.State != StateReady {
						b.Fatalf("%+v", st)
					}
					b.StopTimer() // the start only: stopping is not what is measured
					cancel()
					<-done
					b.StartTimer()
				}
			})
		}
	}
}

// "network": {"hostPorts": [P]} lets a contained server reach the host's
// 127.0.0.1:P, at 127.0.0.1:P in its own network, and nothing else of
// the host's loopback; with "outbound": false as well, it has no way out
// but them.
func TestContainedHostPorts(t *testing.T) {
	needSandbox(t)
	listen := func(answer string) string {
		_, port, _ := net.SplitHostPort(testenv.LineServer(t, func(got string) string { return answer + " to " + got }))
		return port
	}
	granted := listen("the granted service answers")
	other := listen("another local service answers")
	port, _ := strconv.Atoi(granted)
	out := contained("out", "hostile", nil)
	out.HostPorts = []int{port}
	closed := contained("closed", "hostile", nil)
	closed.HostPorts, closed.NoNetwork = []int{port}, true
	p := startPool(t, []config.ServerConfig{out, closed}, nil)
	for _, st := range p.Status() {
		if st.State != StateReady {
			t.Fatalf("%s: %+v", st.Name, st)
		}
	}
	hostile := func(server, tool, args string) string {
		res, err := p.Scope(nil).Call(context.Background(), "mcp__"+server+"__"+tool, json.RawMessage(args))
		if err != nil {
			t.Fatal(err)
		}
		return textOf(t, res)
	}
	for _, server := range []string{"out", "closed"} {
		if got := hostile(server, "connect", `{"address":"127.0.0.1:`+granted+`","line":"hello"}`); !strings.Contains(got, "the granted service answers to hello") {
			t.Errorf("%s: the granted port: %s", server, got)
		}
		if got := hostile(server, "connect", `{"address":"127.0.0.1:`+other+`","line":"hello"}`); !strings.HasPrefix(got, "refused") {
			t.Errorf("%s: a port not granted: %s", server, got)
		}
		if got := hostile(server, "connect", `{"address":"10.0.2.2:`+other+`","line":"hello"}`); !strings.HasPrefix(got, "refused") {
			t.Errorf("%s: a port not granted, through 10.0.2.2: %s", server, got)
		}
	}
	if got := hostile("closed", "read", `{"path":"/proc/net/dev"}`); strings.Contains(got, "tap0") {
		t.Errorf(`with "outbound": false, a way out:\n%.400s`, got)
	}
	if got := hostile("out", "read", `{"path":"/proc/net/dev"}`); launcher.OwnNetworks() && !strings.Contains(got, "tap0") {
		t.Errorf("with a way out, none:\n%.400s", got)
	}
}

// TestOwnFoldersCoveredNotTheirParent: toolshelf's own folders, placed by
// the command's environment beside a contained server's program and not
// made yet, are made (private) and covered themselves: covering the
// nearest folder that exists instead covered the program, and the server
// never started.
func TestOwnFoldersCoveredNotTheirParent(t *testing.T) {
	needSandbox(t)
	cfg := contained("beside", "serve", []string{"echo"})
	beside := filepath.Join(filepath.Dir(cfg.Command), "own-"+strconv.Itoa(os.Getpid()))
	t.Cleanup(func() { os.RemoveAll(beside) })
	vars := map[string]string{"HOME": os.Getenv("HOME"), "XDG_CONFIG_HOME": filepath.Join(beside, "config"),
		"XDG_CACHE_HOME": filepath.Join(beside, "cache"), "XDG_STATE_HOME": filepath.Join(beside, "state")}
	p := startPool(t, []config.ServerConfig{cfg}, &Options{Getenv: func(k string) string { return vars[k] }})
	if st := p.Status()[0]; st.State != StateReady || !st.Contained {
		t.Fatalf("a contained server beside toolshelf's folders: %+v", st)
	}
	for _, k := range []string{"XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME"} {
		fi, err := os.Stat(filepath.Join(vars[k], "toolshelf"))
		if err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
			t.Errorf("%s/toolshelf: %v %v, want a folder of mode 700", k, fi, err)
		}
	}
}
