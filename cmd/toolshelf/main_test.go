package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"maps"
	"math"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/toolshelf/toolshelf/internal/mcptest"
	"github.com/toolshelf/toolshelf/internal/testenv"
	"github.com/toolshelf/toolshelf/sandbox"
)

var update = flag.Bool("update", false, "rewrite golden files")

// realCatalog is the catalog of the real npm servers used by the search
// package's tests.
var realCatalog = filepath.Join("..", "..", "internal", "builtin", "catalog.json")

// serverTimeout is how long the tests' servers (this test binary started
// again, in a sandbox, under -race) may take to answer: a bound for one
// that hangs, never a wait for one that answers. 5 s was too little with
// the package's tests in parallel: a server's sandbox and start took 6.3
// s while other tests worked beside it.
const serverTimeout = 30 * time.Second

type result struct {
	code           int
	stdout, stderr string
}

func runCLI(t *testing.T, args ...string) result {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), args, strings.NewReader(""), &stdout, &stderr)
	return result{code, stdout.String(), stderr.String()}
}

// runCLIWith is runCLI with vars over the process's environment, as the
// command reads it: a test that sets no process variable may run in
// parallel with others.
func runCLIWith(t *testing.T, vars map[string]string, args ...string) result {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := runEnv(context.Background(), &env{stdin: strings.NewReader(""), stdout: &stdout, stderr: &stderr, getenv: getenvWith(vars)}, args)
	return result{code, stdout.String(), stderr.String()}
}

// getenvWith is the process's environment with vars over it.
func getenvWith(vars map[string]string) func(string) string {
	return func(k string) string {
		if v, ok := vars[k]; ok {
			return v
		}
		return os.Getenv(k)
	}
}

// ownFolders are configuration, cache and state folders of the test's
// own, as variables for runCLIWith and startServeWith: commands that
// keep state (learned.db, whose lock a serving gateway holds; the tool
// lists' cache, which every test server's command shares) run apart
// from other tests', so the test may run in parallel.
func ownFolders(t *testing.T) map[string]string {
	dir := t.TempDir()
	return map[string]string{
		"XDG_CONFIG_HOME": filepath.Join(dir, "config"),
		"XDG_CACHE_HOME":  filepath.Join(dir, "cache"),
		"XDG_STATE_HOME":  filepath.Join(dir, "state"),
	}
}

func TestCLI(t *testing.T) {
	tests := []struct {
		name   string
		args   []string
		code   int
		stdout string // substring of stdout
		stderr string // substring of stderr
	}{
		{"no args", nil, 2, "", "Usage:"},
		{"help", []string{"help"}, 0, "Commands:", ""},
		{"help search", []string{"help", "search"}, 0, "--explain", ""},
		{"search -h", []string{"search", "-h"}, 0, "Usage: toolshelf search", ""},
		{"unknown command", []string{"serch"}, 2, "", `did you mean "search"`},
		{"unknown flag", []string{"search", "--bogus", "x"}, 2, "", "flag provided but not defined: -bogus"},

		{"search", []string{"search", "--catalog", realCatalog, "create", "a", "pull", "request"}, 0, "mcp__github__create_pull_request", ""},
		{"flags after query", []string{"search", "send", "slack", "message", "--catalog", realCatalog, "--limit", "1"}, 0, "mcp__slack__slack_post_message", ""},
		{"keyword engine", []string{"search", "--catalog", realCatalog, "--engine", "keyword", "+slack", "send"}, 0, "mcp__slack__", ""},
		{"regex engine", []string{"search", "--catalog", realCatalog, "--engine", "regex", "screenshot"}, 0, "screenshot", ""},
		{"hybrid engine, built-in vectors", []string{"search", "--catalog", realCatalog, "--engine", "hybrid", "--limit", "1", "take a screenshot of the page"}, 0, "mcp__playwright__browser_take_screenshot", ""},
		{"semantic engine, built-in vectors", []string{"search", "--catalog", realCatalog, "--engine", "semantic", "--limit", "1", "send a message to a channel"}, 0, "mcp__slack__slack_post_message", ""},
		{"select", []string{"search", "--catalog", realCatalog, "select:mcp__github__create_issue"}, 0, "mcp__github__create_issue", ""},
		{"no match", []string{"search", "--catalog", realCatalog, "zzyzx"}, 0, "No matching tools.", ""},
		{"dataset folder as catalog", []string{"search", "--catalog", "testdata/tiny", "email"}, 0, "mcp__mail__send_email", ""},
		{"explain", []string{"search", "--catalog", realCatalog, "--explain", "--limit", "1", "sentry issue"}, 0, "name, tool", ""},

		{"no query", []string{"search", "--catalog", realCatalog}, 2, "", "no query"},
		{"symbols only", []string{"search", "--catalog", realCatalog, "?!"}, 2, "", "Query must contain at least one letter or number."},
		{"zero limit", []string{"search", "--catalog", realCatalog, "--limit", "0", "x"}, 2, "", "--limit must be a positive integer, got 0"},
		{"negative limit", []string{"search", "--catalog", realCatalog, "--limit", "-2", "x"}, 2, "", "--limit must be a positive integer, got -2"},
		{"bad regex", []string{"search", "--catalog", realCatalog, "--engine", "regex", "(x"}, 2, "", `invalid pattern "(x": missing closing )`},
		{"long regex", []string{"search", "--catalog", realCatalog, "--engine", "regex", strings.Repeat("x", 201)}, 2, "", "the limit is 200"},
		{"bad engine", []string{"search", "--catalog", realCatalog, "--engine", "vector", "x"}, 2, "", `unknown engine "vector"`},
		{"built-in catalog", []string{"search", "create", "a", "pull", "request"}, 0, "1  mcp__github__create_pull_request", "using the built-in catalog (519 tools of 20 servers)"},
		{"missing catalog", []string{"search", "--catalog", "testdata/nope.json", "x"}, 2, "", "testdata/nope.json: no such file"},
		{"malformed catalog", []string{"search", "--catalog", "testdata/bad-catalog.json", "x"}, 2, "", "testdata/bad-catalog.json:4: invalid character"},

		{"version", []string{"--version"}, 0, "toolshelf ", ""},
		{"eval", []string{"eval", "--dataset", "testdata/tiny"}, 0, "level=2", ""},
		{"eval no dataset", []string{"eval"}, 2, "", "--dataset is required"},
		{"eval missing dataset", []string{"eval", "--dataset", "testdata/nope"}, 2, "", "no such file"},
		{"eval bad dataset", []string{"eval", "--dataset", "testdata/bad-dataset"}, 2, "", "testdata/bad-dataset/queries.jsonl:2: relevant tool \"mail::nope\" is not in tools.jsonl"},
		{"eval bad engine", []string{"eval", "--dataset", "testdata/tiny", "--engine", "x"}, 2, "", `unknown engine "x"`},
		{"eval variant", []string{"eval", "--dataset", "testdata/tiny", "--variant", "seed"}, 0, "engine bm25 variant seed", ""},
		{"eval unknown variant", []string{"eval", "--dataset", "testdata/tiny", "--variant", "x"}, 2, "", `--variant: unknown variant "x" (want one of seed,`},
		{"eval variant with engine", []string{"eval", "--dataset", "testdata/tiny", "--variant", "seed", "--engine", "keyword"}, 2, "", "does not go with --engine keyword"},
		{"eval zero limit", []string{"eval", "--dataset", "testdata/tiny", "--limit", "0"}, 2, "", "--limit must be a positive integer"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runCLI(t, tt.args...)
			if r.code != tt.code {
				t.Errorf("exit code = %d, want %d\nstdout: %s\nstderr: %s", r.code, tt.code, r.stdout, r.stderr)
			}
			if !strings.Contains(r.stdout, tt.stdout) {
				t.Errorf("stdout does not contain %q:\n%s", tt.stdout, r.stdout)
			}
			if !strings.Contains(r.stderr, tt.stderr) {
				t.Errorf("stderr does not contain %q:\n%s", tt.stderr, r.stderr)
			}
			if tt.code == 2 && tt.stderr != "" && strings.Contains(r.stderr, "goroutine") {
				t.Errorf("stderr has a stack trace:\n%s", r.stderr)
			}
		})
	}
}

func TestSearchJSON(t *testing.T) {
	r := runCLI(t, "search", "--catalog", realCatalog, "--json", "--limit", "2", "create issue")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	var out struct {
		Query  string
		Engine string
		Tools  int
		Hits   []struct {
			Name, Server, Tool, Description string
			Score                           float64
			Matches                         []struct {
				Term   string
				Fields []string
				Score  float64
			}
		}
	}
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, r.stdout)
	}
	if out.Query != "create issue" || out.Engine != "bm25" || out.Tools < 500 || len(out.Hits) != 2 {
		t.Fatalf("output = %+v", out)
	}
	h := out.Hits[0]
	if !strings.HasSuffix(h.Name, "__create_issue") || h.Score <= 0 || len(h.Matches) != 3 || h.Matches[0].Term != "create" || len(h.Matches[0].Fields) == 0 || h.Matches[2].Term != "(name boost)" {
		t.Errorf("first hit = %+v", h)
	}
	var sum float64
	for _, m := range h.Matches {
		sum += m.Score
	}
	if math.Abs(sum-h.Score) > 1e-6 {
		t.Errorf("the matches add up to %v, the score is %v", sum, h.Score)
	}
}

func TestEvalJSON(t *testing.T) {
	r := runCLI(t, "eval", "--dataset", "testdata/tiny", "--json")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	var out map[string]json.RawMessage
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, r.stdout)
	}
	if diff := cmp.Diff([]string{"dataset", "engine", "index_ms", "latency_us", "subsets", "tools"}, slices.Sorted(maps.Keys(out))); diff != "" {
		t.Errorf("top-level keys (-want +got):\n%s", diff)
	}
	var subsets map[string]map[string]any
	if err := json.Unmarshal(out["subsets"], &subsets); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"all", "level=1", "level=2", "level=5", "category=multi"} {
		if subsets[s] == nil {
			t.Errorf("subset %q missing: %s", s, out["subsets"])
		}
	}
	all := subsets["all"]
	for _, k := range []string{"queries", "recall@1", "recall@5", "recall@10", "complete@10", "mrr@10", "ndcg@10", "abstain"} {
		if _, ok := all[k]; !ok {
			t.Errorf("subset all has no %q: %v", k, all)
		}
	}
	if all["queries"].(float64) != 3 || all["recall@10"].(float64) != 1 {
		t.Errorf("subset all = %v", all)
	}
}

// TestHelpGolden keeps the help texts under review: a change shows up as a
// diff of testdata/help.golden (refresh with -update).
func TestHelpGolden(t *testing.T) {
	var b strings.Builder
	b.WriteString(runCLI(t, "help").stdout)
	for _, name := range []string{"eval", "search"} {
		b.WriteString("\n--- " + name + "\n")
		b.WriteString(runCLI(t, "help", name).stdout)
	}
	golden := filepath.Join("testdata", "help.golden")
	if *update {
		if err := os.WriteFile(golden, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(want), b.String()); diff != "" {
		t.Errorf("help text changed (-want +got); rerun with -update if intended:\n%s", diff)
	}
}

func TestParseFlags(t *testing.T) {
	tests := []struct {
		args []string
		want []string
		json bool
	}{
		{[]string{"a", "b"}, []string{"a", "b"}, false},
		{[]string{"a", "--json", "b"}, []string{"a", "b"}, true},
		{[]string{"--json", "a"}, []string{"a"}, true},
		{[]string{"a", "--", "--json"}, []string{"a", "--json"}, false},
	}
	for _, tt := range tests {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		j := fs.Bool("json", false, "")
		got, err := parseFlags(fs, tt.args)
		if err != nil {
			t.Fatal(err)
		}
		if !cmp.Equal(tt.want, got) || *j != tt.json {
			t.Errorf("parseFlags(%q) = %q json=%v, want %q json=%v", tt.args, got, *j, tt.want, tt.json)
		}
	}
}

func TestMain(m *testing.M) {
	mcptest.MaybeServe()
	sandbox.Main()
	if os.Getenv(runMainEnv) == "1" {
		// Run as the toolshelf command, for tests that need it as a process.
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
		stop()
		os.Exit(code)
	}
	// Keep the user's configuration and cache out of the tests.
	dir, err := os.MkdirTemp("", "toolshelf-cli-test")
	if err != nil {
		panic(err)
	}
	os.Setenv("XDG_CONFIG_HOME", filepath.Join(dir, "config"))
	os.Setenv("XDG_CACHE_HOME", filepath.Join(dir, "cache"))
	os.Setenv("XDG_STATE_HOME", filepath.Join(dir, "state"))
	os.Unsetenv(envConfig)
	code := m.Run()
	testenv.StopPostgres()
	os.RemoveAll(dir)
	os.Exit(code)
}

// Every command that reads or changes shared state finds the store the
// same three ways: --store, $TOOLSHELF_STORE, the configuration's
// "store". A URL that is not PostgreSQL's is refused, naming where it
// came from; that it is refused shows the command read it.
func TestEveryStateCommandTakesStore(t *testing.T) {
	dir := t.TempDir()
	plain := filepath.Join(dir, "servers.json")
	withStore := filepath.Join(dir, "stored.json")
	os.WriteFile(plain, []byte(`{"mcpServers": {"github": {"command": "false"}}}`), 0o644)
	os.WriteFile(withStore, []byte(`{"mcpServers": {"github": {"command": "false"}}, "store": "mysql://from-config"}`), 0o644)
	commands := [][]string{
		{"serve", "--catalog", realCatalog},
		{"tools", "approve", "github"},
		{"tools", "deny", "github/create_issue"},
		{"tools", "diff"},
		{"tools", "export-lock"},
		{"tools", "import-lock"},
		{"auth", "status"},
		{"learned", "show"},
		{"audit", "tail", "store"},
		{"list"},
		{"search", "create an issue"},
		{"doctor"},
	}
	for _, c := range commands {
		name := strings.Join(c, " ")
		t.Run(name, func(t *testing.T) {
			cfg := []string{"--config", plain}
			if c[0] == "serve" {
				cfg = nil // serve reads the catalog file
			}
			args := append(append(slices.Clone(c), cfg...), "--store", "mysql://from-flag")
			if r := runCLI(t, args...); r.code != 2 || !strings.Contains(r.stderr, "mysql://from-flag") {
				t.Errorf("--store: exit %d, stderr %.300s", r.code, r.stderr)
			}
			t.Setenv("TOOLSHELF_STORE", "mysql://from-env")
			if r := runCLI(t, append(slices.Clone(c), cfg...)...); r.code != 2 || !strings.Contains(r.stderr, "mysql://from-env") {
				t.Errorf("$TOOLSHELF_STORE: exit %d, stderr %.300s", r.code, r.stderr)
			}
			if c[0] == "serve" {
				return
			}
			t.Setenv("TOOLSHELF_STORE", "")
			if r := runCLI(t, append(slices.Clone(c), "--config", withStore)...); r.code != 2 || !strings.Contains(r.stderr, `stored.json:1: "store" must be a postgres:// URL`) {
				t.Errorf("the configuration's store: exit %d, stderr %.300s", r.code, r.stderr)
			}
		})
	}
}
