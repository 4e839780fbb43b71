package e2e

import (
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolshelf/toolshelf/config"
	"github.com/toolshelf/toolshelf/internal/testenv"
)

// These tests drive the gateway with MCP clients nobody here wrote, pinned
// in testdata/clients: the official TypeScript SDK, the MCP Inspector CLI
// and the MCP conformance suite. The gateway is a real subprocess (this
// test binary, run as toolshelf) in front of real npm servers
// (server-memory and server-filesystem, testdata/clients.json).

const clientsDir = "../testdata/clients"

func requireClients(t testing.TB) {
	t.Helper()
	testenv.RequireNPM(t, "testdata/clients", "testdata/servers")
}

// gatewayCommand writes an executable that runs 'toolshelf serve' with
// the given flags and the test's environment. Clients start it as their
// stdio server; a script is needed because they pass on only a few
// environment variables of their own.
func gatewayCommand(t *testing.T, flags ...string) string {
	t.Helper()
	// The gateway is a process of its own, which reads no test setting:
	// its servers get the scaled start timeout in the file.
	src, _ := filepath.Abs("testdata/clients.json")
	return gatewayScript(t, testenv.ScaledConfig(t, src, config.DefaultTimeout), flags...)
}

// tracedGatewayCommand is gatewayCommand with tracing on, exporting to
// a receiver on loopback: a client's messages then pass through every
// layer that reads them for spans.
func tracedGatewayCommand(t *testing.T, flags ...string) string {
	t.Helper()
	collector := httptest.NewServer(&otlpReceiver{})
	t.Cleanup(collector.Close)
	src, _ := filepath.Abs("testdata/clients.json")
	return testenv.ServeScript(t, toolshelf, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": collector.URL},
		testenv.ScaledConfig(t, src, config.DefaultTimeout), flags...)
}

// gatewayScript is gatewayCommand with a configuration file of its own.
func gatewayScript(t *testing.T, cfg string, flags ...string) string {
	t.Helper()
	return testenv.ServeScript(t, toolshelf, nil, cfg, flags...)
}

// startHTTPGateway runs the gateway over HTTP on a free loopback port and
// returns its /mcp URL.
func startHTTPGateway(t *testing.T, flags ...string) string {
	t.Helper()
	return runHTTPScript(t, gatewayCommand(t, append([]string{"--http", "127.0.0.1:0"}, flags...)...))
}

// runHTTPScript runs a gateway script that serves HTTP and returns its /mcp
// URL.
func runHTTPScript(t *testing.T, script string) string { return testenv.RunHTTPScript(t, script) }

// node runs a Node program from testdata/clients and returns its output.
func node(t testing.TB, node string, args ...string) (string, error) {
	return testenv.Node(t, clientsDir, node, args...)
}

func TestTypeScriptSDKClient(t *testing.T) {
	t.Parallel() // waits on processes of its own
	requireClients(t)
	t.Run("stdio", func(t *testing.T) {
		out, err := node(t, "node", "sdk-client.mjs", "stdio", gatewayCommand(t))
		if err != nil || !strings.Contains(out, `"ok":true`) {
			t.Fatalf("%v\n%s", err, out)
		}
	})
	t.Run("http", func(t *testing.T) {
		url := startHTTPGateway(t)
		out, err := node(t, "node", "sdk-client.mjs", "http", url)
		if err != nil || !strings.Contains(out, `"ok":true`) {
			t.Fatalf("%v\n%s", err, out)
		}
	})
	t.Run("http with tracing", func(t *testing.T) {
		url := runHTTPScript(t, tracedGatewayCommand(t, "--http", "127.0.0.1:0"))
		out, err := node(t, "node", "sdk-client.mjs", "http", url)
		if err != nil || !strings.Contains(out, `"ok":true`) {
			t.Fatalf("%v\n%s", err, out)
		}
	})
	t.Run("http with a token", func(t *testing.T) {
		url := startHTTPGateway(t, "--auth-token", "t0ken")
		if out, err := node(t, "node", "sdk-client.mjs", "http", url); err == nil {
			t.Fatalf("a client without the token got in:\n%s", out)
		}
		out, err := node(t, "node", "sdk-client.mjs", "http", url, "t0ken")
		if err != nil || !strings.Contains(out, `"ok":true`) {
			t.Fatalf("%v\n%s", err, out)
		}
	})
}

func TestInspectorCLI(t *testing.T) {
	t.Parallel() // waits on processes of its own
	requireClients(t)
	inspector := filepath.Join("node_modules", ".bin", "mcp-inspector")
	// With tracing on too: the Inspector sends notifications/initialized
	// without params, which once took a traced gateway down.
	targets := map[string][]string{
		"stdio":              {gatewayCommand(t)},
		"http":               {startHTTPGateway(t)},
		"stdio with tracing": {tracedGatewayCommand(t)},
		"http with tracing":  {runHTTPScript(t, tracedGatewayCommand(t, "--http", "127.0.0.1:0"))},
	}
	for name, target := range targets {
		t.Run(name, func(t *testing.T) {
			run := func(args ...string) string {
				t.Helper()
				out, err := node(t, "node", append(append([]string{inspector, "--cli", "--format", "json", "-q"}, target...), args...)...)
				if err != nil {
					t.Fatalf("inspector %v: %v\n%s", args, err, out)
				}
				return out
			}
			out := run("--method", "tools/list")
			if !strings.Contains(out, `"name":"search_tools"`) || !strings.Contains(out, `"name":"call_tool"`) {
				t.Errorf("tools/list: %s", out)
			}
			out = run("--method", "tools/call", "--tool-name", "search_tools", "--tool-arg", "query=read the contents of a text file")
			if !strings.Contains(out, `mcp__filesystem__read_text_file`) {
				t.Errorf("search_tools: %s", out)
			}
			out = run("--method", "tools/call", "--tool-name", "call_tool", "--tool-args-json",
				`{"name":"mcp__filesystem__read_text_file","arguments":{"path":"package.json"}}`)
			if !strings.Contains(out, "toolshelf-test-servers") {
				t.Errorf("call_tool read_text_file: %s", out)
			}
		})
	}
}

// TestConformance runs the MCP conformance suite against the gateway's
// own search mode over HTTP, stateless and with sessions (--activate,
// which keeps a server per session), with the expected failures of
// testdata/clients/conformance-baseline.yml.
func TestConformance(t *testing.T) {
	t.Parallel() // waits on processes of its own
	requireClients(t)
	base, err := os.ReadFile(filepath.Join(clientsDir, "conformance-baseline.yml"))
	if err != nil {
		t.Fatal(err)
	}
	for name, flags := range map[string][]string{"stateless": {"--stateless"}, "sessions": {"--activate"}} {
		t.Run(name, func(t *testing.T) {
			baseline := filepath.Join(t.TempDir(), "baseline.yml")
			b := string(base)
			if name == "stateless" {
				// No sessions, so no session ID for the multiple-streams
				// scenario to use: by design of the stateless transport.
				b += "  - server-sse-multiple-streams\n"
			}
			os.WriteFile(baseline, []byte(b), 0o644)
			url := startHTTPGateway(t, flags...)
			out, err := runConformance(t, url, "--expected-failures", baseline)
			if err != nil {
				t.Fatalf("conformance suite: %v\n%s", err, lastLines(out, 40))
			}
			if !strings.Contains(out, "✓ tools-list") || !strings.Contains(out, "✓ server-initialize") {
				t.Errorf("core scenarios did not pass:\n%s", lastLines(out, 40))
			}
		})
	}
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
