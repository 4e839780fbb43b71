package console

import (
	"context"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolshelf/toolshelf/ledger"
)

// The Usage page: spend per person per day as a chart, each budget and
// how full it is, the most-used tools; what people's names hold is
// escaped.
func TestUsagePage(t *testing.T) {
	book, err := ledger.OpenFile(filepath.Join(t.TempDir(), ledger.FileName))
	if err != nil {
		t.Fatal(err)
	}
	l := ledger.New(book, &ledger.Options{Budgets: []ledger.Budget{{For: "person:alice@example.com", USD: 1, Per: "day"}}})
	defer l.Close()
	ctx := context.Background()
	add := func(e *ledger.Entry) {
		if _, err := l.Admit(ctx, e); err != nil {
			t.Fatal(err)
		}
		if err := l.Settle(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	for range 2 {
		add(&ledger.Entry{Kind: ledger.KindRound, Who: ledger.Who{Person: "alice@example.com"}, Model: "claude-opus-4-8", Tokens: ledger.Tokens{Input: 10_000, Output: 10_000}}) // $0.30
	}
	add(&ledger.Entry{Kind: ledger.KindRound, Who: ledger.Who{Person: `<script>alert(1)</script>`}, Model: "claude-haiku-4-5", Tokens: ledger.Tokens{Input: 1000}})
	for range 3 {
		add(&ledger.Entry{Kind: ledger.KindCall, Who: ledger.Who{Person: "alice@example.com"}, Server: "github", Tool: "mcp__github__create_issue", Outcome: "ok"})
	}
	base := consoleWith(t, &Options{Ledger: l})
	status, page := get(t, http.DefaultClient, base+"/console/usage")
	for _, want := range []string{
		`<rect class="c0"`, "alice@example.com: $0.60", // the chart and its legend
		"person:alice@example.com/day", `value="0.6"`, // the budget, 60% full
		"mcp__github__create_issue: 3 calls", "20,000",
		"&lt;script&gt;alert(1)&lt;/script&gt;",
		`aria-current="page">Usage`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	if status != 200 || strings.Contains(page, "<script>alert") {
		t.Errorf("%d, or a person's name unescaped:\n%s", status, page)
	}
	if _, page := get(t, http.DefaultClient, consoleWith(t, &Options{})+"/console/usage"); !strings.Contains(page, "keeps no ledger") {
		t.Errorf("without a ledger:\n%s", page)
	}
}
