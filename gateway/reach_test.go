package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolshelf/toolshelf/config"
	"github.com/toolshelf/toolshelf/rules"

	"github.com/toolshelf/toolshelf/internal/mcptest"
	"github.com/toolshelf/toolshelf/internal/testenv"
	"github.com/toolshelf/toolshelf/policy"
	"github.com/toolshelf/toolshelf/upstream"
)

// TestEveryPathAsksTheRules: a rule of the pool's is asked about every
// call however the tool is reached (call_tool, a tool listed directly, a
// program's call), once each, and its refusal is what the model reads.
func TestEveryPathAsksTheRules(t *testing.T) {
	var mu sync.Mutex
	var asked []string
	refuse := errors.New("refused by the test's rule: no pull requests")
	rule := func(_ context.Context, _ *upstream.Scope, c *upstream.Call) error {
		mu.Lock()
		asked = append(asked, c.Via+" "+c.Tool.Name)
		mu.Unlock()
		if c.Tool.Tool == "create_pull_request" {
			return refuse
		}
		return nil
	}
	pool := poolWith(t, &upstream.Options{Rules: []upstream.Rule{rule}}, standardUpstreams(t)...)
	search := newGateway(t, pool.Scope(nil), nil)
	all := newGateway(t, pool.Scope(nil), &Options{Settings: policy.Settings{Mode: policy.ModeStandard}})
	code := newGateway(t, pool.Scope(nil), &Options{Code: codeRunner(t)})

	res := call(t, connect(t, search, nil), toolCall, map[string]any{"name": "mcp__github__create_pull_request", "arguments": map[string]any{}})
	if !res.IsError || !strings.Contains(text(res), refuse.Error()) {
		t.Errorf("call_tool: %s", text(res))
	}
	res = call(t, connect(t, all, nil), "mcp__github__create_pull_request", map[string]any{})
	if !res.IsError || !strings.Contains(text(res), refuse.Error()) {
		t.Errorf("a directly listed tool: %s", text(res))
	}
	res = call(t, connect(t, code, nil), "run_code", map[string]any{"code": `try { await tools.github.create_pull_request({}) } catch (e) { return "caught: " + e.message }`})
	if !strings.Contains(text(res), "caught: ") || !strings.Contains(text(res), refuse.Error()) {
		t.Errorf("a program's call: %s", text(res))
	}
	res = call(t, connect(t, code, nil), "run_code", map[string]any{"code": `return await tools.github.create_issue({})`})
	if res.IsError {
		t.Errorf("a program's permitted call: %s", text(res))
	}
	mu.Lock()
	defer mu.Unlock()
	want := []string{"call_tool mcp__github__create_pull_request", "direct mcp__github__create_pull_request", "code mcp__github__create_pull_request", "code mcp__github__create_issue"}
	if strings.Join(asked, "|") != strings.Join(want, "|") {
		t.Errorf("the rule was asked:\n%s\nwant:\n%s", strings.Join(asked, "\n"), strings.Join(want, "\n"))
	}
}

// TestRulesForbidAndAsk: the operators' rules (Cedar) forbid a call by
// its arguments, naming the rule and its message, and ask the person
// through elicitation before a destructive one: yes lets it through, no
// stops it, and a client that cannot ask gets a refusal saying so.
func TestRulesForbidAndAsk(t *testing.T) {
	live, file := rulesFile(t, `
@message("notes go under /notes only")
forbid (principal, action == Action::"call", resource)
when { resource.name == "write_note" && !(context.args.text like "/notes/*") };

@ask("Delete it for good?")
forbid (principal, action == Action::"call", resource)
when { resource.destructive };
`)
	cfg := memServer(t, "notes", []json.RawMessage{
		rawTool("write_note", "Write a note", nil),
		rawTool("delete_note", "Delete a note", map[string]any{"annotations": map[string]any{"destructiveHint": true}}),
	})
	pool := poolWith(t, &upstream.Options{Policies: live}, cfg)
	g := newGateway(t, pool.Scope(nil), nil)

	plain := connect(t, g, nil)
	res := call(t, plain, toolCall, map[string]any{"name": "mcp__notes__write_note", "arguments": map[string]any{"text": "/etc/motd"}})
	if !res.IsError || !strings.Contains(text(res), "forbidden by a rule "+file+":2: notes go under /notes only") {
		t.Errorf("forbid by argument: %s", text(res))
	}
	if res := call(t, plain, toolCall, map[string]any{"name": "mcp__notes__write_note", "arguments": map[string]any{"text": "/notes/a"}}); res.IsError {
		t.Errorf("a permitted call: %s", text(res))
	}
	if res := call(t, plain, toolCall, map[string]any{"name": "mcp__notes__delete_note", "arguments": map[string]any{"text": "a"}}); !res.IsError || !strings.Contains(text(res), "cannot ask (it does not offer elicitation)") {
		t.Errorf("ask without elicitation: %s", text(res))
	}
	var asked []string
	var mu sync.Mutex
	answer := func(yes bool) *mcp.ClientOptions {
		return &mcp.ClientOptions{ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			mu.Lock()
			asked = append(asked, req.Params.Message)
			mu.Unlock()
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": yes}}, nil
		}}
	}
	if res := call(t, connect(t, g, answer(true)), toolCall, map[string]any{"name": "mcp__notes__delete_note", "arguments": map[string]any{"text": "a"}}); res.IsError {
		t.Errorf("ask, yes: %s", text(res))
	}
	if res := call(t, connect(t, g, answer(false)), toolCall, map[string]any{"name": "mcp__notes__delete_note", "arguments": map[string]any{"text": "a"}}); !res.IsError || !strings.Contains(text(res), "the person said no") {
		t.Errorf("ask, no: %s", text(res))
	}
	mu.Lock()
	defer mu.Unlock()
	if len(asked) != 2 || !strings.Contains(asked[0], "Delete it for good?") || !strings.Contains(asked[0], `{"text":"a"}`) {
		t.Errorf("the questions: %q", asked)
	}
}

// TestRefusalAudited: the audit record of a call the rules stopped names
// the decision and the rule.
func TestRefusalAudited(t *testing.T) {
	live, _ := rulesFile(t, `@id("no issues") forbid (principal, action, resource) when { resource.name == "create_issue" };`)
	pool := poolWith(t, &upstream.Options{Policies: live}, standardUpstreams(t)...)
	log, records := auditLog(t)
	g := newGateway(t, pool.Scope(nil), &Options{Audit: log})
	cs := connect(t, g, nil)
	call(t, cs, toolCall, map[string]any{"name": "mcp__github__create_issue", "arguments": map[string]any{}})
	call(t, cs, toolCall, map[string]any{"name": "mcp__github__create_pull_request", "arguments": map[string]any{}})
	recs := records()
	if len(recs) != 2 {
		t.Fatalf("records: %v", recs)
	}
	if r := recs[0]; r.Decision != "forbidden" || !strings.HasPrefix(r.Rule, "no issues (") || r.Outcome != "tool_error" {
		t.Errorf("the refused call's record: %+v", r)
	}
	if r := recs[1]; r.Decision != "" || r.Rule != "" || r.Outcome != "ok" {
		t.Errorf("the permitted call's record: %+v", r)
	}
}

// TestLimitsOnEveryPath: a limit counts calls however they come, a
// program's inner calls one by one, and the call past it says when to
// try again.
func TestLimitsOnEveryPath(t *testing.T) {
	live, file := rulesFile(t, `@limit("3/minute") permit (principal, action, resource) when { resource.server == "github" };`)
	pool := poolWith(t, &upstream.Options{Policies: live}, standardUpstreams(t)...)
	g := newGateway(t, pool.Scope(nil), &Options{Code: codeRunner(t)})
	cs := connect(t, g, nil)
	if res := call(t, cs, toolCall, map[string]any{"name": "mcp__github__create_issue", "arguments": map[string]any{}}); res.IsError {
		t.Fatalf("first call: %s", text(res))
	}
	res := call(t, cs, "run_code", map[string]any{"code": `const out = [];
for (let i = 0; i < 3; i++) { try { await tools.github.create_issue({}); out.push("ok") } catch (e) { out.push(e.message) } }
return out.join("\n")`})
	lines := strings.Split(text(res), "\n")
	if !strings.Contains(text(res), "ok\nok\n") || !strings.Contains(text(res), "limited by "+file+":1 (3/minute): try again in") {
		t.Errorf("a program's calls: %q", lines)
	}
	if res := call(t, cs, toolCall, map[string]any{"name": "mcp__slack__list_channels", "arguments": map[string]any{}}); res.IsError {
		t.Errorf("another server's tool is not limited: %s", text(res))
	}
}

// TestSearchKnowsTheRules: a tool a rule forbids whatever the call is
// neither found nor listed, and named exactly it is refused by the rule;
// a tool a rule always asks about says so in its match; a change of the
// rules file takes effect while serving.
func TestSearchKnowsTheRules(t *testing.T) {
	file := filepath.Join(t.TempDir(), "r.cedar")
	write := func(text string) {
		t.Helper()
		// Written whole, then renamed: the watcher never reads half a file.
		if err := os.WriteFile(file+".new", []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		os.Rename(file+".new", file)
	}
	write(`@message("no posting") forbid (principal, action, resource) when { resource.name == "post_message" };
@ask("Open a pull request?") forbid (principal, action, resource) when { resource.name == "create_pull_request" };`)
	live, err := rules.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	pool := poolWith(t, &upstream.Options{Policies: live}, standardUpstreams(t)...)
	g := newGateway(t, pool.Scope(nil), nil)
	all := newGateway(t, pool.Scope(nil), &Options{Settings: policy.Settings{Mode: policy.ModeStandard}})
	cs := connect(t, g, nil)
	search := func(q string) string {
		return text(call(t, cs, "search_tools", map[string]any{"query": q, "limit": 10}))
	}
	if out := search("post a message to a slack channel"); strings.Contains(out, "mcp__slack__post_message") {
		t.Errorf("search offers a forbidden tool:\n%s", out)
	}
	if names := listNames(t, connect(t, all, nil)); slices.Contains(names, "mcp__slack__post_message") {
		t.Errorf("tools/list lists a forbidden tool: %v", names)
	}
	if res := call(t, cs, toolCall, map[string]any{"name": "mcp__slack__post_message", "arguments": map[string]any{}}); !res.IsError || !strings.Contains(text(res), "forbidden by a rule "+file+":1: no posting") {
		t.Errorf("the forbidden tool by name: %s", text(res))
	}
	if out := search("create a pull request"); !strings.Contains(out, `"asks_person":"Open a pull request?"`) {
		t.Errorf("a tool behind an ask does not say so:\n%s", out)
	}
	write(`@ask("Open a pull request?") forbid (principal, action, resource) when { resource.name == "create_pull_request" };`)
	testenv.Eventually(t, 10*time.Second, "the changed rules to take effect", func() bool {
		return strings.Contains(search("post a message to a slack channel"), "mcp__slack__post_message")
	})
	write(`forbid (principal, action resource);`) // does not load: the last good rules stay
	if res := call(t, cs, toolCall, map[string]any{"name": "mcp__slack__post_message", "arguments": map[string]any{}}); res.IsError {
		t.Errorf("after a bad change, the last good rules: %s", text(res))
	}
}

// TestRulesOnPromptsAndResources: rules that name prompts (Action
// "prompt") and resources (Action "read") hold for them as for calls:
// one a rule forbids whatever the request is not listed (nor found by
// its name), and one a rule forbids by its arguments is refused, naming
// the rule.
func TestRulesOnPromptsAndResources(t *testing.T) {
	live, _ := rulesFile(t, `@message("no prompts with arguments here") forbid (principal, action == Action::"prompt", resource) when { resource.name == "test_prompt_with_arguments" };
@message("not with x") forbid (principal, action == Action::"prompt", resource) when { resource.name == "test_prompt_with_embedded_resource" && context.args has resourceUri && context.args.resourceUri == "x" };
@message("static text is off limits") forbid (principal, action == Action::"read", resource) when { resource.name like "*static-text*" };`)
	pool := poolWith(t, &upstream.Options{Policies: live}, inMemory("fx", mcptest.Fixture()))
	ctx := context.Background()
	g := newGateway(t, pool.Scope(nil), nil)
	cs := connectLegacy(t, g, nil)
	if _, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "test_prompt_with_arguments", Arguments: map[string]string{"arg1": "x", "arg2": "y"}}); err == nil || !strings.Contains(err.Error(), "unknown prompt") {
		t.Errorf("a forbidden prompt: %v", err)
	}
	if _, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "test_prompt_with_embedded_resource", Arguments: map[string]string{"resourceUri": "x"}}); err == nil || !strings.Contains(err.Error(), "not with x") {
		t.Errorf("a prompt forbidden by its arguments: %v", err)
	}
	if _, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "test_simple_prompt"}); err != nil {
		t.Errorf("a permitted prompt: %v", err)
	}
	if _, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "test://static-text"}); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Errorf("a forbidden resource: %v", err)
	}
	// What a rule forbids whatever the request is not listed either.
	prompts, err := cs.ListPrompts(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range prompts.Prompts {
		names = append(names, p.Name)
	}
	if slices.Contains(names, "test_prompt_with_arguments") || !slices.Contains(names, "test_simple_prompt") {
		t.Errorf("prompts listed: %v", names)
	}
	resources, err := cs.ListResources(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var uris []string
	for _, r := range resources.Resources {
		uris = append(uris, r.URI)
	}
	if slices.Contains(uris, "test://static-text") || len(uris) == 0 {
		t.Errorf("resources listed: %v", uris)
	}
}

// rulesFile writes rules to a file of their own and opens them.
func rulesFile(t *testing.T, text string) (*rules.Live, string) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "rules.cedar")
	if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	live, err := rules.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	return live, file
}

// poolWith runs a pool of cfgs with opts until the test ends, once every
// server has started.
func poolWith(t *testing.T, opts *upstream.Options, cfgs ...config.ServerConfig) *upstream.Pool {
	t.Helper()
	pool := upstream.NewPool(cfgs, opts)
	background(t, pool.Run)
	ctx, cancel := context.WithTimeout(context.Background(), testenv.Timeout(2*config.DefaultTimeout))
	defer cancel()
	if err := pool.Wait(ctx); err != nil {
		t.Fatalf("servers did not start: %v", err)
	}
	return pool
}
