package mcptest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolshelf/toolshelf/telemetry"
	"go.opentelemetry.io/otel/trace"
)

// serveTraced is the "traced" mode: a server that continues the trace a
// request's _meta carries, as a server instrumented under the MCP
// conventions does, and exports its spans over OTLP as the OTEL_*
// variables say (one at a time, so that none is lost when it exits).
// Its tools: create_issue answers with the traceparent it received;
// fail_build answers with a tool error.
func serveTraced() int {
	ctx := context.Background()
	tel, err := telemetry.New(ctx, &telemetry.Options{Synchronous: true})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() {
		sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		tel.Shutdown(sctx)
	}()
	s := mcp.NewServer(&mcp.Implementation{Name: "tracker", Version: "test"}, nil)
	s.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			p, ok := req.GetParams().(*mcp.CallToolParamsRaw)
			if !ok || p == nil {
				return next(ctx, method, req)
			}
			ctx = tel.Extract(ctx, p.GetMeta())
			ctx, span := tel.Start(ctx, trace.SpanKindServer, &telemetry.Operation{Method: method, Target: p.Name})
			res, err := next(ctx, method, req)
			errType := ""
			if r, ok := res.(*mcp.CallToolResult); ok && r.IsError {
				errType = telemetry.ToolError
			}
			telemetry.End(span, errType)
			return res, err
		}
	})
	s.AddTool(&mcp.Tool{Name: "create_issue", Description: "Create an issue in the tracker with a title.", InputSchema: map[string]any{"type": "object", "properties": map[string]any{"title": map[string]any{"type": "string"}}}},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			tp, _ := req.Params.GetMeta()["traceparent"].(string)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "traceparent=" + tp}}}, nil
		})
	s.AddTool(&mcp.Tool{Name: "fail_build", Description: "Start a build of the tracker's project.", InputSchema: map[string]any{"type": "object"}},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "the build failed"}}}, nil
		})
	if err := s.Run(ctx, &mcp.StdioTransport{}); err != nil && !errors.Is(err, mcp.ErrConnectionClosed) {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}
