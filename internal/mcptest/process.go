package mcptest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The subprocess server is the test binary itself, run again with
// ModeEnv set. A package's TestMain calls [MaybeServe] first, so that a
// test can start real stdio servers (with real pipes, exits and signals)
// without building anything.

// Environment variables that script the subprocess server.
const (
	ModeEnv   = "MCPTEST_MODE"   // serve (default), raw, traced, hang, exit, leak, functions, detach, daemon, fixture, hostile
	ToolsEnv  = "MCPTEST_TOOLS"  // comma-separated tool names
	PageEnv   = "MCPTEST_PAGE"   // tools/list page size
	BannerEnv = "MCPTEST_BANNER" // lines printed on stdout before serving
	PIDEnv    = "MCPTEST_PIDFILE"
	// DescribeEnv gives one tool another description: "tool=text".
	DescribeEnv = "MCPTEST_DESCRIBE"
	// GrandchildEnv names the file where the detach and daemon modes
	// write the pid of the grandchild they leave behind.
	GrandchildEnv = "MCPTEST_GRANDCHILD_PIDFILE"
)

// Command returns the command and environment that start the subprocess
// server in the given mode with the given tools. extra adds environment
// entries (KEY=VALUE).
func Command(mode string, tools []string, extra ...string) (command string, env map[string]string) {
	exe, err := os.Executable()
	if err != nil {
		panic(err)
	}
	env = map[string]string{ModeEnv: mode, ToolsEnv: strings.Join(tools, ",")}
	for _, kv := range extra {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	return exe, env
}

// MaybeServe runs the subprocess server and exits when ModeEnv is set;
// otherwise it returns at once. Call it first in TestMain.
func MaybeServe() {
	mode, ok := os.LookupEnv(ModeEnv)
	if !ok {
		return
	}
	if f := os.Getenv(PIDEnv); f != "" {
		_ = os.WriteFile(f, []byte(strconv.Itoa(hostPID())), 0o644)
	}
	os.Exit(serve(mode))
}

// hostPID is the process's id as the test sees it: a server in a PID
// namespace of its own has another id inside it, but /proc, which is the
// test's, names the test's.
func hostPID() int {
	if s, err := os.Readlink("/proc/self"); err == nil {
		if pid, err := strconv.Atoi(s); err == nil {
			return pid
		}
	}
	return os.Getpid()
}

func serve(mode string) int {
	var names []string
	if t := os.Getenv(ToolsEnv); t != "" {
		names = strings.Split(t, ",")
	}
	switch mode {
	case "raw":
		return serveRaw()
	case "traced":
		return serveTraced()
	case "exit":
		fmt.Fprintln(os.Stderr, "fatal: API token is not valid")
		return 1
	case "leak":
		// Prints what it was given, as careless servers do, and exits.
		fmt.Fprintf(os.Stderr, "fatal: cannot log in with %s (from %s)\n", os.Getenv("LEAK_TOKEN"), os.Getenv("LEAK_URL"))
		return 1
	case "detach":
		return detach()
	case "daemon":
		// Leaves a daemon behind as a wrapper that autoupdates does
		// (double fork, a session of its own), then serves.
		if code := daemonize(); code != 0 {
			return code
		}
		mode = "serve"
	case "daemonize":
		return daemonize()
	case "browse":
		// A headless browser: follows the URL it is given, with its
		// redirects (a sign-in page that approves at once, back to the
		// client's loopback listener).
		resp, err := http.Get(os.Args[len(os.Args)-1])
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			fmt.Fprintln(os.Stderr, "the sign-in ended with HTTP", resp.StatusCode)
			return 1
		}
		return 0
	case "fixture", "hostile":
		// The conformance fixture (see Fixture) or the hostile server
		// (see Hostile) over stdio.
		srv := Fixture()
		if mode == "hostile" {
			srv = Hostile()
		}
		if err := srv.Run(context.Background(), &mcp.StdioTransport{}); err != nil && !errors.Is(err, mcp.ErrConnectionClosed) {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		return 0
	case "sleep":
		time.Sleep(time.Hour)
		return 0
	case "hang":
		fmt.Fprintln(os.Stderr, "connecting to the backend...")
		_, _ = io.Copy(io.Discard, os.Stdin)
		time.Sleep(time.Hour) // ignores stdin EOF, as some real servers do
		return 0
	case "functions":
		// Prints its tools in the OpenAI functions shape instead of
		// answering JSON-RPC.
		fmt.Print(`{"functions":[`)
		for i, n := range names {
			if i > 0 {
				fmt.Print(",")
			}
			fmt.Printf(`{"name":%q,"description":"Listed in the functions shape: %s","parameters":{"type":"object","properties":{"q":{"type":"string"}}}}`, n, n)
		}
		fmt.Println(`]}`)
		_, _ = io.Copy(io.Discard, os.Stdin)
		time.Sleep(time.Hour)
		return 0
	}
	for _, line := range strings.Split(os.Getenv(BannerEnv), "\n") {
		if line != "" {
			fmt.Println(line)
		}
	}
	page, _ := strconv.Atoi(os.Getenv(PageEnv))
	tools := SimpleTools(names...)
	if tool, text, ok := strings.Cut(os.Getenv(DescribeEnv), "="); ok {
		for i, n := range names {
			if n == tool {
				var m map[string]any
				json.Unmarshal(tools[i], &m)
				m["description"] = text
				tools[i], _ = json.Marshal(m)
			}
		}
	}
	s, err := NewServer("mcptest", tools, &mcp.ServerOptions{PageSize: page, Instructions: "A scripted test server."})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}
