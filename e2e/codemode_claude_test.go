package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolshelf/toolshelf/internal/testenv"
	"github.com/toolshelf/toolshelf/messages"
)

// codeProgram is what the scripted model writes: two tools of
// server-memory, composed; only its last line returns.
const codeProgram = `await tools.memory.create_entities({entities: [
  {name: "toolshelf", entityType: "project", observations: ["defers tool definitions", "runs code"]},
  {name: "goja", entityType: "library", observations: ["a JavaScript engine in Go"]}]});
const g = await tools.memory.read_graph();
return "projects: " + g.entities.filter(e => e.entityType === "project").map(e => e.name + " (" + e.observations.length + " notes)").join(", ");`

// Claude Code (pinned in testdata/clients) with the gateway in code mode
// as its MCP server and a scripted model behind ANTHROPIC_BASE_URL: the
// model searches, then calls run_code with a program that calls two
// tools; the program's answer, and nothing of the intermediate graph,
// comes back to the model, whose last words carry it to the transcript.
func TestClaudeCodeRunsCode(t *testing.T) {
	t.Parallel()
	requireClients(t)
	var mu sync.Mutex
	var results []string // tool results the model saw, in order
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req messages.Request
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || r.URL.Path != "/v1/messages" {
			http.Error(w, "not a messages request", 400)
			return
		}
		if len(req.Tools) == 0 {
			// Claude Code's side requests (a title, a summary) carry no
			// tools: a plain answer.
			answer(w, req, `{"type":"text","text":"ok"}`, "end_turn")
			return
		}
		// Claude Code may send several results in the last message:
		// each is kept by the call it answers.
		seen := map[string]string{}
		for _, b := range req.Messages[len(req.Messages)-1].Content {
			if b.Type != "tool_result" {
				continue
			}
			var text string
			if blocks, ok := b.Results(); ok {
				for _, c := range blocks {
					text += c.String("text")
				}
			} else {
				text = b.String("content")
			}
			seen[b.String("tool_use_id")] = text
		}
		got, coded := seen["toolu_code"]
		_, searched := seen["toolu_search"]
		mu.Lock()
		if coded {
			results = append(results, seen["toolu_search"], got)
		}
		mu.Unlock()
		var content string
		stop := "tool_use"
		switch {
		case coded:
			text, _ := json.Marshal("The program answered: " + strings.TrimSpace(got))
			content, stop = `{"type":"text","text":`+string(text)+`}`, "end_turn"
		case searched:
			in, _ := json.Marshal(map[string]string{"code": codeProgram})
			content = `{"type":"tool_use","id":"toolu_code","name":"mcp__toolshelf__run_code","input":` + string(in) + `}`
		default:
			content = `{"type":"tool_use","id":"toolu_search","name":"mcp__toolshelf__search_tools","input":{"query":"create entities in the knowledge graph and read it"}}`
		}
		answer(w, req, content, stop)
	}))
	defer api.Close()

	gateway := gatewayCommand(t, "--code")
	cfg := filepath.Join(t.TempDir(), "mcp.json")
	b, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"toolshelf": map[string]any{"command": gateway}}})
	os.WriteFile(cfg, b, 0o644)
	bin, _ := filepath.Abs(filepath.Join(clientsDir, "node_modules", ".bin", "claude"))
	ctx, cancel := context.WithTimeout(context.Background(), testenv.Timeout(3*time.Minute))
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "-p", "Note toolshelf and goja in the knowledge graph, then tell me which projects it holds.",
		"--mcp-config", cfg, "--strict-mcp-config", "--allowedTools", "mcp__toolshelf__search_tools,mcp__toolshelf__run_code")
	cmd.Dir = t.TempDir()
	cmd.Env = []string{
		"HOME=" + t.TempDir(), "PATH=" + os.Getenv("PATH"),
		"ANTHROPIC_API_KEY=sk-ant-test-key", "ANTHROPIC_BASE_URL=" + api.URL,
		"DISABLE_TELEMETRY=1", "DISABLE_ERROR_REPORTING=1", "DISABLE_AUTOUPDATER=1",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "ENABLE_TOOL_SEARCH=false",
	}
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("Claude Code timed out\n%s", out)
	}
	const want = "projects: toolshelf (2 notes)"
	if err != nil || !strings.Contains(string(out), "The program answered: result: "+want) {
		mu.Lock()
		defer mu.Unlock()
		t.Fatalf("Claude Code: %v\n%s\nthe model saw: %q", err, out, results)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(results) != 2 || !strings.Contains(results[0], "tools.memory.create_entities(args: {") {
		t.Fatalf("the model saw %q, want the search's declarations, then the program's answer", results)
	}
	if results[1] != fmt.Sprintf("result: %s\n", want) {
		t.Errorf("the program's result as the model saw it: %q (the graph itself must not come back)", results[1])
	}
}
