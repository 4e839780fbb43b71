// Package mcptest provides MCP servers for tests: servers built from real
// tools/list output (testdata catalog files), and a scriptable stdio server
// that a test binary runs as a real subprocess of itself to play a
// well-behaved, crashing, hanging or noisy upstream.
package mcptest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// NewServer returns a server that lists the given tools, each a tool object
// as tools/list returns it, and answers every call with an echo (see
// [Echo]). Schemas are passed through as received, after giving a schema
// without "type":"object" one, which the go-sdk requires.
//
// A few tool names behave specially, so that tests can script faults:
// "add_tool" adds a tool named by its "name" argument (the server sends
// notifications/tools/list_changed), "remove_tool" removes one, "wait"
// writes "started" to the file named by its "marker" argument, blocks
// until the call is cancelled and then writes "cancelled" there,
// "wait_counted" adds a line to its marker for each call and blocks,
// "slow" answers after "ms" milliseconds, "ask" works "ms" milliseconds
// and then asks the person's name (an input request of MCP 2026-07-28),
// answering "hello NAME" once called again with it, "fail" answers with a
// tool error, and "crash" exits the process with status 3.
func NewServer(name string, tools []json.RawMessage, opts *mcp.ServerOptions) (*mcp.Server, error) {
	if opts == nil {
		opts = &mcp.ServerOptions{}
	}
	if opts.Capabilities == nil {
		opts.Capabilities = &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{ListChanged: true}}
	}
	s := mcp.NewServer(&mcp.Implementation{Name: name, Version: "test"}, opts)
	for _, raw := range tools {
		var t mcp.Tool
		if err := json.Unmarshal(raw, &t); err != nil {
			return nil, fmt.Errorf("tool %s: %v", raw, err)
		}
		var schema map[string]any
		_ = json.Unmarshal(mustField(raw, "inputSchema"), &schema)
		if schema == nil {
			schema = map[string]any{}
		}
		if schema["type"] != "object" {
			schema["type"] = "object"
		}
		t.InputSchema = schema
		AddTool(s, &t)
	}
	return s, nil
}

func mustField(raw json.RawMessage, key string) json.RawMessage {
	var m map[string]json.RawMessage
	_ = json.Unmarshal(raw, &m)
	return m[key]
}

// AddTool adds t to s with the echo handler and the special behaviours
// described at [NewServer].
func AddTool(s *mcp.Server, t *mcp.Tool) {
	if t.InputSchema == nil {
		t.InputSchema = map[string]any{"type": "object"}
	}
	s.AddTool(t, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var args map[string]any
		_ = json.Unmarshal(req.Params.Arguments, &args)
		str := func(k string) string { v, _ := args[k].(string); return v }
		switch t.Name {
		case "crash":
			os.Exit(3)
		case "add_tool":
			AddTool(s, &mcp.Tool{Name: str("name"), Description: "Added at run time: " + str("name")})
		case "remove_tool":
			s.RemoveTools(str("name"))
		case "wait":
			if m := str("marker"); m != "" {
				_ = os.WriteFile(m, []byte("started"), 0o644)
			}
			<-ctx.Done()
			if m := str("marker"); m != "" {
				_ = os.WriteFile(m, []byte("cancelled"), 0o644)
			}
			return nil, ctx.Err()
		case "wait_counted":
			// As wait, but each call adds a line to the marker, so that a
			// test can count the calls that reached the server.
			if m := str("marker"); m != "" {
				if f, err := os.OpenFile(m, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644); err == nil {
					f.WriteString("started\n")
					f.Close()
				}
			}
			<-ctx.Done()
			return nil, ctx.Err()
		case "slow":
			// Answers after "ms" milliseconds (a long call).
			ms, _ := args["ms"].(float64)
			select {
			case <-time.After(time.Duration(ms) * time.Millisecond):
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		case "ask":
			if answer, ok := req.Params.InputResponses["name"].(*mcp.ElicitResult); ok {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprint("hello ", answer.Content["name"])}}}, nil
			}
			ms, _ := args["ms"].(float64)
			select {
			case <-time.After(time.Duration(ms) * time.Millisecond):
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"name": &mcp.ElicitParams{Message: "Your name?", RequestedSchema: map[string]any{
				"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}, "required": []string{"name"}}}}}, nil
		case "fail":
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "failed as asked"}}}, nil
		}
		return Echo(t.Name, req.Params.Arguments), nil
	})
}

// Echo is the result of calling an echo tool: one text block holding
// {"tool": name, "arguments": args}, and the same object as structured
// content.
func Echo(name string, args json.RawMessage) *mcp.CallToolResult {
	if len(args) == 0 {
		args = json.RawMessage(`{}`)
	}
	text := fmt.Sprintf(`{"tool":%q,"arguments":%s}`, name, args)
	var structured any
	_ = json.Unmarshal([]byte(text), &structured)
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}, StructuredContent: structured}
}

// SimpleTools returns minimal tool objects with the given names.
func SimpleTools(names ...string) []json.RawMessage {
	out := make([]json.RawMessage, 0, len(names))
	for _, n := range names {
		b, _ := json.Marshal(map[string]any{
			"name":        n,
			"description": "Test tool " + strings.ReplaceAll(n, "_", " ") + ".",
			"inputSchema": map[string]any{"type": "object", "properties": map[string]any{"text": map[string]any{"type": "string"}}},
		})
		out = append(out, b)
	}
	return out
}
