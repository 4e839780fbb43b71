package gateway

import (
	"context"
	"encoding/json"
	"github.com/toolshelf/toolshelf/identity"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolshelf/toolshelf/audit"
)

// audited runs a tools/call request's handler and, with an audit log,
// writes one record of it: whatever the outcome, a request is one line.
// tool is the tool the request is about (the qualified name call_tool
// was given, or the listed tool); kind is "call", "search" or "code".
func (s *Server) audited(ctx context.Context, req *mcp.CallToolRequest, kind, tool string, handle func(context.Context) *mcp.CallToolResult) *mcp.CallToolResult {
	if s.opts.Audit == nil {
		return s.durable(ctx, kind, handle(ctx))
	}
	start := time.Now()
	note := &callNote{}
	res := handle(context.WithValue(ctx, callNoteKey{}, note))
	s.audit(ctx, req.Session, audit.Record{Kind: kind, Tool: tool, Rank: note.rank, Decision: note.decision, Rule: note.rule}, req.Params.Arguments, start, res)
	return s.durable(ctx, kind, res)
}

// durable returns res once what the audit log and learning took for it
// is on disk (Options.Sync): the answer to a call promises nothing a
// crash could lose. A search's record is in the journal file at once (a
// killed process loses none) and goes to disk with the next call's flush:
// flushing for searches too costs a disk wait per search for a record
// that acts on nothing. A sync that fails is logged; the answer goes.
func (s *Server) durable(ctx context.Context, kind string, res *mcp.CallToolResult) *mcp.CallToolResult {
	if s.opts.Sync != nil && kind != "search" {
		if err := s.opts.Sync(context.WithoutCancel(ctx)); err != nil {
			s.logger.Warn("the journal could not be flushed to disk; the answer goes, and what it promised waits in the file", "error", err)
		}
	}
	return res
}

// audit completes a record of a call that started at start, with args
// and its result, and adds it to the audit log.
func (s *Server) audit(ctx context.Context, ss *mcp.ServerSession, r audit.Record, args json.RawMessage, start time.Time, res *mcp.CallToolResult) {
	r.Time, r.Profile = start.UTC(), s.up.Profile()
	if p := identity.PersonOf(ctx); p != nil {
		r.Subject, r.Email = cut(p.Subject, echoLimit), cut(p.Email, echoLimit)
	}
	r.DurationMS = float64(time.Since(start).Microseconds()) / 1000
	r.RequestBytes, r.ArgsSHA256, r.Outcome = len(args), audit.Hash(args), "ok"
	if s.opts.AuditArgs {
		r.Args = cut(s.up.Redact(string(args)), maxAuditArgs)
	}
	if ss != nil {
		if p := ss.InitializeParams(); p != nil && p.ClientInfo != nil {
			r.Client, r.ClientVersion = cut(p.ClientInfo.Name, echoLimit), cut(p.ClientInfo.Version, echoLimit)
		}
	}
	if snap := s.state.Load(); snap != nil && r.Kind == "call" {
		if e, ok := snap.Catalog.Find(r.Tool); ok {
			r.Tool, r.Server = e.Name, e.Server
		}
	}
	switch {
	case ctx.Err() != nil:
		r.Outcome = "cancelled"
	case res.IsError:
		r.Outcome = "tool_error"
	}
	if b, err := json.Marshal(res); err == nil {
		r.ResponseBytes = len(b)
	}
	s.opts.Audit.Add(r)
}

// callNote carries what the call's handler learns of it (noteCall) to
// its audit record.
type callNote struct {
	rank           int
	decision, rule string // a refusal by the operators' rules (upstream.Refusal)
}

type callNoteKey struct{}

// maxAuditArgs bounds the argument values kept in one audit record.
const maxAuditArgs = 64 << 10

// calledName reads the tool name call_tool was given, for the record.
func calledName(raw json.RawMessage) string {
	var in struct {
		Name string `json:"name"`
	}
	_ = json.Unmarshal(raw, &in)
	return cut(in.Name, echoLimit)
}
