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
// was given, or the listed tool); kind is "call", "search" or "code". A
// call is not run while the journal cannot take its record (Options.Ready):
// it is refused, saying why.
func (s *Server) audited(ctx context.Context, req *mcp.CallToolRequest, kind, tool string, handle func(context.Context) *mcp.CallToolResult) *mcp.CallToolResult {
	if kind != "search" && s.opts.Ready != nil {
		if err := s.opts.Ready(); err != nil {
			s.logger.Error("a call refused: the journal cannot keep what its answer would promise", "error", err)
			return toolError("toolshelf refused this call: it cannot keep a durable record of it (%v). Nothing ran; the operator must make the journal writable (free its disk).", err)
		}
	}
	if s.opts.Audit == nil {
		return s.durable(ctx, kind, handle(ctx), nil)
	}
	start := time.Now()
	note := &callNote{}
	res := handle(context.WithValue(ctx, callNoteKey{}, note))
	args := req.Params.Arguments
	if note.args != nil {
		args = note.args
	}
	err := s.audit(ctx, req.Session, audit.Record{Kind: kind, Tool: tool, Rank: note.rank, Decision: note.decision, Rule: note.rule}, args, start, res)
	return s.durable(ctx, kind, res, err)
}

// durable returns res once what the audit log and learning took for it
// is on disk (Options.Sync): the answer to a call promises nothing a
// crash could lose. A search's record is in the journal file at once (a
// killed process loses none) and goes to disk with the next call's flush:
// flushing for searches too costs a disk wait per search for a record
// that acts on nothing. When the record did not reach the journal
// (recorded), or the flush fails, the call is not acknowledged: the
// answer is an error that says the call ran and its record is not kept.
func (s *Server) durable(ctx context.Context, kind string, res *mcp.CallToolResult, recorded error) *mcp.CallToolResult {
	if kind == "search" {
		return res
	}
	err := recorded
	if err == nil && s.opts.Sync != nil {
		err = s.opts.Sync(context.WithoutCancel(ctx))
	}
	if err != nil {
		s.logger.Error("a call's record is not on disk; its answer is withheld", "error", err)
		return toolError("the call ran, but toolshelf could not write its record to disk (%v), so its answer is withheld: check the outcome before calling again.", err)
	}
	return res
}

// audit completes a record of a call that started at start, with args
// and its result, and adds it to the audit log; the error is a record the
// journal did not take.
func (s *Server) audit(ctx context.Context, ss *mcp.ServerSession, r audit.Record, args json.RawMessage, start time.Time, res *mcp.CallToolResult) error {
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
	return s.opts.Audit.Add(r)
}

// callNote carries what the call's handler learns of it (noteCall) to
// its audit record.
type callNote struct {
	rank           int
	decision, rule string          // a refusal by the operators' rules (upstream.Refusal)
	args           json.RawMessage // the arguments in their one form, as the server got them
}

type callNoteKey struct{}

// maxAuditArgs bounds the argument values kept in one audit record.
const maxAuditArgs = 64 << 10
