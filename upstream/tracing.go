package upstream

import (
	"context"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolshelf/toolshelf/telemetry"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"
)

// clientOps records mcp.client.operation.duration for every pool; attrs
// are its label sets seen (a server, a method, a tool the server listed,
// an error type: all bounded).
type clientOps struct {
	duration metric.Float64Histogram
	attrs    *telemetry.Attrs
}

func newClientOps(tel *telemetry.Telemetry) (*clientOps, error) {
	h, err := tel.Meter().Float64Histogram("mcp.client.operation.duration", metric.WithUnit("s"),
		metric.WithExplicitBucketBoundaries(0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60),
		metric.WithDescription("Time of the MCP requests toolshelf sent its servers, by server, method, tool and error type (MCP semantic conventions)."))
	return &clientOps{duration: h, attrs: telemetry.NewAttrs(4096)}, err
}

// traceRequests is the sending middleware of a server's client: a client
// span for each request toolshelf sends the server, whose context goes
// in the request's _meta (traceparent), so that a server that traces
// continues the client's trace; and mcp.client.operation.duration.
func (s *server) traceRequests(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if strings.HasPrefix(method, "notifications/") {
			return next(ctx, method, req)
		}
		tel := s.pool.tel
		start := time.Now()
		op := telemetry.Operation{Method: method, Server: s.cfg.Name}
		if p, ok := telemetry.Params(req).(*mcp.CallToolParams); ok {
			op.Target = p.Name
		}
		span := trace.SpanFromContext(ctx)
		if tel.Tracing() {
			if cs, ok := req.GetSession().(*mcp.ClientSession); ok && cs != nil {
				op.Session = cs.ID()
			}
			ctx, span = tel.Start(ctx, trace.SpanKindClient, &op)
			if p := telemetry.Params(req); p != nil && span.IsRecording() {
				p.SetMeta(tel.Inject(ctx, p.GetMeta()))
			}
		}
		res, err := next(ctx, method, req)
		errType := telemetry.ErrorType(ctx, res, err)
		if tel.Tracing() {
			telemetry.End(span, errType)
		}
		ops := s.pool.ops
		ops.duration.Record(ctx, time.Since(start).Seconds(), ops.attrs.Record(telemetry.AttrKey{s.cfg.Name, method, op.Target, errType}, func() []attribute.KeyValue {
			kv := []attribute.KeyValue{attribute.String("server", s.cfg.Name), semconv.McpMethodNameKey.String(method)}
			if op.Target != "" {
				kv = append(kv, semconv.GenAIToolNameKey.String(op.Target))
			}
			if errType != "" {
				kv = append(kv, semconv.ErrorTypeKey.String(errType))
			}
			return kv
		})...)
		return res, err
	}
}
