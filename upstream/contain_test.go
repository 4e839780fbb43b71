package upstream

import (
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/toolshelf/toolshelf/config"
	"github.com/toolshelf/toolshelf/internal/testenv"
)

// needSandbox skips a test where servers cannot be contained, saying why.
func needSandbox(t *testing.T) {
	t.Helper()
	if why := findSandbox().why; why != "" {
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

// TestSandboxPlan: what a server is given, and that toolshelf's own
// files inside a grant are covered.
func TestSandboxPlan(t *testing.T) {
	dir := t.TempDir()
	home := filepath.Join(dir, "home")
	cwd := filepath.Join(dir, "project")
	grant := filepath.Join(dir, "data")
	lock := filepath.Join(grant, "toolshelf.lock")
	for _, d := range []string{home, cwd, grant, filepath.Join(home, ".npm")} {
		os.MkdirAll(d, 0o755)
	}
	os.WriteFile(lock, []byte("{}"), 0o600)
	npx := filepath.Join(dir, "node", "bin", "npx")
	os.MkdirAll(filepath.Dir(npx), 0o755)
	os.WriteFile(npx, []byte("#!/bin/sh\n"), 0o755)
	cache := filepath.Join(dir, "cache", "s")
	cfg := &serverConfig{ServerConfig: config.ServerConfig{Name: "s", Command: "npx", Cwd: cwd, ReadPaths: []string{"../data"}, WritePaths: []string{"out"}, NoNetwork: true}, cacheDir: cache}
	p := planSandbox(cfg, []string{"HOME=" + home, "PATH=" + filepath.Dir(npx)}, []string{lock, filepath.Join(home, ".config", "toolshelf")})
	args := strings.Join(p.args(), " ")
	if strings.Contains(args, " "+filepath.Join(home, ".npm")+" "+filepath.Join(home, ".npm")) {
		t.Errorf("the user's npm cache is given (another server's packages are there):\n%s", args)
	}
	for _, want := range []string{
		"--ro-bind " + filepath.Join(dir, "node") + " ",                              // npx's install prefix
		"--bind " + filepath.Join(cache, ".npm") + " " + filepath.Join(home, ".npm"), // npx's cache, the server's own
		"--ro-bind " + cwd + " ",
		"--ro-bind " + grant + " ",
		"--ro-bind /dev/null " + lock, // inside a grant: covered
		"--unshare-net",
		"--chdir " + cwd,
		"--tmpfs " + home,
	} {
		if !strings.Contains(args, want) {
			t.Errorf("no %q in\n%s", want, args)
		}
	}
	if !slices.Contains(p.missing, filepath.Join(cwd, "out")) {
		t.Errorf("a missing grant is not reported: %v", p.missing)
	}
	if hidden := filepath.Join(home, ".config", "toolshelf"); strings.Contains(args, hidden) {
		t.Errorf("a hidden path outside every grant is mounted: %s", args)
	}
	// A write grant holding toolshelf's files is refused, not covered:
	// the server could plant a link where toolshelf writes later.
	cfg = &serverConfig{ServerConfig: config.ServerConfig{Name: "s", Command: "/bin/sh", Cwd: cwd, WritePaths: []string{dir}}}
	if p := planSandbox(cfg, []string{"HOME=" + home}, []string{lock, filepath.Join(grant, "audit.jsonl")}); len(p.heldInWrite) != 2 || p.heldInWrite[0] != [2]string{dir, lock} {
		t.Errorf("a write grant holding toolshelf's files: %v", p.heldInWrite)
	}
	// The home folder as cwd is not given whole.
	cfg = &serverConfig{ServerConfig: config.ServerConfig{Name: "s", Command: "/bin/sh", Cwd: home}}
	if p := planSandbox(cfg, []string{"HOME=" + home}, nil); !p.cwdSkipped || slices.Contains(p.read, home) {
		t.Errorf("home as cwd: %+v", p)
	}
	// The configuration's folder, a cwd by default, is not given: only
	// the script an argument names.
	os.WriteFile(filepath.Join(cwd, "server.js"), []byte("//"), 0o644)
	os.WriteFile(filepath.Join(cwd, "package.json"), []byte("{}"), 0o644)
	cfg = &serverConfig{ServerConfig: config.ServerConfig{Name: "s", Command: "/bin/sh", Args: []string{"server.js"}, Cwd: cwd, CwdDefault: true}}
	if p := planSandbox(cfg, []string{"HOME=" + home}, nil); slices.Contains(p.read, cwd) || !slices.Contains(p.read, filepath.Join(cwd, "server.js")) || !p.cwdEmpty {
		t.Errorf("the configuration's folder as cwd by default: %+v", p)
	}
	// A version manager's shim brings the manager's root (read-only).
	shim := filepath.Join(dir, "mgr", "shims", "python3")
	os.MkdirAll(filepath.Dir(shim), 0o755)
	os.WriteFile(shim, []byte("#!/bin/sh\n"), 0o755)
	cfg = &serverConfig{ServerConfig: config.ServerConfig{Name: "s", Command: "python3", Cwd: cwd}}
	if p := planSandbox(cfg, []string{"HOME=" + home, "PATH=" + filepath.Dir(shim)}, nil); !slices.Contains(p.read, filepath.Join(dir, "mgr")) {
		t.Errorf("a shim's manager root is not given: %v", p.read)
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
	ownNet := findSandbox().slirp != ""
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
		addrs, err := hostAddresses()
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
				if contain && findSandbox().why != "" {
					b.Skip(findSandbox().why)
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

// What a failed npx server said is npm's error, not its notices or its
// complaints about its log folder.
func TestStderrSaid(t *testing.T) {
	b := newTailBuffer(16 << 10)
	b.Write([]byte(`npm notice
npm notice New minor version of npm available! 11.19.1 -> 11.21.2
npm error code E404
npm error 404 Not Found - GET https://registry.npmjs.org/@modelcontextprotocol%2fserver-memroy - Not found
npm error 404  '@modelcontextprotocol/server-memroy@*' is not in this registry.
npm error Log files were not written due to an error writing to the directory: /root/.npm/_logs
npm error You can rerun the command with ` + "`--loglevel=verbose`" + ` to see the logs in your terminal
npm notice To update run: npm install -g npm@11.21.2
`))
	got := b.Said(512)
	if !strings.Contains(got, "404 Not Found") || !strings.Contains(got, "is not in this registry") || strings.Contains(got, "notice") || strings.Contains(got, "Log files") {
		t.Errorf("said: %q", got)
	}
}

// Before a contained server runs, a person is told what would fail it:
// a path its environment names that it is not given (a file it writes
// there is lost), and a write grant that nobody (as which it runs under a
// root toolshelf) cannot write; a write grant not made yet is made.
func TestSandboxHints(t *testing.T) {
	dir := t.TempDir()
	granted := filepath.Join(dir, "granted")
	closed := filepath.Join(dir, "closed")
	os.MkdirAll(granted, 0o777)
	os.Chmod(granted, 0o777)
	os.MkdirAll(closed, 0o755)
	made := filepath.Join(dir, "made", "here")
	cfg := &serverConfig{ServerConfig: config.ServerConfig{Name: "memory", Command: "/bin/sh", Cwd: dir,
		Env:        map[string]string{"MEMORY_FILE_PATH": "/tmp/lost/memory.jsonl", "DATA_DIR": granted + "/graph.jsonl", "MODE": "fast"},
		WritePaths: []string{granted, closed, made}}}
	madeGrants(cfg, false, nil)
	if !isDir(made) {
		t.Errorf("a write grant not made yet was not made: %s", made)
	}
	hints := strings.Join(planSandbox(cfg, []string{"HOME=" + dir + "/home"}, nil).hints(cfg, true), "\n")
	for _, want := range []string{
		`its env MEMORY_FILE_PATH names /tmp/lost/memory.jsonl, which the contained server does not see`,
		`add "/tmp/lost" to its "paths": {"write"}`,
		closed + `" in "paths": {"write"} is not writable by nobody`,
		"chown 65534:65534 " + closed,
	} {
		if !strings.Contains(hints, want) {
			t.Errorf("no %q in the hints:\n%s", want, hints)
		}
	}
	if strings.Contains(hints, "DATA_DIR") || strings.Contains(hints, "MODE") || strings.Contains(hints, granted+`" in`) {
		t.Errorf("a hint about what is fine:\n%s", hints)
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
	if got := hostile("out", "read", `{"path":"/proc/net/dev"}`); findSandbox().slirp != "" && !strings.Contains(got, "tap0") {
		t.Errorf("with a way out, none:\n%.400s", got)
	}
}
