package gateway

import (
	"context"
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolshelf/toolshelf/ledger"
)

// Every call is counted under its profile with its outcome; a call past
// a tool-call budget is refused as the call's error, naming the budget,
// and nothing runs; a ledger that cannot count refuses the call too.
func TestCallsCountedAndBudgeted(t *testing.T) {
	book, err := ledger.OpenFile(filepath.Join(t.TempDir(), ledger.FileName))
	if err != nil {
		t.Fatal(err)
	}
	l := ledger.New(book, &ledger.Options{Budgets: []ledger.Budget{{For: "everyone", ToolCalls: 2, Per: "day"}}})
	cfg := memServer(t, "github", []json.RawMessage{rawTool("create_issue", "Create a new issue", nil)})
	g, _ := gatewayFor(t, &Options{Ledger: l}, cfg)
	cs := connect(t, g, nil)
	args := map[string]any{"name": "mcp__github__create_issue", "arguments": map[string]any{"title": "crash"}}
	for i := range 2 {
		if res := call(t, cs, toolCall, args); res.IsError {
			t.Fatalf("call %d: %s", i+1, text(res))
		}
	}
	res := call(t, cs, toolCall, args)
	if !res.IsError || !strings.Contains(text(res), "everyone/day") || !strings.Contains(text(res), "2 tool calls") || !strings.Contains(text(res), "Nothing ran") {
		t.Fatalf("the third call: %s", text(res))
	}
	entries, err := l.Entries(context.Background(), time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 2 {
		t.Fatalf("%d entries, want the 2 calls that ran: %+v", len(entries), entries)
	}
	for _, e := range entries {
		if e.Kind != ledger.KindCall || e.Server != "github" || e.Tool != "mcp__github__create_issue" || e.Outcome != "ok" || e.Held || e.Profile == "" {
			t.Errorf("entry %+v", e)
		}
	}
	l.Close()
	if res := call(t, cs, toolCall, args); !res.IsError || !strings.Contains(text(res), "cannot count this call in its ledger just now") {
		t.Fatalf("a call the ledger cannot count: %s", text(res))
	}
}

// GET /usage: the admin token reads everyone's usage, a profile's token
// that profile's own, another profile's token none of it, no token
// nothing.
func TestUsageRoute(t *testing.T) {
	book, err := ledger.OpenFile(filepath.Join(t.TempDir(), ledger.FileName))
	if err != nil {
		t.Fatal(err)
	}
	l := ledger.New(book, nil)
	defer l.Close()
	g, _ := gatewayFor(t, &Options{Ledger: l}, memServer(t, "github", []json.RawMessage{rawTool("create_issue", "Create a new issue", nil)}))
	cs := connect(t, g, nil)
	for range 2 {
		call(t, cs, toolCall, map[string]any{"name": "mcp__github__create_issue", "arguments": map[string]any{}})
	}
	url := httpGateway(t, g, &HTTPOptions{AdminToken: "adm1n", Tokens: map[string]string{"tok-mine": g.up.Profile(), "tok-other": "other"}})
	get := func(token string) (int, ledger.Report) {
		req, _ := http.NewRequest("GET", url+UsagePath+"?by=tool", nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var rep ledger.Report
		json.NewDecoder(resp.Body).Decode(&rep)
		return resp.StatusCode, rep
	}
	for token, want := range map[string]int64{"adm1n": 2, "tok-mine": 2, "tok-other": 0} {
		status, rep := get(token)
		var calls int64
		for _, r := range rep.Rows {
			calls += r.ToolCalls
		}
		if status != 200 || calls != want {
			t.Errorf("%s: %d, %d calls, want %d: %+v", token, status, calls, want, rep)
		}
	}
	if status, _ := get("wrong"); status != 401 {
		t.Errorf("a wrong token: %d", status)
	}
	if status, _ := get(""); status != 401 {
		t.Errorf("no token: %d", status)
	}
}
