package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolshelf/toolshelf/internal/mcptest"
	"github.com/toolshelf/toolshelf/internal/testenv"
	"github.com/toolshelf/toolshelf/upstream"
)

// scenarioLine is how the conformance suite reports a scenario:
// "✓ tools-list: 1 passed, 0 failed".
var scenarioLine = regexp.MustCompile(`(?m)^([✓✗]) ([a-z0-9-]+): \d+ passed, \d+ failed`)

// scenarios returns the scenarios the suite reported, passed or not.
func scenarios(out string) (passed, failed []string) {
	for _, m := range scenarioLine.FindAllStringSubmatch(out, -1) {
		if m[1] == "✓" {
			passed = append(passed, m[2])
		} else {
			failed = append(failed, m[2])
		}
	}
	return passed, failed
}

// runConformance runs the suite's active server scenarios against url and
// returns its output. The suite's "Total: N passed, M failed" line is
// renamed so that CI reads go test's own summary.
func runConformance(t *testing.T, url string, extra ...string) (string, error) {
	t.Helper()
	node22, _ := filepath.Abs(filepath.Join(clientsDir, "node_modules", "node", "bin", "node"))
	args := append([]string{"node_modules/@modelcontextprotocol/conformance/dist/index.js",
		"server", "--url", url, "--suite", "active", "-o", t.TempDir()}, extra...)
	out, err := node(t, node22, args...)
	return strings.NewReplacer("Total:", "conformance total:").Replace(out), err
}

// TestConformanceThroughGateway runs the conformance suite's server
// scenarios against a fixture server (internal/mcptest.Fixture) directly,
// then through 'toolshelf serve --mode all' with the fixture as its one
// upstream (over stdio, names kept with "prefix": false). Every scenario
// that passes directly must pass through the gateway, except those
// testdata/clients/conformance-gateway.yml lists with the reason.
func TestConformanceThroughGateway(t *testing.T) {
	t.Parallel() // waits on processes of its own
	requireClients(t)

	fixture := mcptest.Fixture()
	direct := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return fixture }, nil))
	t.Cleanup(direct.Close)
	out, _ := runConformance(t, direct.URL)
	want, _ := scenarios(out)
	if len(want) < 25 {
		t.Fatalf("only %d scenarios pass against the fixture itself:\n%s", len(want), lastLines(out, 40))
	}

	cmd, env := mcptest.Command("fixture", nil)
	cfg, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"fixture": map[string]any{
		"command": cmd, "env": env, "prefix": false, "timeout": testenv.Timeout(upstream.DefaultTimeout).String(),
	}}})
	file := filepath.Join(t.TempDir(), "fixture.json")
	if err := os.WriteFile(file, cfg, 0o644); err != nil {
		t.Fatal(err)
	}
	url := runHTTPScript(t, gatewayScript(t, file, "--http", "127.0.0.1:0", "--mode", "all"))
	out, _ = runConformance(t, url)
	got, failed := scenarios(out)
	expected := readBaseline(t, filepath.Join(clientsDir, "conformance-gateway.yml"))
	for _, s := range want {
		if !slices.Contains(got, s) && !slices.Contains(expected, s) {
			t.Errorf("%s passes against the fixture but not through the gateway", s)
		}
	}
	for _, s := range expected {
		if slices.Contains(got, s) {
			t.Errorf("%s is listed as failing through the gateway but passes: take it off the list", s)
		}
	}
	t.Logf("conformance through the gateway: %d of %d scenarios pass (%d directly); failing: %v", len(got), len(got)+len(failed), len(want), failed)
	if t.Failed() {
		t.Log(lastLines(out, 60))
	}
}

// readBaseline reads the scenario names of an expected-failures file.
func readBaseline(t *testing.T, file string) []string {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, line := range strings.Split(string(data), "\n") {
		if name, ok := strings.CutPrefix(strings.TrimSpace(line), "- "); ok {
			names = append(names, name)
		}
	}
	return names
}

// TestEverythingThroughGateway drives the gateway with the TypeScript SDK
// while server-everything, a real npm server with prompts, resources,
// sampling and progress, stands behind it (testdata/everything.json), over
// stdio and over HTTP.
func TestEverythingThroughGateway(t *testing.T) {
	t.Parallel() // waits on processes of its own
	requireClients(t)
	src, _ := filepath.Abs("testdata/everything.json")
	for _, mode := range []string{"stdio", "http"} {
		t.Run(mode, func(t *testing.T) {
			script := gatewayScript(t, scaledConfig(t, src))
			target := script
			if mode == "http" {
				target = runHTTPScript(t, gatewayScript(t, scaledConfig(t, src), "--http", "127.0.0.1:0"))
			}
			out, err := node(t, "node", "everything-client.mjs", mode, target)
			if err != nil || !strings.Contains(out, `"ok":true`) {
				t.Fatalf("%v\n%s", err, out)
			}
		})
	}
}
