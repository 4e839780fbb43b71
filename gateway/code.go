package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolshelf/toolshelf/audit"
	"github.com/toolshelf/toolshelf/catalog"
	"github.com/toolshelf/toolshelf/sandbox"
	"github.com/toolshelf/toolshelf/upstream"
)

// Code mode (Options.Code): beside search_tools, run_code runs a program
// the model writes, in which each tool is an async function. The
// program's calls take the path call_tool takes (the profile's catalog,
// quarantine, the audit log marked "via code", learning, metrics and
// traces), and only what the program prints or returns reaches the
// model: a workflow's intermediate results stay out of its context.

const toolCode = sandbox.ToolName

// codeTool is run_code's definition.
func codeTool(l sandbox.Limits) *mcp.Tool {
	return &mcp.Tool{Name: toolCode, Title: "Run code that calls tools", Description: sandbox.Description(l), InputSchema: sandbox.InputSchema, Meta: alwaysLoad}
}

// addCodeTool lists run_code.
func (s *Server) addCodeTool(x *exposure) {
	x.server.AddTool(codeTool(s.opts.Code.Limits()), func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return s.audited(ctx, req, "code", toolCode, func(ctx context.Context) *mcp.CallToolResult {
			return s.runCode(ctx, req)
		}), nil
	})
	x.listed[toolCode] = "meta"
}

// runCode runs a program for the session that sent it.
func (s *Server) runCode(ctx context.Context, req *mcp.CallToolRequest) *mcp.CallToolResult {
	program, err := sandbox.ParseInput(orEmpty(req.Params.Arguments))
	if err != nil {
		return toolError("%v", err)
	}
	ctx, done := bindRequest(ctx)
	defer done()
	if req.Session != nil && !usesRounds(req.Session) {
		// A server's questions during the program's calls go to this
		// client, as they do during call_tool. (A 2026-07-28 client takes
		// questions only as a call's result, which a program cannot
		// pause for: there, such a call fails.)
		ctx = forCaller(ctx, req.Session, req.Params.GetProgressToken())
	}
	// Programs' slots are shared fairly between profiles: one profile's
	// programs waiting on slow tools leave room for another's.
	ctx = sandbox.WithTenant(ctx, s.up.Profile())
	res, err := s.opts.Code.Run(ctx, program, func(ctx context.Context, server, tool string, args json.RawMessage) (json.RawMessage, error) {
		return s.codeCall(ctx, req.Session, server, tool, args)
	})
	if err != nil {
		return toolError("run_code: %v", err)
	}
	s.logger.Debug("code", "calls", res.Calls, "output", len(res.Output), "limit", res.Limit)
	// A program may rebuild a secret from pieces no single call held.
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s.up.Secrets().CutText(res.Text())}}, IsError: res.Error != ""}
}

// codeCall is one tool call of a program: tools.<server>.<tool>(args).
func (s *Server) codeCall(ctx context.Context, ss *mcp.ServerSession, server, tool string, args json.RawMessage) (json.RawMessage, error) {
	// As call_tool does, a tool not there yet is waited for while servers
	// whose tools are unknown are still connecting.
	snap := s.awaitPending(ctx, func(snap *served) bool { return findTool(snap.Catalog, server, tool) != nil })
	e := findTool(snap.Catalog, server, tool)
	if e == nil {
		// Held back by the lock file, or forbidden by a rule whatever the
		// call: the scope says which, and why.
		if _, err := s.up.ResolveTool(server, tool); errors.Is(err, upstream.ErrQuarantined) || errors.Is(err, upstream.ErrForbidden) {
			s.logger.Warn("a program's call refused", "tool", cut(sandbox.Accessor(server, tool), echoLimit), "error", err)
			return nil, err
		} else if errors.Is(err, upstream.ErrServerDown) {
			return nil, err
		}
		return nil, fmt.Errorf("there is no tool %s: search_tools finds the tools you can call", cut(sandbox.Accessor(server, tool), echoLimit))
	}
	args, _, err := normalizeArgs(args, e)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", sandbox.Accessor(server, tool), err)
	}
	start := time.Now()
	note := &callNote{}
	ctx = context.WithValue(ctx, callNoteKey{}, note)
	res := s.reach(ctx, ss, &upstream.Call{Tool: e, Args: args, Via: "code"})
	if note.args != nil {
		args = note.args
	}
	if s.opts.Audit != nil {
		if err := s.audit(ctx, ss, audit.Record{Kind: "call", Tool: e.Name, Via: "code", Rank: note.rank, Decision: note.decision, Rule: note.rule}, args, start, res); err != nil {
			return nil, fmt.Errorf("%s ran, but its record could not be kept (%v): its answer is withheld", sandbox.Accessor(server, tool), err)
		}
	}
	return sandbox.Value(res)
}

// findTool finds a callable tool by its server's name and its own.
func findTool(c *catalog.Catalog, server, tool string) *catalog.Entry {
	if e, ok := c.Tool(server, tool); ok && !e.Unverified {
		return e
	}
	return nil
}

// outputSchema is a tool's output schema, if it has one.
func outputSchema(e *catalog.Entry) json.RawMessage {
	var t struct {
		OutputSchema json.RawMessage `json:"outputSchema"`
	}
	_ = json.Unmarshal(e.Raw, &t)
	return t.OutputSchema
}
