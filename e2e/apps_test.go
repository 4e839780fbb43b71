package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolshelf/toolshelf/internal/mcptest"
	"github.com/toolshelf/toolshelf/internal/testenv"
)

// MCP Apps through the gateway, with a real Apps server built on
// @modelcontextprotocol/ext-apps (testdata/apps): a client of the
// TypeScript SDK finds the tool by search, calls it, and reads its app
// under the URI the gateway gives it, getting the server's own HTML. The
// app is pinned: the server changing its HTML holds the app until a
// person approves it (and tools diff shows it). A profile without the
// server reaches none of its apps.
func TestAppsThroughTheGateway(t *testing.T) {
	t.Parallel() // waits on processes of its own
	requireClients(t)
	testenv.RequireNPM(t, "testdata/apps")
	app, _ := filepath.Abs("testdata/apps/weather-app.mjs")
	if _, err := os.Stat(app); err != nil {
		app, _ = filepath.Abs("../testdata/apps/weather-app.mjs")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "notes-token"), []byte("notes-token-1234"), 0o600)
	config := func(version string) string {
		cfg := map[string]any{
			"mcpServers": map[string]any{
				"weather": map[string]any{"command": "node", "args": []string{app}, "env": map[string]string{"APP_VERSION": version},
					"timeout": testenv.Timeout(20 * time.Second).String(), "contain": false},
				"notes": map[string]any{"command": exe, "contain": false, "timeout": testenv.Timeout(20 * time.Second).String(),
					"env": map[string]string{mcptest.ModeEnv: "serve", mcptest.ToolsEnv: "take_note"}},
			},
			"profiles": map[string]any{"notes": map[string]any{"servers": []string{"notes"}, "tokens": []string{"${file:notes-token}"}}},
		}
		b, _ := json.Marshal(cfg)
		path := filepath.Join(dir, "servers.json")
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	const token = "main-token-1234"
	serve := func(version string) string {
		return runHTTPScript(t, gatewayScript(t, config(version), "--http", "127.0.0.1:0", "--auth-token", token))
	}
	url := serve("1")
	out, err := node(t, "node", "apps-client.mjs", url, token, "node", app)
	if err != nil || !strings.Contains(out, `"ok":true`) {
		t.Fatalf("%v\n%s", err, out)
	}
	// The Inspector CLI reads the app too, under the same URI.
	out, err = node(t, "node", filepath.Join("node_modules", ".bin", "mcp-inspector"), "--cli", "--format", "json", "-q", url,
		"--header", "Authorization: Bearer "+token, "--method", "resources/read", "--uri", "ui://weather/weather/forecast.html")
	if err != nil || !strings.Contains(out, "<h1>Forecast</h1>") || !strings.Contains(out, "text/html;profile=mcp-app") {
		t.Fatalf("the Inspector CLI reading the app: %v\n%s", err, out)
	}

	ctx, cancel := context.WithTimeout(context.Background(), testenv.Timeout(2*time.Minute))
	defer cancel()
	const served = "ui://weather/weather/forecast.html"
	read := func(url, token string) (*mcp.ReadResourceResult, error) {
		t.Helper()
		tr := &mcp.StreamableClientTransport{Endpoint: url}
		if token != "" {
			tr.HTTPClient = &http.Client{Transport: bearer{token}}
		}
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "apps-test", Version: "1"}, nil).Connect(ctx, tr, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer cs.Close()
		return cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: served})
	}

	// Another profile: the app is not there.
	notesURL := strings.TrimSuffix(url, "/mcp") + "/mcp/notes"
	if res, err := read(notesURL, "notes-token-1234"); err == nil {
		t.Errorf("the notes profile read the weather app: %+v", res)
	}

	// The server's app changes; the gateway started again holds it.
	url = serve("2")
	// Until the server has connected, the gateway has no such resource.
	testenv.Eventually(t, 30*time.Second, "the weather server to connect", func() bool {
		_, err = read(url, token)
		return err == nil || !strings.Contains(err.Error(), "not found")
	})
	if err == nil || !strings.Contains(err.Error(), "quarantined") || !strings.Contains(err.Error(), "toolshelf tools approve weather/ui://weather/forecast.html") {
		t.Fatalf("a changed app: %v", err)
	}
	diff, err := exec.Command(toolshelf, "tools", "diff", "--config", filepath.Join(dir, "servers.json")).CombinedOutput()
	if !strings.Contains(string(diff), "weather/ui://weather/forecast.html: changed") || !strings.Contains(string(diff), `data-version=\"2\"`) {
		t.Fatalf("tools diff: %v\n%s", err, diff)
	}
	if out, err := exec.Command(toolshelf, "tools", "approve", "weather/ui://weather/forecast.html", "--config", filepath.Join(dir, "servers.json")).CombinedOutput(); err != nil {
		t.Fatalf("approve: %v\n%s", err, out)
	}
	testenv.Eventually(t, 30*time.Second, "the approved app to be served", func() bool {
		res, err := read(url, token)
		return err == nil && len(res.Contents) == 1 && strings.Contains(res.Contents[0].Text, `data-version="2"`)
	})
}
