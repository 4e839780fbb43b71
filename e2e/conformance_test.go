package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolshelf/toolshelf/config"
	"github.com/toolshelf/toolshelf/internal/mcptest"
	"github.com/toolshelf/toolshelf/internal/testenv"
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
		"command": cmd, "env": env, "prefix": false, "timeout": testenv.Timeout(config.DefaultTimeout).String(),
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
			script := gatewayScript(t, testenv.ScaledConfig(t, src, config.DefaultTimeout))
			target := script
			if mode == "http" {
				target = runHTTPScript(t, gatewayScript(t, testenv.ScaledConfig(t, src, config.DefaultTimeout), "--http", "127.0.0.1:0"))
			}
			out, err := node(t, "node", "everything-client.mjs", mode, target)
			if err != nil || !strings.Contains(out, `"ok":true`) {
				t.Fatalf("%v\n%s", err, out)
			}
		})
	}
}

// clientScenarioLine is how the suite ends a client scenario's report.
var clientScenarioLine = regexp.MustCompile(`(?m)^(✅|❌) OVERALL: (PASSED|FAILED)`)

// TestConformanceClient runs the conformance suite's client scenarios
// (the base ones and every auth/* one) against 'toolshelf auth login
// --url', the command docs/conformance.md names, with a headless browser
// that follows the authorization URL back to toolshelf's listener. Each
// scenario passes, or testdata/clients/conformance-client.yml lists it
// with the reason.
func TestConformanceClient(t *testing.T) {
	t.Parallel() // waits on processes of its own
	requireClients(t)
	scenarios := []string{"initialize", "tools_call", "elicitation-sep1034-client-defaults", "sse-retry",
		"auth/metadata-default", "auth/metadata-var1", "auth/metadata-var2", "auth/metadata-var3", "auth/basic-cimd",
		"auth/scope-from-www-authenticate", "auth/scope-from-scopes-supported", "auth/scope-omitted-when-undefined",
		"auth/scope-step-up", "auth/scope-retry-limit", "auth/token-endpoint-auth-basic", "auth/token-endpoint-auth-post",
		"auth/token-endpoint-auth-none", "auth/pre-registration", "auth/2025-03-26-oauth-metadata-backcompat",
		"auth/2025-03-26-oauth-endpoint-fallback", "auth/resource-mismatch", "auth/offline-access-scope",
		"auth/offline-access-not-supported", "auth/client-credentials-jwt", "auth/client-credentials-basic"}
	expected := readBaseline(t, filepath.Join(clientsDir, "conformance-client.yml"))
	exe, _ := os.Executable()
	dir := t.TempDir()
	browser := filepath.Join(dir, "browser")
	testenv.WriteScript(t, browser, fmt.Sprintf("#!/bin/sh\n%s=browse exec %q \"$@\"\n", mcptest.ModeEnv, exe))
	node22, _ := filepath.Abs(filepath.Join(clientsDir, "node_modules", "node", "bin", "node"))
	var mu sync.Mutex
	var passed []string
	t.Cleanup(func() {
		t.Logf("conformance client scenarios: %d of %d pass; expected failures: %v", len(passed), len(scenarios), expected)
	})
	for _, sc := range scenarios {
		// Each scenario is a subtest of its own, run in parallel with the
		// others up to go test's -parallel: they wait on processes.
		t.Run(sc, func(t *testing.T) {
			t.Parallel()
			// A token file of its own per scenario: each is a new server.
			script := filepath.Join(dir, strings.ReplaceAll(sc, "/", "-")+".sh")
			os.WriteFile(script, []byte(fmt.Sprintf("#!/bin/sh\nexport %s=%q %s=1 BROWSER=%q %s=%q XDG_CACHE_HOME=%q\nexec %q auth login --url \"$@\"\n",
				binEnv, toolshelf, conformanceClientEnv, browser, envTokens, filepath.Join(dir, strings.ReplaceAll(sc, "/", "-")+".json"), filepath.Join(dir, "cache"), exe)), 0o755)
			out, _ := node(t, node22, "node_modules/@modelcontextprotocol/conformance/dist/index.js",
				"client", "--command", script, "--scenario", sc, "-o", t.TempDir())
			m := clientScenarioLine.FindStringSubmatch(out)
			ok := m != nil && m[2] == "PASSED"
			switch {
			case ok && slices.Contains(expected, sc):
				t.Errorf("%s passes but conformance-client.yml lists it: take it off the list", sc)
			case !ok && !slices.Contains(expected, sc):
				t.Errorf("%s failed:\n%s", sc, lastLines(strings.NewReplacer("Passed:", "checks passed:").Replace(out), 30))
			}
			if ok {
				mu.Lock()
				passed = append(passed, sc)
				mu.Unlock()
			}
		})
	}
}
