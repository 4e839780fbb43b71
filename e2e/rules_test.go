package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolshelf/toolshelf/internal/testenv"
)

// TestRulesThroughTypeScriptSDK drives the rules on calls with the
// official TypeScript SDK in front of the gateway and real servers:
// server-filesystem refused a write outside a folder by a rule on its
// arguments, a directory made only after the person's yes (elicitation
// answered yes, then no), and a limit hit on the third read.
func TestRulesThroughTypeScriptSDK(t *testing.T) {
	requireClients(t)
	servers, _ := filepath.Abs("../testdata/servers")
	work := testenv.WritableDir(t)
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "team.cedar"), []byte(`@message("writes only under the work folder")
forbid (principal, action == Action::"call", resource)
when { resource.name == "write_file" && !(context.clean.path like "`+work+`/*") };

@ask("Make this folder?")
forbid (principal, action == Action::"call", resource)
when { resource.name == "create_directory" };

@limit("2/minute") @per("tool")
permit (principal, action == Action::"call", resource)
when { resource.name == "list_allowed_directories" };

@limit("1/second") @per("tool")
permit (principal, action == Action::"call", resource)
when { resource.name == "get_file_info" };
`), 0o644)
	cfg := map[string]any{
		"mcpServers": map[string]any{"filesystem": map[string]any{
			"command": "node", "args": []string{"node_modules/@modelcontextprotocol/server-filesystem/dist/index.js", work},
			"cwd": servers, "paths": map[string]any{"write": []string{work}}, "timeout": testenv.Timeout(30 * time.Second).String(),
		}},
		"policies": []string{filepath.Join(dir, "team.cedar")},
	}
	b, _ := json.Marshal(cfg)
	path := filepath.Join(dir, "servers.json")
	os.WriteFile(path, b, 0o644)
	url := testenv.RunHTTPScript(t, gatewayScript(t, path, "--http", "127.0.0.1:0"))

	type result struct {
		Tool    string
		IsError bool
		Text    string
		Asked   []string
	}
	run := func(answer string, calls ...map[string]any) []result {
		t.Helper()
		js, _ := json.Marshal(calls)
		out, err := node(t, "node", "rules-client.mjs", url, answer, string(js))
		if err != nil {
			t.Fatalf("rules-client: %v\n%s", err, out)
		}
		var rs []result
		sc := bufio.NewScanner(strings.NewReader(out))
		for sc.Scan() {
			var r result
			if json.Unmarshal(sc.Bytes(), &r) == nil && r.Tool != "" {
				rs = append(rs, r)
			}
		}
		if len(rs) != len(calls) {
			t.Fatalf("%d results for %d calls:\n%s", len(rs), len(calls), out)
		}
		return rs
	}
	write := func(p string) map[string]any {
		return map[string]any{"name": "mcp__filesystem__write_file", "arguments": map[string]any{"path": p, "content": "x"}}
	}
	mkdir := func(p string) map[string]any {
		return map[string]any{"name": "mcp__filesystem__create_directory", "arguments": map[string]any{"path": p}}
	}
	list := map[string]any{"name": "mcp__filesystem__list_allowed_directories", "arguments": map[string]any{}}

	// A rule that cannot decide refuses: arguments padded past what
	// rules read, a path reworded with "..", encoded, or of another type.
	outside := testenv.WritableDir(t)
	padded := write(filepath.Join(outside, "padded.txt"))
	padded["arguments"].(map[string]any)["junk"] = make([]int, 21000) // past the 20,000 values rules read
	attacks := []map[string]any{
		padded,
		write(work + strings.Repeat("/..", strings.Count(work, "/")) + outside + "/dotdot.txt"),
		write(work + strings.Repeat("/%2e%2e", strings.Count(work, "/")) + outside + "/encoded.txt"),
		write(work + "//..//.//" + strings.Repeat("../", strings.Count(work, "/")) + outside + "/slashes.txt"),
	}
	for i, r := range run("yes", attacks...) {
		if !r.IsError || !strings.Contains(r.Text, "team.cedar") {
			t.Errorf("attack %d went through: %+v", i, r)
		}
	}
	if entries, _ := os.ReadDir(outside); len(entries) > 0 {
		t.Errorf("files written outside the folder: %v", entries)
	}

	rs := run("yes", write(filepath.Join(work, "ok.txt")), write("/tmp/outside.txt"), mkdir(filepath.Join(work, "yes")), list, list, list)
	if rs[0].IsError {
		t.Errorf("a write inside the folder: %s", rs[0].Text)
	}
	if !rs[1].IsError || !strings.Contains(rs[1].Text, "writes only under the work folder") {
		t.Errorf("a write outside: %s", rs[1].Text)
	}
	if rs[2].IsError || len(rs[2].Asked) != 1 || !strings.Contains(rs[2].Asked[0], "Make this folder?") {
		t.Errorf("ask, yes: %+v", rs[2])
	}
	if st, err := os.Stat(filepath.Join(work, "yes")); err != nil || !st.IsDir() {
		t.Errorf("the folder the person said yes to is not there: %v", err)
	}
	if rs[3].IsError || rs[4].IsError || !rs[5].IsError || !strings.Contains(rs[5].Text, "(2/minute): try again in") {
		t.Errorf("the limit: %+v", rs[3:])
	}
	// A limit hit and then recovered: of ten quick calls some are limited
	// (one a second), and a call a moment later goes again.
	info := map[string]any{"name": "mcp__filesystem__get_file_info", "arguments": map[string]any{"path": work}}
	limited := 0
	for _, r := range run("yes", info, info, info, info, info, info, info, info, info, info) {
		if r.IsError && strings.Contains(r.Text, "(1/second): try again in") {
			limited++
		}
	}
	if limited == 0 {
		t.Errorf("none of ten quick calls was limited to one a second")
	}
	testenv.Eventually(t, 10*time.Second, "the limited tool to answer again", func() bool {
		return !run("yes", info)[0].IsError
	})
	rs = run("no", mkdir(filepath.Join(work, "no")))
	if !rs[0].IsError || !strings.Contains(rs[0].Text, "the person said no") || len(rs[0].Asked) != 1 {
		t.Errorf("ask, no: %+v", rs[0])
	}
	if _, err := os.Stat(filepath.Join(work, "no")); err == nil {
		t.Errorf("the folder the person said no to was made")
	}
}

// TestRulesChangeReachesEveryReplica: replicas that read the same rules
// file (a mounted ConfigMap, a shared folder) each take a change of it
// while serving, within 2 s, and a forbid reaches every one.
func TestRulesChangeReachesEveryReplica(t *testing.T) {
	dir := t.TempDir()
	rulesFile := filepath.Join(dir, "team.cedar")
	write := func(text string) {
		os.WriteFile(rulesFile+".new", []byte(text), 0o644)
		os.Rename(rulesFile+".new", rulesFile)
	}
	write("// no rules\n") // nothing forbidden yet, said as rules files say it
	cfg := serverConfig(t, dir, "tracker", "create_ticket", map[string]any{"policies": []string{rulesFile}})
	lb, _, _ := startFleet(t, "", cfg, 2)
	ctx, cancel := context.WithTimeout(context.Background(), testenv.Timeout(2*time.Minute))
	defer cancel()
	call := func(replica string) string {
		cs := connectMCP(t, ctx, replica+"/mcp")
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "call_tool", Arguments: map[string]any{"name": "mcp__tracker__create_ticket", "arguments": map[string]any{}}})
		if err != nil {
			t.Fatal(err)
		}
		cs.Close()
		var b strings.Builder
		for _, c := range res.Content {
			if tc, ok := c.(*mcp.TextContent); ok {
				b.WriteString(tc.Text)
			}
		}
		return b.String()
	}
	for _, r := range lb.backends {
		if out := call(r); strings.Contains(out, "forbidden") {
			t.Fatalf("%s before the change: %s", r, out)
		}
	}
	write(`@message("tickets are closed for the release") forbid (principal, action, resource) when { resource.name == "create_ticket" && context.client != "" };`)
	changed := time.Now()
	for _, r := range lb.backends {
		testenv.Eventually(t, 10*time.Second, "replica "+r+" to take the change", func() bool {
			return strings.Contains(call(r), "tickets are closed for the release")
		})
	}
	// Eventually waits longer on a loaded machine; the figure is logged.
	t.Logf("every replica refused %v after the change", time.Since(changed).Round(100*time.Millisecond))
}
