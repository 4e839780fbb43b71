package e2e

import (
	"context"
	"encoding/json"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolshelf/toolshelf/internal/testenv"
)

// TestContainedServerReachesItsGrantedPort: the pinned PostgreSQL MCP
// server, contained, queries a real PostgreSQL on the host's loopback
// through its one granted port ("network": {"hostPorts": [PORT]}); the
// same server without the grant cannot reach it.
func TestContainedServerReachesItsGrantedPort(t *testing.T) {
	needBwrap(t)
	testenv.RequireNPM(t, "testdata/servers")
	db := testenv.Postgres(t)
	u, err := url.Parse(db)
	if err != nil {
		t.Fatal(err)
	}
	servers, _ := filepath.Abs("../testdata/servers")
	server := func(network any) map[string]any {
		s := map[string]any{"command": "node", "cwd": servers, "timeout": testenv.Timeout(30 * time.Second).String(),
			"args": []string{"node_modules/@modelcontextprotocol/server-postgres/dist/index.js", db}}
		if network != nil {
			s["network"] = network
		}
		return s
	}
	p, err := strconv.Atoi(u.Port())
	if err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(t.TempDir(), "servers.json")
	b, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{
		"granted": server(map[string]any{"hostPorts": []int{p}}),
		"closed":  server(nil),
	}})
	os.WriteFile(cfg, b, 0o644)
	ctx, cancel := context.WithTimeout(context.Background(), testenv.Timeout(2*time.Minute))
	defer cancel()
	cmd := exec.Command(toolshelf, "serve", "--config", cfg)
	cmd.Env = append(os.Environ(), "XDG_CACHE_HOME="+t.TempDir(), "XDG_STATE_HOME="+t.TempDir())
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "ports", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	query := func(server string) string {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "call_tool", Arguments: map[string]any{
			"name": "mcp__" + server + "__query", "arguments": map[string]any{"sql": "SELECT 6 * 7 AS answer"}}})
		if err != nil {
			t.Fatal(err)
		}
		var out strings.Builder
		for _, c := range res.Content {
			if tc, ok := c.(*mcp.TextContent); ok {
				out.WriteString(tc.Text)
			}
		}
		return out.String()
	}
	if got := query("granted"); !strings.Contains(got, `"answer": 42`) && !strings.Contains(got, `"answer":42`) {
		t.Errorf("through its granted port: %.500s", got)
	}
	if got := query("closed"); strings.Contains(got, `"answer"`) {
		t.Errorf("without the grant, the server reached PostgreSQL on the host's loopback: %.500s", got)
	}
}
