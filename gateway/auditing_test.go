package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolshelf/toolshelf/audit"
	"github.com/toolshelf/toolshelf/journal"
	"github.com/toolshelf/toolshelf/store"
)

// With AuditArgs, a record keeps the arguments' values, without the
// servers' secrets; without it, only their hash.
func TestAuditArgs(t *testing.T) {
	for _, keep := range []bool{false, true} {
		l, records := auditLog(t)
		cfg := memServer(t, "github", []json.RawMessage{rawTool("create_issue", "Create a new issue", nil)})
		cfg.Headers = map[string]string{"Authorization": "Bearer tok-0123456789abcdef"}
		g, _ := gatewayFor(t, &Options{Audit: l, AuditArgs: keep}, cfg)
		cs := connect(t, g, nil)
		call(t, cs, toolCall, map[string]any{"name": "mcp__github__create_issue", "arguments": map[string]any{"text": "leaked tok-0123456789abcdef here"}})
		recs := records()
		if len(recs) != 1 {
			t.Fatalf("records: %v", recs)
		}
		r := recs[0]
		if r.ArgsSHA256 == "" || r.Tool != "mcp__github__create_issue" || r.Server != "github" || r.Client != "test" {
			t.Errorf("record: %+v", r)
		}
		switch {
		case strings.Contains(r.Args, "tok-0123456789abcdef"):
			t.Errorf("a secret is in the audit log: %s", r.Args)
		case keep && !strings.Contains(r.Args, "leaked"):
			t.Errorf("the arguments were not kept: %q", r.Args)
		case !keep && r.Args != "":
			t.Errorf("arguments kept without AuditArgs: %q", r.Args)
		}
	}
}

// The operator's log does not grow with the traffic: at the default
// level, searches and calls write nothing (the audit log records calls).
func TestLogQuietUnderTraffic(t *testing.T) {
	var logs bytes.Buffer
	var mu sync.Mutex
	logger := slog.New(slog.NewTextHandler(writerFunc(func(p []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		return logs.Write(p)
	}), &slog.HandlerOptions{Level: slog.LevelInfo}))
	g, _ := gatewayFor(t, &Options{Logger: logger}, memServer(t, "github", []json.RawMessage{rawTool("create_issue", "Create a new issue", nil)}))
	cs := connect(t, g, nil)
	mu.Lock()
	before := logs.Len()
	mu.Unlock()
	for range 200 {
		call(t, cs, toolSearch, map[string]any{"query": "create an issue"})
		call(t, cs, toolCall, map[string]any{"name": "mcp__github__create_issue", "arguments": map[string]any{"text": "x"}})
		call(t, cs, toolCall, map[string]any{"name": "mcp__github__no_such_tool"})
	}
	mu.Lock()
	defer mu.Unlock()
	if grew := logs.Len() - before; grew > 0 {
		t.Errorf("600 requests wrote %d bytes to the log: %.500s", grew, logs.String()[before:])
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// auditLog runs an audit log in a file of its own; records stops it and
// returns what it wrote.
func auditLog(t *testing.T) (l *audit.Log, records func() []audit.Record) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "audit.jsonl")
	l, err := audit.Open(file, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); l.Run(ctx) }()
	t.Cleanup(func() { stop(); <-done })
	return l, func() []audit.Record {
		t.Helper()
		stop()
		<-done
		recs, _, err := audit.Read(file, time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		return recs
	}
}

// A call is acknowledged only when what it promises is kept: while the
// journal cannot take a record (Options.Ready) a call is refused and
// nothing runs; when the flush of its record fails, the call's answer is
// withheld with an error saying it ran. Searches are not held up.
func TestCallsRefusedWithoutJournal(t *testing.T) {
	var mu sync.Mutex
	var ran int
	srv := mcp.NewServer(&mcp.Implementation{Name: "pay", Version: "1"}, nil)
	srv.AddTool(&mcp.Tool{Name: "pay", Description: "Pay an invoice", InputSchema: map[string]any{"type": "object"}}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		mu.Lock()
		ran++
		mu.Unlock()
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "paid"}}}, nil
	})
	var ready, synced error
	g, _ := gatewayFor(t, &Options{
		Ready: func() error { mu.Lock(); defer mu.Unlock(); return ready },
		Sync:  func(context.Context) error { mu.Lock(); defer mu.Unlock(); return synced },
	}, inMemory("pay", srv))
	cs := connect(t, g, nil)
	pay := func() *mcp.CallToolResult {
		return call(t, cs, toolCall, map[string]any{"name": "mcp__pay__pay", "arguments": map[string]any{}})
	}
	if res := pay(); res.IsError || text(res) != "paid" {
		t.Fatalf("a call with a working journal: %s", text(res))
	}
	mu.Lock()
	ready = errors.New("journal: no space left on device")
	mu.Unlock()
	res := pay()
	if !res.IsError || !strings.Contains(text(res), "no space left on device") || !strings.Contains(text(res), "Nothing ran") {
		t.Errorf("a call while the journal is full: %s", text(res))
	}
	if res := call(t, cs, toolSearch, map[string]any{"query": "pay invoice"}); res.IsError {
		t.Errorf("a search while the journal is full: %s", text(res))
	}
	// A program is refused too, before any of its calls runs.
	code, _ := gatewayFor(t, &Options{Code: codeRunner(t), Ready: func() error { mu.Lock(); defer mu.Unlock(); return ready }}, inMemory("pay", srv))
	res = call(t, connect(t, code, nil), "run_code", map[string]any{"code": `return await tools.pay.pay({})`})
	if !res.IsError || !strings.Contains(text(res), "no space left on device") {
		t.Errorf("a program while the journal is full: %s", text(res))
	}
	mu.Lock()
	ready, synced = nil, errors.New("journal: input/output error")
	mu.Unlock()
	if res := pay(); !res.IsError || !strings.Contains(text(res), "the call ran") || strings.Contains(text(res), "paid") {
		t.Errorf("a call whose record could not be flushed: %s", text(res))
	}
	mu.Lock()
	if ran != 2 {
		t.Errorf("the server ran %d calls, want 2 (the refused one did not run)", ran)
	}
	mu.Unlock()
}

// A call whose record the journal did not take is not acknowledged: the
// server ran it, and its answer is withheld with an error saying so.
func TestCallNotAcknowledgedWithoutRecord(t *testing.T) {
	j, err := journal.Open(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	j.Close() // a journal that takes nothing: every Add fails
	log := audit.OpenShared(discardStore{}, &audit.Options{Journal: j})
	srv := mcp.NewServer(&mcp.Implementation{Name: "pay", Version: "1"}, nil)
	ran := make(chan struct{}, 1)
	srv.AddTool(&mcp.Tool{Name: "pay", Description: "Pay an invoice", InputSchema: map[string]any{"type": "object"}}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		ran <- struct{}{}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "paid"}}}, nil
	})
	g, _ := gatewayFor(t, &Options{Audit: log}, inMemory("pay", srv))
	res := call(t, connect(t, g, nil), toolCall, map[string]any{"name": "mcp__pay__pay", "arguments": map[string]any{}})
	if !res.IsError || !strings.Contains(text(res), "the call ran") || strings.Contains(text(res), "paid") {
		t.Errorf("a call whose record the journal refused: %s", text(res))
	}
	select {
	case <-ran:
	default:
		t.Error("the server did not run the call")
	}
}

// discardStore is a shared audit store that takes every batch.
type discardStore struct{}

func (discardStore) AddRecords(context.Context, []store.AuditRow) error { return nil }
func (discardStore) Records(context.Context, time.Time) ([]json.RawMessage, error) {
	return nil, nil
}
func (discardStore) Where() string { return "discard" }
