package gateway

import (
	"context"
	"encoding/json"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolshelf/toolshelf/audit"
)

// audited runs a tools/call request's handler and, with an audit log,
// writes one record of it: whatever the outcome, a request is one line.
// tool is the tool the request is about (the qualified name call_tool
// was given, or the listed tool); kind is "call" or "search".
func (s *Server) audited(ctx context.Context, req *mcp.CallToolRequest, kind, tool string, handle func(context.Context) *mcp.CallToolResult) *mcp.CallToolResult {
	if s.opts.Audit == nil {
		return handle(ctx)
	}
	start := time.Now()
	note := &callNote{}
	res := handle(context.WithValue(ctx, callNoteKey{}, note))
	r := audit.Record{Rank: note.rank,
		Time: start.UTC(), Kind: kind, Profile: s.up.Profile(), Tool: tool,
		DurationMS:   float64(time.Since(start).Microseconds()) / 1000,
		RequestBytes: len(req.Params.Arguments), ArgsSHA256: audit.Hash(req.Params.Arguments),
		Outcome: "ok",
	}
	if s.opts.AuditArgs {
		r.Args = cut(s.up.Redact(string(req.Params.Arguments)), maxAuditArgs)
	}
	if req.Session != nil {
		if p := req.Session.InitializeParams(); p != nil && p.ClientInfo != nil {
			r.Client, r.ClientVersion = cut(p.ClientInfo.Name, echoLimit), cut(p.ClientInfo.Version, echoLimit)
		}
	}
	if snap := s.state.Load(); snap != nil && kind == "call" {
		if e, ok := snap.Catalog.Find(tool); ok {
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
	return res
}

// callNote carries what the call's handler learns of it (noteCall) to
// its audit record.
type callNote struct{ rank int }

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
