package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/toolshelf/toolshelf/internal/testenv"
)

func TestDoctorBuiltin(t *testing.T) {
	t.Parallel() // in-process, and sets no process variable
	r := runCLI(t, "doctor", "--model", "claude-sonnet-4-5")
	if r.code != 0 {
		t.Fatalf("code %d: %s", r.code, r.stderr)
	}
	for _, want := range []string{
		"SERVER", "LARGEST TOOLS", "github", "create_pull_request_review",
		"enabled: tst_enabled (always, whatever the cost: ", "tokens; auto mode's threshold would be 20,000, 10% of 200,000; tokenizer)",
		"without deferral", "with deferral", "saving", "99.8%",
		`collision        github, gitlab: "create_issue" is a tool of github and gitlab`,
		"long_description mcp__sequential-thinking__sequentialthinking",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("doctor output lacks %q:\n%s", want, r.stdout)
		}
	}
}

func doctorJSON(t *testing.T, args ...string) doctorReport {
	t.Helper()
	return doctorJSONWith(t, nil, args...)
}

// doctorJSONWith is doctorJSON with vars over the environment.
func doctorJSONWith(t *testing.T, vars map[string]string, args ...string) doctorReport {
	t.Helper()
	r := runCLIWith(t, vars, append([]string{"doctor", "--json"}, args...)...)
	if r.code != 0 {
		t.Fatalf("code %d: %s", r.code, r.stderr)
	}
	var rep doctorReport
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("%v\n%s", err, r.stdout)
	}
	return rep
}

func TestDoctorDecisions(t *testing.T) {
	t.Parallel() // the built-in catalog's doctor, nine times: no process variable is set
	rep := doctorJSON(t)
	if !rep.Decision.Enabled || rep.PerTurn.SavedPercent < 95 || rep.PerTurn.With.Tools != 2 || rep.PerTurn.Without.Tools != 519 || len(rep.Servers) != 20 {
		t.Errorf("report: decision %+v, per turn %+v", rep.Decision, rep.PerTurn)
	}
	for _, tt := range []struct {
		env     map[string]string
		args    []string
		enabled bool
		reason  string
	}{
		{map[string]string{"ENABLE_TOOL_SEARCH": "auto"}, nil, true, "auto_above_threshold"},
		{map[string]string{"ENABLE_TOOL_SEARCH": "auto:99"}, []string{"--context-window", "1000000"}, false, "auto_below_threshold"},
		{map[string]string{"ENABLE_TOOL_SEARCH": "false"}, nil, false, "standard_mode"},
		{map[string]string{"DISABLE_EXPERIMENTAL_BETAS": "1"}, nil, false, "betas_disabled"},
		{nil, []string{"--model", "claude-haiku-4-5"}, false, "model_unsupported"},
		{map[string]string{"ANTHROPIC_BASE_URL": "http://127.0.0.1:4000"}, nil, false, "proxy_detected"},
		{map[string]string{"ANTHROPIC_BASE_URL": "http://127.0.0.1:4000", "ENABLE_TOOL_SEARCH": "true"}, nil, true, "tst_enabled"},
		{map[string]string{"ANTHROPIC_BASE_URL": "http://127.0.0.1:4000", "CLAUDE_CODE_USE_BEDROCK": "1"}, nil, true, "tst_enabled"},
	} {
		// The variables the decision reads, unset but for the case's.
		vars := map[string]string{"ENABLE_TOOL_SEARCH": "", "DISABLE_EXPERIMENTAL_BETAS": "", "ANTHROPIC_BASE_URL": "", "CLAUDE_CODE_USE_BEDROCK": ""}
		for k, v := range tt.env {
			vars[k] = v
		}
		rep := doctorJSONWith(t, vars, tt.args...)
		if rep.Decision.Enabled != tt.enabled || rep.Decision.Reason != tt.reason {
			t.Errorf("%v %v: %s", tt.env, tt.args, rep.Summary)
		}
		if !tt.enabled && rep.PerTurn.Saved != 0 {
			t.Errorf("%v: nothing is deferred, yet it reports a saving: %+v", tt.env, rep.PerTurn)
		}
	}
	if r := runCLIWith(t, map[string]string{"ENABLE_TOOL_SEARCH": "auto:150"}, "doctor"); r.code != 2 || !strings.Contains(r.stderr, `ENABLE_TOOL_SEARCH="auto:150"`) {
		t.Errorf("malformed setting: %d %s", r.code, r.stderr)
	}
}

// --count-tokens uses the API's count_tokens, and falls back to the
// heuristic, saying so, when the API fails.
func TestDoctorCountTokens(t *testing.T) {
	t.Parallel() // its variables go through the command's environment
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Tools []json.RawMessage `json:"tools"`
		}
		json.NewDecoder(r.Body).Decode(&body)
		n := 12
		if len(body.Tools) > 0 {
			n += 500 + 100*len(body.Tools)
		}
		json.NewEncoder(w).Encode(map[string]int{"input_tokens": n})
	}))
	defer api.Close()
	vars := map[string]string{"ANTHROPIC_API_KEY": "sk-test", "ENABLE_TOOL_SEARCH": "auto", "ANTHROPIC_BASE_URL": api.URL,
		"DISABLE_EXPERIMENTAL_BETAS": "", "CLAUDE_CODE_USE_BEDROCK": ""}
	rep := doctorJSONWith(t, vars, "--count-tokens")
	if rep.Decision.TokenSource != "count_tokens" || rep.Decision.Tokens != 100*519 || rep.Decision.Reason != "auto_above_threshold" {
		t.Errorf("decision: %s (%+v)", rep.Summary, rep.Decision)
	}

	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(529)
		io.WriteString(w, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`)
	}))
	defer down.Close()
	vars["ANTHROPIC_BASE_URL"] = down.URL
	rep = doctorJSONWith(t, vars, "--count-tokens")
	if rep.Decision.TokenSource != "heuristic" || !strings.Contains(rep.Summary, "token count failed (anthropic API: 529 overloaded_error: Overloaded), used the character heuristic") {
		t.Errorf("fallback: %s", rep.Summary)
	}
	vars["ANTHROPIC_API_KEY"] = ""
	// Without a key the report is made with the offline count, and says so.
	r := runCLIWith(t, vars, "doctor", "--count-tokens", "--json")
	var noKey doctorReport
	if err := json.Unmarshal([]byte(r.stdout), &noKey); err != nil || r.code != 0 || noKey.Decision.TokenSource != "tokenizer" || !strings.Contains(r.stderr, "needs ANTHROPIC_API_KEY; counting offline") {
		t.Errorf("no key: %d %v %q %s", r.code, err, noKey.Decision.TokenSource, r.stderr)
	}
}

// list, doctor and the gateway's auto mode count the built-in catalog
// with one function and print one total.
func TestOneTokenTotal(t *testing.T) {
	t.Parallel()
	vars := ownFolders(t)
	r := runCLIWith(t, vars, "list", "--json")
	var list listReport
	if err := json.Unmarshal([]byte(r.stdout), &list); err != nil || r.code != 0 {
		t.Fatalf("list: code %d, %v\n%s", r.code, err, r.stderr)
	}
	rep := doctorJSONWith(t, vars)

	s := startServeWith(t, vars, "--mode", "auto")
	s.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	m := regexp.MustCompile(`msg="auto mode decision".* tokens=(\d+) `).FindStringSubmatch(s.stderr.String())
	if m == nil {
		t.Fatalf("no auto mode decision logged:\n%s", s.stderr)
	}
	gateway, _ := strconv.Atoi(m[1])

	if list.Tokens == 0 || list.Tokens != rep.PerTurn.Without.Tokens || list.Tokens != gateway {
		t.Errorf("token totals of the built-in catalog: list %d, doctor %d, serve --mode auto %d; want one number",
			list.Tokens, rep.PerTurn.Without.Tokens, gateway)
	}
	sum := 0
	for _, srv := range list.Servers {
		sum += srv.Tokens
	}
	if sum != list.Tokens {
		t.Errorf("list's servers add up to %d tokens, its total is %d", sum, list.Tokens)
	}
}

// doctor counts what a server offers besides tools: server-everything has
// prompts, resources and resource templates.
func TestDoctorCountsPromptsAndResources(t *testing.T) {
	t.Parallel() // waits on a process of its own
	testenv.RequireNPM(t, "testdata/servers")
	rep := doctorJSON(t, "--config", realServersConfig(t, "everything"))
	if len(rep.Servers) != 1 {
		t.Fatalf("servers: %+v", rep.Servers)
	}
	s := rep.Servers[0]
	if s.Prompts == 0 || s.Resources == 0 || s.OfferTokens <= 0 {
		t.Errorf("everything: %d prompts, %d resources, %d tokens", s.Prompts, s.Resources, s.OfferTokens)
	}
}

// On a few small tools search costs more than it saves: doctor says so in
// words, with what to do, and without the mode's jargon.
func TestDoctorSaysWhenSearchDoesNotPay(t *testing.T) {
	t.Parallel()
	vars := ownFolders(t)
	var c struct {
		Servers []map[string]any `json:"servers"`
	}
	b, err := os.ReadFile(realCatalog)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	for _, s := range c.Servers {
		if s["name"] == "memory" {
			s["tools"] = s["tools"].([]any)[:2]
			c.Servers = []map[string]any{s}
			break
		}
	}
	tiny := filepath.Join(t.TempDir(), "tiny.json")
	b, _ = json.Marshal(c)
	os.WriteFile(tiny, b, 0o644)
	r := runCLIWith(t, vars, "doctor", "--catalog", tiny)
	if r.code != 0 {
		t.Fatalf("code %d: %s", r.code, r.stderr)
	}
	for _, want := range []string{"Search does not pay here", "--mode auto", "--mode all", "always search (every deferrable tool deferred)"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("doctor output lacks %q:\n%s", want, r.stdout)
		}
	}
	if strings.Contains(r.stdout, "mode tst") {
		t.Errorf("doctor speaks of mode tst:\n%s", r.stdout)
	}
	if r := runCLIWith(t, vars, "doctor"); strings.Contains(r.stdout, "does not pay") {
		t.Errorf("the built-in catalog, which search pays for, is told it does not:\n%s", r.stdout)
	}
}

// doctor --findability names the hard-to-find tools of the built-in
// catalog with suggestions, and with a dataset the gains of mending them.
func TestDoctorFindability(t *testing.T) {
	r := runCLI(t, "doctor", "--findability")
	if r.code != 0 || !strings.Contains(r.stdout, "tools will be hard to find") || !strings.Contains(r.stdout, `"describe": {"merge_pull_request": {"description": ...}}`) {
		t.Fatalf("code %d: %s %s", r.code, r.stdout, r.stderr)
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "tools.jsonl"), []byte(`{"id": "a", "server": "s", "name": "quota", "description": "Quota.", "input_schema": {"type": "object"}}
{"id": "b", "server": "s", "name": "send_email", "description": "Send an email message to a recipient with a subject.", "input_schema": {"type": "object"}}
`), 0o644)
	os.WriteFile(filepath.Join(dir, "queries.jsonl"), []byte(`{"id": "q1", "query": "how much storage space is left", "relevant": ["a"], "relevant_groups": [["a"]]}
{"id": "q2", "query": "email my boss a subject line", "relevant": ["b"], "relevant_groups": [["b"]]}
`), 0o644)
	r = runCLI(t, "doctor", "--findability", "--dataset", dir, "--json")
	var rep findabilityReport
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || r.code != 0 {
		t.Fatalf("code %d: %v %s %s", r.code, err, r.stdout, r.stderr)
	}
	if g := rep.Gains["mcp__s__quota"]; len(rep.Hard) == 0 || rep.Hard[0].Tool != "mcp__s__quota" || g.Queries != 1 || g.Missed != 1 || g.AtMost != 0.5 {
		t.Errorf("report: %+v", rep)
	}
	if r := runCLI(t, "doctor", "--dataset", dir); r.code != 2 || !strings.Contains(r.stderr, "--dataset goes with --findability") {
		t.Errorf("--dataset alone: %d %s", r.code, r.stderr)
	}
}

// doctor NAME starts one configured server alone and says how it went:
// the console's next step for a failed server. A server that fails shows
// its error with what it printed on stderr and exits 1; a real server
// that starts shows its tools; a name of no server is a usage error
// naming the servers there are. The others are not started.
func TestDoctorOneServer(t *testing.T) {
	t.Parallel() // waits on processes of its own
	testenv.RequireNPM(t, "testdata/servers")
	dir := t.TempDir()
	started := filepath.Join(dir, "started")
	cfg := filepath.Join(dir, "servers.json")
	memory := filepath.Join(testenv.Root(t), "testdata", "servers", "node_modules", "@modelcontextprotocol", "server-memory", "dist", "index.js")
	b, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{
		"broken": map[string]any{"command": "/bin/sh", "args": []string{"-c", "echo 'cannot open the graph file: permission denied' >&2; exit 3"}, "contain": false},
		"memory": map[string]any{"command": "node", "args": []string{memory}, "timeout": testenv.Timeout(30 * time.Second).String()},
		"other":  map[string]any{"command": "/bin/sh", "args": []string{"-c", "touch " + started + "; sleep 60"}, "contain": false},
	}})
	os.WriteFile(cfg, b, 0o600)

	r := runCLI(t, "doctor", "--config", cfg, "broken")
	if r.code != 1 || !strings.Contains(r.stdout, "server broken: failed (uncontained") || !strings.Contains(r.stdout, "stderr: cannot open the graph file: permission denied") {
		t.Errorf("doctor broken: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = runCLI(t, "doctor", "--config", cfg, "memory")
	if r.code != 0 || !strings.Contains(r.stdout, "server memory: ready") || !strings.Contains(r.stdout, "tools: 9") {
		t.Errorf("doctor memory: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = runCLI(t, "doctor", "--config", cfg, "nowhere")
	if r.code != 2 || !strings.Contains(r.stderr, `no server "nowhere"`) || !strings.Contains(r.stderr, "broken, memory, other") {
		t.Errorf("doctor nowhere: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if _, err := os.Stat(started); err == nil {
		t.Error("doctor NAME started another server")
	}
}
