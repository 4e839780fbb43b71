package gateway

import (
	"context"
	"github.com/toolshelf/toolshelf/identity"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolshelf/toolshelf/search"
	"github.com/toolshelf/toolshelf/telemetry"
	"go.opentelemetry.io/otel/attribute"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"
)

// traceRequests is the first receiving middleware: a server span for each
// request a client sends (the parent is the traceparent in the request's
// _meta, when it has one), and mcp.server.operation.duration. The span's
// context reaches the call upstream, whose client span carries it on to
// the server (upstream's sending middleware).
func (s *Server) traceRequests(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		start := time.Now()
		op := telemetry.Operation{Method: method, Target: requestTarget(req)}
		span := trace.SpanFromContext(ctx)
		if s.tel.Tracing() {
			if ss, ok := req.GetSession().(*mcp.ServerSession); ok && ss != nil {
				op.Session = ss.ID()
				if ip := ss.InitializeParams(); ip != nil {
					op.Protocol = ip.ProtocolVersion
				}
			}
			if p := identity.PersonOf(ctx); p != nil {
				op.Person = p.Subject
			}
			ctx = s.tel.Extract(ctx, telemetry.Meta(req))
			ctx, span = s.tel.Start(ctx, trace.SpanKindServer, &op)
		}
		res, err := next(ctx, method, req)
		errType := telemetry.ErrorType(ctx, res, err)
		if s.tel.Tracing() {
			telemetry.End(span, errType)
		}
		// The labels are bounded: a client names any method and tool it
		// likes, and each label value is a series kept for good.
		method, tool := s.knownMethod(method), ""
		if op.Target != "" && method == "tools/call" {
			tool = s.knownTool(op.Target)
		}
		s.met.serverOp.Record(ctx, time.Since(start).Seconds(), s.met.attrs.Record(telemetry.AttrKey{method, tool, errType}, func() []attribute.KeyValue {
			kv := []attribute.KeyValue{semconv.McpMethodNameKey.String(method)}
			if tool != "" {
				kv = append(kv, semconv.GenAIToolNameKey.String(tool))
			}
			if errType != "" {
				kv = append(kv, semconv.ErrorTypeKey.String(errType))
			}
			return kv
		})...)
		return res, err
	}
}

// requestTarget is what a request names: the tool of tools/call, the
// prompt of prompts/get, or "".
func requestTarget(req mcp.Request) string {
	switch p := telemetry.Params(req).(type) {
	case *mcp.CallToolParamsRaw:
		if p != nil {
			return p.Name
		}
	case *mcp.CallToolParams:
		if p != nil {
			return p.Name
		}
	case *mcp.GetPromptParams:
		if p != nil {
			return p.Name
		}
	}
	return ""
}

// methods are the MCP methods a gateway answers; any other is labelled
// "other" in metrics.
var methods = map[string]bool{
	"initialize": true, "ping": true, "server/discover": true,
	"tools/list": true, "tools/call": true,
	"prompts/list": true, "prompts/get": true,
	"resources/list": true, "resources/read": true, "resources/templates/list": true,
	"resources/subscribe": true, "resources/unsubscribe": true,
	"completion/complete": true, "logging/setLevel": true,
	"notifications/initialized": true, "notifications/cancelled": true,
	"notifications/roots/list_changed": true, "notifications/progress": true,
	"subscriptions/listen": true,
}

func (s *Server) knownMethod(m string) string {
	if methods[m] {
		return m
	}
	return "other"
}

// knownTool is a tool's name as a metric label: a meta tool's or a
// catalog tool's name, else "unknown".
func (s *Server) knownTool(name string) string {
	if name == toolSearch || name == toolCall {
		return name
	}
	if snap := s.state.Load(); snap != nil {
		if _, ok := snap.Catalog.Lookup(name); ok {
			return name
		}
	}
	return "unknown"
}

// traceSearch records a search_tools search as a span of its own, started
// at start, with what an operator needs to judge it. The query's text is
// left out unless Options.TraceQueries: a model writes what a user said
// into it.
func (s *Server) traceSearch(ctx context.Context, start time.Time, query string, found search.Result, err error) {
	if !s.tel.Tracing() {
		return
	}
	_, span := s.tel.Tracer().Start(ctx, "search "+s.engineName(), trace.WithTimestamp(start))
	if !span.IsRecording() {
		span.End()
		return
	}
	learned := false
	for _, h := range found.Hits {
		for _, m := range h.Matches {
			learned = learned || m.Term == search.TermLearned
		}
	}
	span.SetAttributes(
		attribute.String("toolshelf.search.engine", s.engineName()),
		attribute.Int("toolshelf.search.candidates", found.Searched),
		attribute.Int("toolshelf.search.results", len(found.Hits)),
		attribute.Bool("toolshelf.search.weak", found.Weak),
		attribute.Bool("toolshelf.search.select", found.Select),
		attribute.Bool("toolshelf.search.learned", learned),
		attribute.Int("toolshelf.search.query.length", len(query)),
	)
	if s.opts.TraceQueries {
		span.SetAttributes(attribute.String("toolshelf.search.query", cut(query, echoLimit)))
	}
	errType := ""
	if err != nil {
		errType = "_OTHER"
	}
	telemetry.End(span, errType)
}

// engineName is the search engine's kind, as --engine names it.
func (s *Server) engineName() string {
	if s.opts.Engine == "" {
		return search.DefaultEngine
	}
	return s.opts.Engine
}
