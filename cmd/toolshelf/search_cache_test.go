package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/toolshelf/toolshelf/internal/mcptest"
	"github.com/toolshelf/toolshelf/internal/testenv"
	"github.com/toolshelf/toolshelf/learn"
)

// search with a configuration answers at once from the tool cache of a
// server still connecting (a slow one does not hold every search up), and
// says which; --wait waits for it.
func TestSearchFromCache(t *testing.T) {
	t.Parallel()
	vars := ownFolders(t)
	vars["XDG_CACHE_HOME"] = t.TempDir()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "servers.json")
	write := func(mode string) {
		cmd, env := mcptest.Command(mode, []string{"create_issue", "list_issues"})
		// A hanging server only ever times out: its timeout is short, so
		// that the commands below that wait for it do not wait long.
		timeout := testenv.Timeout(serverTimeout)
		if mode == "hang" {
			timeout = testenv.Timeout(time.Second)
		}
		b, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{
			"tracker": map[string]any{"command": cmd, "env": env, "contain": false, "timeout": timeout.String()},
		}})
		os.WriteFile(cfg, b, 0o644)
	}
	write("serve")
	if r := runCLIWith(t, vars, "search", "--config", cfg, "create an issue"); r.code != 0 || !strings.Contains(r.stdout, "mcp__tracker__create_issue") {
		t.Fatalf("a first search, the server up: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	// The same server, now hanging before it answers: its cached tools
	// are searched while it connects.
	write("hang")
	r := runCLIWith(t, vars, "search", "--config", cfg, "create an issue")
	if r.code != 0 || !strings.Contains(r.stdout, "mcp__tracker__create_issue") || !strings.Contains(r.stderr, "still connecting, searched from their cached tool lists: tracker") {
		t.Errorf("a search while the server hangs: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	// --wait waits for its answer (here: its timeout, then its cache),
	// and, as list and doctor, exits 1 for the server that failed.
	r = runCLIWith(t, vars, "search", "--wait", "--config", cfg, "create an issue")
	if strings.Contains(r.stderr, "still connecting") || !strings.Contains(r.stdout, "mcp__tracker__create_issue") ||
		r.code != 1 || !strings.Contains(r.stderr, "1 of 1 servers failed: [tracker]") {
		t.Errorf("--wait: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, c := range []string{"list", "doctor"} {
		if r := runCLIWith(t, vars, c, "--config", cfg); r.code != 1 {
			t.Errorf("%s with the server failing: exit %d, search's is 1\n%s", c, r.code, r.stderr)
		}
	}
}

// A configuration's search words for a tool ("describe": {"searchWords"})
// find it with the default engine, and --explain shows they matched.
func TestSearchWordsOfTheConfiguration(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	cfg := filepath.Join(t.TempDir(), "servers.json")
	cmd, env := mcptest.Command("serve", []string{"create_issue", "list_issues"})
	b, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{
		"tracker": map[string]any{"command": cmd, "env": env, "contain": false, "timeout": testenv.Timeout(serverTimeout).String(),
			"describe": map[string]any{"list_issues": map[string]any{"searchWords": "zebrafinch backlog"}}},
	}})
	os.WriteFile(cfg, b, 0o644)
	r := runCLI(t, "search", "--wait", "--explain", "--config", cfg, "zebrafinch")
	first, _, _ := strings.Cut(r.stdout, "\n")
	if r.code != 0 || !strings.Contains(first, "mcp__tracker__list_issues") || !regexp.MustCompile(`zebrafinch\s+hint`).MatchString(r.stdout) {
		t.Errorf("search words of the configuration: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// What serve learned from use ranks the CLI's search too: the words of
// earlier searches after which a tool was called become words of that
// tool, so a new wording of the same need finds it (here neither word is
// in the catalog at all), and --explain names them; --no-learn ranks
// without.
func TestSearchRanksByWhatWasLearned(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	state := t.TempDir()
	t.Setenv("XDG_STATE_HOME", state)
	cfg := filepath.Join(t.TempDir(), "servers.json")
	cmd, env := mcptest.Command("serve", []string{"create_issue", "list_issues"})
	b, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{
		"tracker": map[string]any{"command": cmd, "env": env, "contain": false, "timeout": testenv.Timeout(serverTimeout).String()},
	}})
	os.WriteFile(cfg, b, 0o644)
	st := learn.Open(learn.DefaultPath(os.Getenv), nil)
	for range learn.MinSessions {
		st.Record("", "jot down the defect", "mcp__tracker__create_issue")
		st.Record("", "a defect to jot for the team", "mcp__tracker__create_issue")
	}
	if err := st.Flush(); err != nil {
		t.Fatal(err)
	}
	r := runCLI(t, "search", "--wait", "--explain", "--config", cfg, "jot defect")
	first, _, _ := strings.Cut(r.stdout, "\n")
	if r.code != 0 || !strings.Contains(first, "mcp__tracker__create_issue") || !strings.Contains(r.stdout, "learned: defect jot") {
		t.Errorf("a new wording of a learned need: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := runCLI(t, "search", "--wait", "--no-learn", "--config", cfg, "jot defect"); strings.Contains(r.stdout, "create_issue") && !strings.Contains(r.stdout, "No tool fits") {
		t.Errorf("--no-learn: %s", r.stdout)
	}
}
