package gateway

import (
	"context"
	"encoding/json"
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
	if res := call(t, cs, toolCall, args); !res.IsError || !strings.Contains(text(res), "cannot count this call") {
		t.Fatalf("a call the ledger cannot count: %s", text(res))
	}
}
