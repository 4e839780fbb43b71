package gateway

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

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
	pool := upstream.NewPool(standardUpstreams(t), &upstream.Options{Rules: []upstream.Rule{rule}})
	background(t, pool.Run)
	ctx, cancel := context.WithTimeout(context.Background(), testenv.Timeout(2*upstream.DefaultTimeout))
	defer cancel()
	if err := pool.Wait(ctx); err != nil {
		t.Fatal(err)
	}
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
