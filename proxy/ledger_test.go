package proxy

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolshelf/toolshelf/ledger"
	"github.com/toolshelf/toolshelf/messages"
	"github.com/toolshelf/toolshelf/telemetry"
)

func tempLedger(t *testing.T, budgets ...ledger.Budget) *ledger.Ledger {
	t.Helper()
	book, err := ledger.OpenFile(filepath.Join(t.TempDir(), ledger.FileName))
	if err != nil {
		t.Fatal(err)
	}
	l := ledger.New(book, &ledger.Options{Budgets: budgets})
	t.Cleanup(func() { l.Close() })
	return l
}

// entries are the ledger's entries, the voided left out.
func entries(t *testing.T, l *ledger.Ledger) []ledger.Entry {
	t.Helper()
	all, err := l.Entries(context.Background(), time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	var out []ledger.Entry
	for _, e := range all {
		if !e.Void {
			out = append(out, e)
		}
	}
	return out
}

// Every round the proxy sends is in the ledger with the usage its answer
// reported: the client's request, and the search round the proxy made by
// itself (marked own), whole or streamed, searched or passed untouched.
// An answer without usage, and a stream cut short, are counted at the
// most they could have cost; a request the proxy refused, and an API
// error, count for nothing.
func TestLedgerCountsEveryRound(t *testing.T) {
	search := func(messages.Request) (int, string) {
		return 200, reply("tool_use", 1000, 20, toolUse("s1", messages.DefaultSearchTool, `{"query":"create a github issue"}`))
	}
	call := func(messages.Request) (int, string) {
		return 200, reply("tool_use", 1500, 30, toolUse("c1", createIssue, `{"title":"crash"}`))
	}
	few := []messages.Tool{{Name: "Read", InputSchema: json.RawMessage(`{"type":"object"}`)}}
	for _, c := range []struct {
		name   string
		script []func(messages.Request) (int, string)
		tools  []messages.Tool
		extra  string
		status int
		want   []ledger.Tokens // per round, in order
		own    []bool
		out    []string
	}{
		{name: "searched", script: []func(messages.Request) (int, string){search, call}, tools: builtinTools(), status: 200,
			want: []ledger.Tokens{{Input: 1000, Output: 20}, {Input: 1500, Output: 30}}, own: []bool{false, true}, out: []string{"ok", "ok"}},
		{name: "searched, streamed", script: []func(messages.Request) (int, string){search, call}, tools: builtinTools(), extra: `,"stream":true`, status: 200,
			want: []ledger.Tokens{{Input: 1000, Output: 20}, {Input: 1500, Output: 30}}, own: []bool{false, true}, out: []string{"ok", "ok"}},
		{name: "passed", script: []func(messages.Request) (int, string){call}, tools: few, status: 200,
			want: []ledger.Tokens{{Input: 1500, Output: 30}}, own: []bool{false}, out: []string{"ok"}},
		{name: "passed, streamed", script: []func(messages.Request) (int, string){call}, tools: few, extra: `,"stream":true`, status: 200,
			want: []ledger.Tokens{{Input: 1500, Output: 30}}, own: []bool{false}, out: []string{"ok"}},
		{name: "no usage", script: []func(messages.Request) (int, string){func(messages.Request) (int, string) {
			return 200, `{"id":"m","type":"message","role":"assistant","content":[{"type":"text","text":"hi"}],"stop_reason":"end_turn"}`
		}}, tools: few, status: 200, want: []ledger.Tokens{{Input: -1, Output: 1024}}, own: []bool{false}, out: []string{"usage not reported"}},
		{name: "cut", script: []func(messages.Request) (int, string){func(messages.Request) (int, string) { return 200, "CUT" }}, tools: few, extra: `,"stream":true`, status: 200,
			want: []ledger.Tokens{{Input: 1, Output: 1024}}, own: []bool{false}, out: []string{"cut short"}},
		{name: "overloaded", script: []func(messages.Request) (int, string){func(messages.Request) (int, string) {
			return 529, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`
		}}, tools: few, status: 529},
	} {
		t.Run(c.name, func(t *testing.T) {
			l := tempLedger(t)
			api := newFakeAPI(t, c.script...)
			url := startProxy(t, api, &Options{Ledger: l})
			body := request(t, c.tools, `[{"role":"user","content":"Open an issue."}]`, c.extra)
			status, _, _ := post(t, url+"/v1/messages", body, nil)
			if status != c.status {
				t.Fatalf("status %d, want %d", status, c.status)
			}
			got := entries(t, l)
			if len(got) != len(c.want) {
				t.Fatalf("%d entries, want %d: %+v", len(got), len(c.want), got)
			}
			for i, e := range got {
				want := c.want[i]
				if want.Input == -1 {
					want.Input = int64(len(body)) // every byte a token: the most
				}
				if e.Tokens != want || e.Own != c.own[i] || e.Held || e.Outcome != c.out[i] || e.Model != "claude-sonnet-4-5" {
					t.Errorf("round %d: %+v\nwant tokens %+v, own %v, outcome %q", i+1, e, want, c.own[i], c.out[i])
				}
				if e.Nanos == 0 {
					t.Errorf("round %d is not priced", i+1)
				}
			}
		})
	}
	t.Run("refused by the proxy", func(t *testing.T) {
		l := tempLedger(t)
		url := startProxy(t, newFakeAPI(t), &Options{Ledger: l})
		if status, _, _ := post(t, url+"/v1/messages", []byte(`{"model":"claude-sonnet-4-5","max_tokens":5,`), nil); status != 400 {
			t.Fatalf("status %d", status)
		}
		if got := entries(t, l); len(got) != 0 {
			t.Errorf("a request never sent is counted: %+v", got)
		}
	})
}

// A hidden search round's message_stop that comes on its own, after the
// proxy read the round through its message_delta (as a stream's last
// bytes may), is read before the round is closed: the round is counted
// ended, not cut short. The fake API holds the message_stop back until
// the next round arrives or half a second passes; a proxy that closed
// the round at its message_delta sent the next round first (and failed
// the streamed case above now and then, as the bytes happened to come).
func TestLedgerReadsAHiddenRoundsTail(t *testing.T) {
	search := func(messages.Request) (int, string) {
		return 200, reply("tool_use", 1000, 20, toolUse("s1", messages.DefaultSearchTool, `{"query":"create a github issue"}`))
	}
	call := func(messages.Request) (int, string) {
		return 200, reply("tool_use", 1500, 30, toolUse("c1", createIssue, `{"title":"crash"}`))
	}
	l := tempLedger(t)
	api := newFakeAPI(t, search, call)
	api.holdStop = 500 * time.Millisecond
	url := startProxy(t, api, &Options{Ledger: l})
	body := request(t, builtinTools(), `[{"role":"user","content":"Open an issue."}]`, `,"stream":true`)
	if status, _, _ := post(t, url+"/v1/messages", body, nil); status != 200 {
		t.Fatalf("status %d", status)
	}
	got := entries(t, l)
	if len(got) != 2 || got[0].Outcome != "ok" || got[1].Outcome != "ok" {
		t.Fatalf("rounds %+v, want two ended ok", got)
	}
}

// With callers of its own, the proxy counts each request under the
// caller's profile, sends its own key upstream (never the caller's
// token), and refuses the request past a budget before it is sent, with
// 429 in the API's error shape (the Messages API's, or Chat
// Completions'), naming the budget, and retry-after; another profile is
// not held to it. The last request under it carries a warning.
func TestBudgetRefusesAtTheExactRequest(t *testing.T) {
	answer := func(messages.Request) (int, string) { return 200, reply("end_turn", 100, 10, text("hi")) }
	api := newFakeAPI(t, answer, answer, answer, answer)
	l := tempLedger(t, ledger.Budget{For: "profile:ci", Requests: 3, Per: "hour"})
	url := startProxy(t, api, &Options{Ledger: l, APIKey: "sk-proxy-own", Callers: &Callers{Profiles: []CallerProfile{
		{Name: "ci", Tokens: []string{"tok-ci"}}, {Name: "dev", Tokens: []string{"tok-dev"}, APIKey: "sk-dev-own"},
	}}})
	body := request(t, nil, `[{"role":"user","content":"hi"}]`, "")
	for i := range 3 {
		status, hdr, b := post(t, url+"/v1/messages", body, map[string]string{"X-Api-Key": "tok-ci"})
		if status != 200 {
			t.Fatalf("request %d: %d %s", i+1, status, b)
		}
		if warned := hdr.Get(WarningHeader) != ""; warned != (i == 2) {
			t.Errorf("request %d: warning %q", i+1, hdr.Get(WarningHeader))
		}
	}
	status, hdr, b := post(t, url+"/v1/messages", body, map[string]string{"X-Api-Key": "tok-ci"})
	var e errorBody
	json.Unmarshal(b, &e)
	if status != 429 || e.Type != "error" || e.Error.Type != "rate_limit_error" || !strings.Contains(e.Error.Message, "profile:ci/hour") ||
		!strings.Contains(e.Error.Message, "3 requests") || hdr.Get("Retry-After") == "" || hdr.Get("X-Should-Retry") != "false" {
		t.Fatalf("the 4th request: %d %v %s", status, hdr, b)
	}
	// Chat Completions' shape, before the upstream is asked.
	status, _, b = post(t, url+"/v1/chat/completions", []byte(`{"model":"gpt-5.5","messages":[{"role":"user","content":"hi"}]}`), map[string]string{"Authorization": "Bearer tok-ci", "X-Api-Key": ""})
	var oe struct {
		Error struct{ Type, Message string }
	}
	json.Unmarshal(b, &oe)
	if status != 429 || oe.Error.Type != "budget_exceeded" || !strings.Contains(oe.Error.Message, "profile:ci/hour") {
		t.Fatalf("chat completions past the budget: %d %s", status, b)
	}
	if status, _, b := post(t, url+"/v1/messages", body, map[string]string{"X-Api-Key": "tok-dev"}); status != 200 {
		t.Fatalf("another profile: %d %s", status, b)
	}
	for _, bad := range []map[string]string{{"X-Api-Key": "tok-nobody"}, {"X-Api-Key": ""}} {
		if status, _, _ := post(t, url+"/v1/messages", body, bad); status != 401 {
			t.Errorf("%v: %d, want 401", bad, status)
		}
	}
	api.mu.Lock()
	keys := strings.Join(api.keys, ",")
	api.mu.Unlock()
	if len(api.keys) != 4 || strings.Contains(keys, "tok-") || strings.Count(keys, "sk-proxy-own") != 3 || strings.Count(keys, "sk-dev-own") != 1 {
		t.Errorf("the upstream got keys %s: want the proxy's own 3 times, and dev's own once", keys)
	}
	rows, _ := ledger.Group(entries(t, l), "profile")
	if len(rows) != 2 || rows[0].Key != "ci" || rows[0].Requests != 3 || rows[1].Key != "dev" || rows[1].Requests != 1 {
		t.Errorf("rows %+v", rows)
	}

	// GET /usage: a caller sees their own, and their budget's state.
	get := func(path, token string) (int, []byte) {
		req, _ := http.NewRequest("GET", url+path, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}
	var rep ledger.Report
	status, b = get("/usage?by=profile", "tok-ci")
	if json.Unmarshal(b, &rep) != nil || status != 200 || len(rep.Rows) != 1 || rep.Rows[0].Key != "ci" || rep.Rows[0].Requests != 3 ||
		len(rep.Budgets) != 1 || rep.Budgets[0].Share != 1 || rep.Budgets[0].Spent.Requests != 3 {
		t.Errorf("ci's /usage: %d %s", status, b)
	}
	status, b = get("/usage?by=profile", "tok-dev")
	rep = ledger.Report{}
	if json.Unmarshal(b, &rep) != nil || status != 200 || len(rep.Rows) != 1 || rep.Rows[0].Key != "dev" || len(rep.Budgets) != 0 {
		t.Errorf("dev's /usage: %d %s", status, b)
	}
	for _, bad := range []string{"", "tok-nobody"} {
		if status, _ := get("/usage", bad); status != 401 {
			t.Errorf("/usage with %q: %d", bad, status)
		}
	}
	if status, _ := get("/usage?by=colour", "tok-ci"); status != 400 {
		t.Errorf("/usage?by=colour: %d", status)
	}
}

// /metrics counts tokens and cost by profile and model; a model the
// price table lacks is "other", so that made-up names add no series.
func TestLedgerMetrics(t *testing.T) {
	answer := func(messages.Request) (int, string) { return 200, reply("end_turn", 100, 10, text("hi")) }
	api := newFakeAPI(t, answer, answer)
	tel, err := telemetry.New(context.Background(), &telemetry.Options{Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	url := startProxy(t, api, &Options{Ledger: tempLedger(t), Telemetry: tel})
	post(t, url+"/v1/messages", request(t, nil, `[{"role":"user","content":"hi"}]`, ""), nil)
	post(t, url+"/v1/messages", []byte(`{"model":"made-up-model-1234","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`), nil)
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	body := string(b)
	for _, want := range []string{
		`toolshelf_proxy_tokens_total{kind="input",model="claude-sonnet-4-5",`,
		`toolshelf_proxy_tokens_total{kind="output",model="other",`,
		`toolshelf_proxy_cost_USD_total{model="claude-sonnet-4-5",`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if strings.Contains(body, "made-up-model") {
		t.Error("a client's model name became a label")
	}
}

// A ledger that cannot count refuses the request before it is sent: 503
// in the API's shape, without naming why (the log has it), and the
// upstream is not asked.
func TestLedgerThatCannotCountRefuses(t *testing.T) {
	api := newFakeAPI(t)
	l := tempLedger(t)
	url := startProxy(t, api, &Options{Ledger: l})
	l.Close()
	status, hdr, b := post(t, url+"/v1/messages", request(t, nil, `[{"role":"user","content":"hi"}]`, ""), nil)
	var e errorBody
	json.Unmarshal(b, &e)
	if status != 503 || e.Error.Type != "api_error" || !strings.Contains(e.Error.Message, "cannot count this request") || hdr.Get("Retry-After") == "" || strings.Contains(e.Error.Message, "closed") {
		t.Fatalf("%d %v %s", status, hdr, b)
	}
	api.mu.Lock()
	defer api.mu.Unlock()
	if len(api.reqs) != 0 {
		t.Errorf("the upstream was asked %d times", len(api.reqs))
	}
}
