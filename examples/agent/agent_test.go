package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolshelf/toolshelf/internal/testenv"
	"github.com/toolshelf/toolshelf/learn"
	"github.com/toolshelf/toolshelf/messages"
	"github.com/toolshelf/toolshelf/sandbox"
)

// memoryConfig writes a configuration with the real server-memory.
func TestMain(m *testing.M) {
	sandbox.Main()
	os.Exit(m.Run())
}

func memoryConfig(t *testing.T) string {
	t.Helper()
	testenv.RequireNPM(t, "testdata/servers")
	servers, _ := filepath.Abs("../../testdata/servers")
	memory := testenv.WritableDir(t)
	cfg := map[string]any{"mcpServers": map[string]any{
		"memory": map[string]any{
			"command": "node", "args": []string{"node_modules/@modelcontextprotocol/server-memory/dist/index.js"},
			"cwd": servers, "env": map[string]string{"MEMORY_FILE_PATH": filepath.Join(memory, "memory.jsonl")},
			"paths": map[string]any{"write": []string{memory}},
		},
		"filesystem": map[string]any{
			"command": "node", "args": []string{"node_modules/@modelcontextprotocol/server-filesystem/dist/index.js", "."},
			"cwd": servers,
		},
	}}
	b, _ := json.Marshal(cfg)
	path := filepath.Join(t.TempDir(), "servers.json")
	os.WriteFile(path, b, 0o644)
	return path
}

func runAgent(t *testing.T, api *fakeAPI, env map[string]string, args ...string) (string, string, int) {
	t.Helper()
	env["ANTHROPIC_BASE_URL"] = api.srv.URL
	env["ANTHROPIC_API_KEY"] = "sk-test"
	if env["TOOLSHELF_LEARNED"] == "" {
		env["TOOLSHELF_LEARNED"] = filepath.Join(t.TempDir(), "learned.db")
	}
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), args, &stdout, &stderr, func(k string) string { return env[k] })
	return stdout.String(), stderr.String(), code
}

func mustSend(t *testing.T, req messages.Request, name string, visible map[string]bool) {
	t.Helper()
	for _, tool := range req.Tools {
		if tool.Name == name {
			if !visible[name] {
				t.Errorf("%s is sent but the model cannot see it", name)
			}
			return
		}
	}
	t.Errorf("%s is not sent", name)
}

// The scripted model searches, calls the tool it found, lives through a
// compaction (after which the tool it discovered must still be there),
// calls a tool it never loaded (and gets the hint to load it), loads it
// with select:, calls it, and reads back what the real server stored.
func TestAgentAcrossCompaction(t *testing.T) {
	const create, open = "mcp__memory__create_entities", "mcp__memory__open_nodes"
	api := newFakeAPI(t,
		func(t *testing.T, req messages.Request, visible map[string]bool) ([]messages.Block, string, int) {
			if visible[create] || visible[open] {
				t.Error("deferred tools are visible before any search")
			}
			if !visible[messages.DefaultSearchTool] {
				t.Fatal("no search tool")
			}
			last := req.Messages[len(req.Messages)-1].Content[0].String("text")
			if !strings.HasPrefix(last, "<deferred-tools-delta>") || !strings.Contains(last, open) {
				t.Errorf("the deferred tools were not announced: %q", last)
			}
			return []messages.Block{toolUse("t1", messages.DefaultSearchTool, map[string]any{"query": "create entities in the knowledge graph", "limit": 1})}, "tool_use", 1200
		},
		func(t *testing.T, req messages.Request, visible map[string]bool) ([]messages.Block, string, int) {
			mustSend(t, req, create, visible)
			return []messages.Block{toolUse("t2", create, map[string]any{"entities": []map[string]any{
				{"name": "toolshelf", "entityType": "project", "observations": []string{"defers tool definitions"}}}})}, "tool_use", 150_000
		},
		// The prompt is past --compact-at: the agent asks for a summary.
		func(t *testing.T, req messages.Request, visible map[string]bool) ([]messages.Block, string, int) {
			if len(req.Tools) != 0 {
				t.Error("the summary request has tools")
			}
			last := req.Messages[len(req.Messages)-1]
			if !strings.HasPrefix(last.Content[0].String("text"), "Summarize the conversation") {
				t.Errorf("not a summary request: %+v", last)
			}
			return []messages.Block{messages.TextBlock("Created the entity toolshelf with create_entities.")}, "end_turn", 150_000
		},
		func(t *testing.T, req messages.Request, visible map[string]bool) ([]messages.Block, string, int) {
			if !strings.Contains(req.Messages[0].Content[0].String("text"), "Created the entity toolshelf") {
				t.Errorf("the history does not start with the summary: %+v", req.Messages[0])
			}
			// The tool discovered before compaction is still callable.
			mustSend(t, req, create, visible)
			return []messages.Block{toolUse("t3", create, map[string]any{"entities": []map[string]any{
				{"name": "compaction", "entityType": "event", "observations": []string{"kept the discovered tools"}}}})}, "tool_use", 2000
		},
		// A call to a tool the model never loaded.
		func(t *testing.T, req messages.Request, visible map[string]bool) ([]messages.Block, string, int) {
			return []messages.Block{toolUse("t4", open, map[string]any{"names": []string{"toolshelf"}})}, "tool_use", 2000
		},
		func(t *testing.T, req messages.Request, visible map[string]bool) ([]messages.Block, string, int) {
			res := lastResults(req)
			if len(res) != 1 || string(res[0].Raw("is_error")) != "true" || !strings.Contains(resultText(res[0]), `select:`+open) {
				t.Errorf("no schema hint for the undiscovered tool: %s", resultText(res[0]))
			}
			return []messages.Block{toolUse("t5", messages.DefaultSearchTool, map[string]string{"query": "select:" + open})}, "tool_use", 2000
		},
		func(t *testing.T, req messages.Request, visible map[string]bool) ([]messages.Block, string, int) {
			mustSend(t, req, open, visible)
			return []messages.Block{toolUse("t6", open, map[string]any{"names": []string{"toolshelf", "compaction"}})}, "tool_use", 2000
		},
		func(t *testing.T, req messages.Request, visible map[string]bool) ([]messages.Block, string, int) {
			res := lastResults(req)
			return []messages.Block{messages.TextBlock("Read back: " + resultText(res[0]))}, "end_turn", 2000
		},
	)
	learned := filepath.Join(t.TempDir(), "learned.db")
	out, stderr, code := runAgent(t, api, map[string]string{"ENABLE_TOOL_SEARCH": "true", "TOOLSHELF_LEARNED": learned},
		"--config", memoryConfig(t), "--compact-at", "100000", "Remember the toolshelf project, then read it back.")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	for _, want := range []string{"Read back:", "defers tool definitions", "kept the discovered tools"} {
		if !strings.Contains(out, want) {
			t.Errorf("answer lacks %q: %s", want, out)
		}
	}
	if api.next != 8 {
		t.Errorf("%d of 8 turns used", api.next)
	}
	// The search that led to a call was learned, before the compaction
	// summarised it away.
	pairs, err := learn.Open(learned, nil).Pairs()
	if err != nil || len(pairs) != 1 || pairs[0].Query != "create entities in the knowledge graph" || pairs[0].Tool != create {
		t.Errorf("learned from use: %+v, %v", pairs, err)
	}
	// Every request but the summary deferred the 23 other tools: far
	// fewer definitions than the 23 the servers have.
	if n := len(api.bodies[0].Tools); n != 1 {
		t.Errorf("first request sent %d tools, want only the search tool", n)
	}
}

// With a model that cannot take tool_reference blocks, nothing is
// deferred: every tool is sent and there is no search tool.
func TestAgentSearchOff(t *testing.T) {
	api := newFakeAPI(t,
		func(t *testing.T, req messages.Request, visible map[string]bool) ([]messages.Block, string, int) {
			if visible[messages.DefaultSearchTool] || !visible["mcp__memory__read_graph"] || len(req.Tools) != 23 {
				t.Errorf("search off: %d tools, search tool %v", len(req.Tools), visible[messages.DefaultSearchTool])
			}
			return []messages.Block{toolUse("t1", "mcp__memory__read_graph", map[string]any{})}, "tool_use", 100
		},
		func(t *testing.T, req messages.Request, visible map[string]bool) ([]messages.Block, string, int) {
			return []messages.Block{messages.TextBlock("graph: " + resultText(lastResults(req)[0]))}, "end_turn", 100
		},
	)
	out, stderr, code := runAgent(t, api, map[string]string{"ENABLE_TOOL_SEARCH": "true"},
		"--config", memoryConfig(t), "--model", "claude-haiku-4-5", "Read the graph.")
	if code != 0 || !strings.Contains(out, `graph: {`) {
		t.Fatalf("exit %d: %s\n%s", code, out, stderr)
	}
	if !strings.Contains(stderr, "model_unsupported") {
		t.Errorf("the decision was not logged:\n%s", stderr)
	}
}

func TestAgentLearns(t *testing.T) {
	for _, args := range [][]string{{}, {"--config", "x.json"}, {"--config", "x.json", "--announce", "loud", "task"}} {
		var stdout, stderr bytes.Buffer
		if code := run(context.Background(), args, &stdout, &stderr, func(string) string { return "" }); code != 2 {
			t.Errorf("%v: exit %d", args, code)
		}
	}
}

// With --code the model gets run_code beside the search tool, and a
// program that calls two of server-memory's tools answers with only what
// it returned.
func TestAgentRunsCode(t *testing.T) {
	const program = `await tools.memory.create_entities({entities: [{name: "toolshelf", entityType: "project", observations: ["defers tools", "runs code"]}]});
		const g = await tools.memory.read_graph();
		return g.entities.map(e => e.name + ":" + e.observations.length).join(",")`
	api := newFakeAPI(t,
		func(t *testing.T, req messages.Request, visible map[string]bool) ([]messages.Block, string, int) {
			if !visible["run_code"] {
				t.Error("run_code is not offered")
			}
			return []messages.Block{toolUse("t1", "run_code", map[string]any{"code": program})}, "tool_use", 100
		},
		func(t *testing.T, req messages.Request, visible map[string]bool) ([]messages.Block, string, int) {
			return []messages.Block{messages.TextBlock("program: " + resultText(lastResults(req)[0]))}, "end_turn", 100
		},
	)
	out, stderr, code := runAgent(t, api, map[string]string{}, "--config", memoryConfig(t), "--code", "Note toolshelf and list the graph.")
	if code != 0 || strings.TrimSpace(out) != "program: result: toolshelf:2" {
		t.Fatalf("exit %d: %q\n%s", code, out, stderr)
	}
}

// The configuration's rules on calls hold for the agent's calls as for
// the gateway's: a rule that forbids reading the graph from the library
// refuses the model's call, and the model reads the rule's message.
func TestAgentObeysRules(t *testing.T) {
	path := memoryConfig(t)
	var cfg map[string]any
	b, _ := os.ReadFile(path)
	json.Unmarshal(b, &cfg)
	rules := filepath.Join(filepath.Dir(path), "team.cedar")
	os.WriteFile(rules, []byte(`@message("the agent may not read the whole graph")
forbid (principal, action, resource) when { resource.name == "read_graph" && context.via == "library" };`), 0o644)
	cfg["policies"] = []string{rules}
	b, _ = json.Marshal(cfg)
	os.WriteFile(path, b, 0o644)
	api := newFakeAPI(t,
		func(t *testing.T, req messages.Request, visible map[string]bool) ([]messages.Block, string, int) {
			return []messages.Block{toolUse("t1", "mcp__memory__read_graph", map[string]any{})}, "tool_use", 100
		},
		func(t *testing.T, req messages.Request, visible map[string]bool) ([]messages.Block, string, int) {
			return []messages.Block{messages.TextBlock("result: " + resultText(lastResults(req)[0]))}, "end_turn", 100
		},
	)
	out, stderr, code := runAgent(t, api, map[string]string{"ENABLE_TOOL_SEARCH": "true"},
		"--config", path, "--model", "claude-haiku-4-5", "Read the graph.")
	if code != 0 || !strings.Contains(out, "forbidden by a rule "+rules+":1: the agent may not read the whole graph") {
		t.Fatalf("exit %d: %s\n%s", code, out, stderr)
	}
}
