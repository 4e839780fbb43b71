package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolshelf/toolshelf/config"
	"github.com/toolshelf/toolshelf/internal/testenv"
)

// serve --audit writes one line per search and per call (with the rank a
// called tool had in the session's search), and audit summary and tail
// read them.
func TestServeAudit(t *testing.T) {
	t.Parallel()
	vars := ownFolders(t)
	testenv.RequireNPM(t, "testdata/servers")
	file := filepath.Join(t.TempDir(), "audit.jsonl")
	s := startServeWith(t, vars, "--config", realServersConfig(t, "memory"), "--audit", file)
	s.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"auditor","version":"7"}}}`)
	s.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	s.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"search_tools","arguments":{"query":"read the knowledge graph"}}}`)
	s.send(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"call_tool","arguments":{"name":"mcp__memory__read_graph"}}}`)
	s.send(`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"call_tool","arguments":{"name":"mcp__memory__nope"}}}`)
	s.hangUp()
	select {
	case code := <-s.done:
		s.done <- code
	case <-time.After(testenv.Timeout(config.DefaultTimeout)):
		t.Fatal("serve did not return")
	}

	r := runCLIWith(t, vars, "audit", "summary", "--json", file)
	var sum auditSummary
	if err := json.Unmarshal([]byte(r.stdout), &sum); err != nil || r.code != 0 {
		t.Fatalf("audit summary: %v %s %s", err, r.stdout, r.stderr)
	}
	if sum.Records != 3 || sum.Searches != 1 || sum.Calls != 2 || len(sum.Tools) != 2 {
		t.Errorf("summary: %+v", sum)
	}
	for _, tool := range sum.Tools {
		if tool.Tool == "mcp__memory__read_graph" && (tool.Server != "memory" || tool.Errors != 0) ||
			tool.Tool == "mcp__memory__nope" && tool.Errors != 1 {
			t.Errorf("tool: %+v", tool)
		}
	}
	// The search ranked read_graph first, and the session called it.
	if len(sum.Quality) != 1 || sum.Quality[0].Server != "memory" || sum.Quality[0].Ranked != 1 || sum.Quality[0].RecallAt1 != 1 {
		t.Errorf("search quality: %+v", sum.Quality)
	}
	if r := runCLIWith(t, vars, "audit", "summary", file); !strings.Contains(r.stdout, "RECALL@1") || !strings.Contains(r.stdout, "100%") {
		t.Errorf("audit summary: %s", r.stdout)
	}
	r = runCLIWith(t, vars, "audit", "tail", "-n", "1", file)
	if !strings.Contains(r.stdout, "mcp__memory__nope") || !strings.Contains(r.stdout, "auditor 7") {
		t.Errorf("audit tail: %s", r.stdout)
	}
	if b, _ := os.ReadFile(file); strings.Contains(string(b), "knowledge graph") {
		t.Error("the audit log holds an argument value")
	}
}
