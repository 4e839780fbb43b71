package proxy

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/toolshelf/toolshelf/telemetry"
	"go.opentelemetry.io/otel/attribute"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"
)

// One trace holds a client's request (a server span, whose parent is the
// client's traceparent header), each round the proxy asks the model API
// (a GenAI client span "chat {model}" with its token counts; its context
// goes upstream in the traceparent header), and each search the proxy
// answers itself between rounds ("execute_tool {search tool}"). A round
// whose answer was only searches, which the client never sees, is marked
// toolshelf.proxy.hidden.

// traceRequest starts the span of a client's request.
func (s *Server) traceRequest(r *http.Request) (*http.Request, trace.Span) {
	tel := s.opts.Telemetry
	ctx := tel.ExtractHeader(r.Context(), r.Header)
	ctx, span := tel.Tracer().Start(ctx, r.Method+" "+r.URL.Path, trace.WithSpanKind(trace.SpanKindServer))
	if span.IsRecording() {
		span.SetAttributes(semconv.HTTPRequestMethodKey.String(r.Method), semconv.URLPath(r.URL.Path))
	}
	return r.WithContext(ctx), span
}

// startRound starts the span of one round sent to the model API; r
// carries it, so that the upstream request's traceparent names it.
func (s *Server) startRound(r *http.Request, model string, n int) (*http.Request, trace.Span) {
	if !s.opts.Telemetry.Tracing() {
		return r, trace.SpanFromContext(context.Background())
	}
	model = logCut(model)
	ctx, span := s.opts.Telemetry.Tracer().Start(r.Context(), "chat "+model, trace.WithSpanKind(trace.SpanKindClient))
	if span.IsRecording() {
		span.SetAttributes(semconv.GenAIOperationNameChat, semconv.GenAIRequestModel(model), attribute.Int("toolshelf.proxy.round", n))
	}
	return r.WithContext(ctx), span
}

// endRound ends a round's span with the tokens the answer reports (the
// Messages API's input_tokens and output_tokens, or Chat Completions'
// prompt_tokens and completion_tokens), whether it was a hidden search
// round, and the HTTP status when it was not 200.
func endRound(span trace.Span, u usage, hidden bool, status int) {
	if !span.IsRecording() {
		return
	}
	in, out := u.count("input_tokens", "prompt_tokens"), u.count("output_tokens", "completion_tokens")
	span.SetAttributes(semconv.GenAIUsageInputTokens(in), semconv.GenAIUsageOutputTokens(out), attribute.Bool("toolshelf.proxy.hidden", hidden))
	errType := ""
	if status != http.StatusOK {
		errType = strconv.Itoa(status)
		if status == 0 {
			errType = "_OTHER"
		}
	}
	telemetry.End(span, errType)
}

// count returns the first of keys that the usage has, as a number.
func (u usage) count(keys ...string) int {
	for _, k := range keys {
		var n int
		if raw, ok := u[k]; ok && json.Unmarshal(raw, &n) == nil {
			return n
		}
	}
	return 0
}

// traceSearch starts the span of a search the proxy answers itself.
func (s *Server) traceSearch(ctx context.Context, tool string) (context.Context, trace.Span) {
	if !s.opts.Telemetry.Tracing() {
		return ctx, trace.SpanFromContext(context.Background())
	}
	ctx, span := s.opts.Telemetry.Tracer().Start(ctx, "execute_tool "+tool, trace.WithSpanKind(trace.SpanKindInternal))
	if span.IsRecording() {
		span.SetAttributes(semconv.GenAIOperationNameExecuteTool, semconv.GenAIToolName(tool))
	}
	return ctx, span
}

// endSearch ends a search's span; a search the model wrote wrong is a
// tool error.
func endSearch(span trace.Span, isErr bool) {
	errType := ""
	if isErr {
		errType = telemetry.ToolError
	}
	telemetry.End(span, errType)
}

// endRequest ends a request's span with its HTTP status.
func endRequest(span trace.Span, status int) {
	if !span.IsRecording() {
		return
	}
	span.SetAttributes(semconv.HTTPResponseStatusCode(status))
	errType := ""
	if status >= 500 {
		errType = strconv.Itoa(status)
	}
	telemetry.End(span, errType)
}
