package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolshelf/toolshelf/audit"
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
