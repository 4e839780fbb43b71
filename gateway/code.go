package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolshelf/toolshelf/audit"
	"github.com/toolshelf/toolshelf/catalog"
	"github.com/toolshelf/toolshelf/sandbox"
)

// Code mode (Options.Code): beside search_tools, run_code runs a program
// the model writes, in which each tool is an async function. The
// program's calls take the path call_tool takes (the profile's catalog,
// quarantine, the audit log marked "via code", learning, metrics and
// traces), and only what the program prints or returns reaches the
// model: a workflow's intermediate results stay out of its context.

const toolCode = "run_code"

var codeSchema = json.RawMessage(`{
  "type": "object",
  "properties": {
    "code": {"type": "string", "description": "The body of an async JavaScript function. Call tools as await tools.<server>.<tool>({...}), print with console.log, and return a value if you like."}
  },
  "required": ["code"],
  "additionalProperties": false
}`)

// codeTool is run_code's definition; limits fill in its description.
func codeTool(l sandbox.Limits) *mcp.Tool {
	return &mcp.Tool{
		Name:  toolCode,
		Title: "Run code that calls tools",
		Description: "Run a JavaScript program that calls tools and returns only what it prints or returns. " +
			"Use it when a task takes several calls or when results need filtering, counting or joining: " +
			"intermediate results stay in the program instead of filling the conversation. " +
			"Find tools with search_tools first; each match has a declaration such as " +
			"`tools.github.list_issues(args: {...}): Promise<...>`. In the program, `await tools.<server>.<tool>(args)` " +
			"returns the tool's structured result when it declares one, else its text (parsed when it is JSON); a tool error throws. " +
			"console.log prints; a returned value is printed last. There is no file system, network, require, process or timers. " +
			fmt.Sprintf("Limits: %v of CPU, %v in all, %d MiB of memory, %d tool calls, %d bytes of output (the rest is cut).",
				l.CPU, l.Wall, l.Memory>>20, l.Calls, l.Output),
		InputSchema: codeSchema,
		Meta:        alwaysLoad,
	}
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
	var in struct {
		Code *string `json:"code"`
	}
	if err := json.Unmarshal(orEmpty(req.Params.Arguments), &in); err != nil || in.Code == nil || strings.TrimSpace(*in.Code) == "" {
		return toolError(`run_code: "code" is required: the body of an async JavaScript function`)
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
	res, err := s.opts.Code.Run(ctx, *in.Code, func(ctx context.Context, server, tool string, args json.RawMessage) (json.RawMessage, error) {
		return s.codeCall(ctx, req.Session, server, tool, args)
	})
	if err != nil {
		return toolError("run_code: %v", err)
	}
	s.logger.Info("code", "calls", res.Calls, "output", len(res.Output), "limit", res.Limit)
	text := res.Output
	if res.Error != "" {
		text += "\nError: " + res.Error
	}
	if text == "" {
		text = "(the program printed and returned nothing)"
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}, IsError: res.Error != ""}
}

// codeCall is one tool call of a program: tools.<server>.<tool>(args).
func (s *Server) codeCall(ctx context.Context, ss *mcp.ServerSession, server, tool string, args json.RawMessage) (json.RawMessage, error) {
	snap := s.state.Load()
	e := findTool(snap.Catalog, server, tool)
	if e == nil {
		for _, h := range s.up.Quarantined() {
			if h.Server == server && h.Tool == tool {
				s.logger.Warn("a program's call to a quarantined tool refused", "tool", h.Name, "status", h.Status)
				return nil, errors.New(h.Message())
			}
		}
		return nil, fmt.Errorf("there is no tool %s: search_tools finds the tools you can call", cut(sandbox.Accessor(server, tool), echoLimit))
	}
	args, err := normalizeArgs(args, e)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", sandbox.Accessor(server, tool), err)
	}
	start := time.Now()
	note := &callNote{}
	ctx = context.WithValue(ctx, callNoteKey{}, note)
	res := s.call(ctx, e.Name, args)
	s.noteCall(ctx, ss, e.Name, e.Server, !res.IsError)
	if s.opts.Audit != nil {
		s.audit(ctx, ss, audit.Record{Kind: "call", Tool: e.Name, Via: "code", Rank: note.rank}, args, start, res)
	}
	return resultValue(res)
}

// findTool finds a callable tool by its server's name and its own.
func findTool(c *catalog.Catalog, server, tool string) *catalog.Entry {
	for e := range c.All() {
		if e.Server == server && e.Tool == tool && !e.Unverified {
			return e
		}
	}
	return nil
}

// resultValue is what a program's await gets of a tool's result: its
// structured content, else its text (the JSON it holds, when it is
// JSON), else its content blocks; a tool error is an error.
func resultValue(res *mcp.CallToolResult) (json.RawMessage, error) {
	var text strings.Builder
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			text.WriteString(t.Text)
		}
	}
	if res.IsError {
		return nil, fmt.Errorf("%s", cut(text.String(), 4096))
	}
	if res.StructuredContent != nil {
		return json.Marshal(res.StructuredContent)
	}
	if text.Len() > 0 || len(res.Content) == 0 {
		if t := strings.TrimSpace(text.String()); json.Valid([]byte(t)) && t != "" {
			return json.RawMessage(t), nil
		}
		return json.Marshal(text.String())
	}
	return json.Marshal(res.Content)
}

// outputSchema is a tool's output schema, if it has one.
func outputSchema(e *catalog.Entry) json.RawMessage {
	var t struct {
		OutputSchema json.RawMessage `json:"outputSchema"`
	}
	_ = json.Unmarshal(e.Raw, &t)
	return t.OutputSchema
}
