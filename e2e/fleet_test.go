package e2e

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolshelf/toolshelf/internal/mcptest"
	"github.com/toolshelf/toolshelf/internal/testenv"
)

// Two replicas of serve --http on one PostgreSQL store (a real one from
// the Debian package): what clients teach one replica — two sessions that
// searched and called the tool ranked second — ranks that tool first on
// the other replica, without a restart. Each replica has a state folder
// of its own: only the store connects them.
func TestLearnedAcrossReplicas(t *testing.T) {
	t.Parallel()
	url := testenv.Postgres(t)
	// A password the store does not need (trust on loopback), as a
	// deployment's URL has one.
	storeURL := strings.Replace(url, "postgres@", "postgres:store-password-0123456789@", 1)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cfg := filepath.Join(dir, "servers.json")
	b, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"notes": map[string]any{
		"command": exe, "timeout": testenv.Timeout(20 * time.Second).String(),
		"env": map[string]string{mcptest.ModeEnv: "serve", mcptest.ToolsEnv: "append_entry,list_entries,archive_book"},
	}}})
	if err := os.WriteFile(cfg, b, 0o644); err != nil {
		t.Fatal(err)
	}
	replica := func() string {
		return runHTTPScript(t, testenv.ServeScript(t, toolshelf, map[string]string{"TOOLSHELF_STORE": storeURL}, cfg, "--http", "127.0.0.1:0"))
	}
	a, other := replica(), replica()

	ctx, cancel := context.WithTimeout(context.Background(), testenv.Timeout(time.Minute))
	defer cancel()
	session := func(url string) *mcp.ClientSession {
		t.Helper()
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "fleet-test", Version: "1"}, nil).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return cs
	}
	search := func(cs *mcp.ClientSession, query string) []string {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "search_tools", Arguments: map[string]any{"query": query}})
		if err != nil || res.IsError {
			t.Fatalf("search: %v %s", err, text(res))
		}
		var out struct{ Matches []struct{ Name string } }
		json.Unmarshal([]byte(text(res)), &out)
		var names []string
		for _, m := range out.Matches {
			names = append(names, m.Name)
		}
		return names
	}
	const query = "keep an entry for later"
	var taught string
	for range 2 {
		cs := session(a)
		found := search(cs, query)
		if len(found) < 2 {
			t.Fatalf("search found %v", found)
		}
		taught = found[1]
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "call_tool", Arguments: map[string]any{"name": taught, "arguments": map[string]any{"text": "x"}}})
		if err != nil || res.IsError {
			t.Fatalf("call: %v", err)
		}
		cs.Close()
	}
	cs := session(other)
	defer cs.Close()
	testenv.Eventually(t, 10*time.Second, "the other replica to rank the taught tool first", func() bool {
		found := search(cs, "please "+query)
		return len(found) > 0 && found[0] == taught
	})
}
