package telemetry

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"reflect"
	"strconv"
	"sync"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"
)

// The MCP semantic conventions (semconv v1.40.0, the first module version
// with the mcp.* keys): a span is named "{mcp.method.name} {target}", the
// target being the tool (or prompt) a request names, and a tool call that
// returns a result with isError has error.type "tool_error".
const ToolError = "tool_error"

// metaCarrier reads and writes trace context (traceparent, tracestate) in
// a request's params._meta, where MCP carries it.
type metaCarrier map[string]any

func (m metaCarrier) Get(key string) string { s, _ := m[key].(string); return s }
func (m metaCarrier) Set(key, value string) { m[key] = value }
func (m metaCarrier) Keys() []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	return keys
}

// Extract returns ctx with the remote span context that a request's _meta
// carries, when tracing is on and it carries one.
func (t *Telemetry) Extract(ctx context.Context, meta map[string]any) context.Context {
	if !t.tracing || len(meta) == 0 {
		return ctx
	}
	return t.prop.Extract(ctx, metaCarrier(meta))
}

// Inject returns meta with ctx's span context added, for a request toolshelf
// sends; meta itself is not changed (it may be a client's). Without
// tracing, or without a span in ctx, it returns meta as it is.
func (t *Telemetry) Inject(ctx context.Context, meta map[string]any) map[string]any {
	if !t.tracing || !trace.SpanContextFromContext(ctx).IsValid() {
		return meta
	}
	out := make(map[string]any, len(meta)+2)
	for k, v := range meta {
		out[k] = v
	}
	t.prop.Inject(ctx, metaCarrier(out))
	return out
}

// ExtractHeader and InjectHeader do the same over HTTP headers (the
// proxy's traceparent).
func (t *Telemetry) ExtractHeader(ctx context.Context, h http.Header) context.Context {
	if !t.tracing {
		return ctx
	}
	return t.prop.Extract(ctx, propagation.HeaderCarrier(h))
}

func (t *Telemetry) InjectHeader(ctx context.Context, h http.Header) {
	if t.tracing {
		t.prop.Inject(ctx, propagation.HeaderCarrier(h))
	}
}

// Params returns a request's params, or nil when it has none. The SDK
// hands a message without params (a notifications/initialized as the
// Inspector sends it) as an interface holding a nil pointer, whose
// methods panic: every layer that looks at a request's params reads
// them through here.
func Params(req mcp.Request) mcp.Params {
	if req == nil {
		return nil
	}
	p := req.GetParams()
	if p == nil {
		return nil
	}
	if v := reflect.ValueOf(p); v.Kind() == reflect.Pointer && v.IsNil() {
		return nil
	}
	return p
}

// Meta returns a request's params._meta, or nil.
func Meta(req mcp.Request) map[string]any {
	if p := Params(req); p != nil {
		return p.GetMeta()
	}
	return nil
}

// Operation describes one MCP request for a span and the operation
// duration metrics. Its fields come from clients and servers, which
// write what they like: a span carries them cut to MaxAttr bytes, and
// the session's id only as a hash (the id opens the session).
type Operation struct {
	Method   string // mcp.method.name
	Target   string // the tool or prompt named, if any
	Session  string // mcp.session.id, exported hashed (SessionHash)
	Protocol string // mcp.protocol.version
	Server   string // for a client span: the upstream server's name
	Person   string // enduser.id: the subject of the caller's token, if any
}

// MaxAttr bounds a span's name and each attribute a client or server
// controls: a 1 MB tool name must not become a 1 MB span (spans are
// batched and leave the machine).
const MaxAttr = 256

// Clip cuts s to at most MaxAttr bytes on a rune boundary, marking the
// cut with "…".
func Clip(s string) string {
	if len(s) <= MaxAttr {
		return s
	}
	cut := MaxAttr - len("…")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// SessionHash is what a span says of a session: enough to group one
// session's spans, nothing that opens it.
func SessionHash(id string) string {
	sum := sha256.Sum256([]byte(id))
	return "sha256:" + hex.EncodeToString(sum[:8])
}

// name is the span's name: "{method} {target}", or the method alone.
func (op *Operation) name() string {
	if op.Target == "" {
		return Clip(op.Method)
	}
	return Clip(op.Method + " " + op.Target)
}

// attributes are the span's attributes under the MCP conventions.
func (op *Operation) attributes() []attribute.KeyValue {
	kv := make([]attribute.KeyValue, 0, 6)
	kv = append(kv, semconv.McpMethodNameKey.String(Clip(op.Method)))
	if op.Method == "tools/call" && op.Target != "" {
		kv = append(kv, semconv.GenAIToolNameKey.String(Clip(op.Target)), semconv.GenAIOperationNameExecuteTool)
	}
	if op.Session != "" {
		kv = append(kv, semconv.McpSessionIDKey.String(SessionHash(op.Session)))
	}
	if op.Protocol != "" {
		kv = append(kv, semconv.McpProtocolVersionKey.String(Clip(op.Protocol)))
	}
	if op.Server != "" {
		kv = append(kv, attribute.String("toolshelf.server", op.Server))
	}
	if op.Person != "" {
		kv = append(kv, semconv.EnduserIDKey.String(Clip(op.Person)))
	}
	return kv
}

// noSpan is the span of a context with none: it records nothing.
var noSpan = trace.SpanFromContext(context.Background())

// Start starts a span for op: a server span for what a client asks
// toolshelf, a client span for what toolshelf asks a server. Attributes
// are built only when the span records.
func (t *Telemetry) Start(ctx context.Context, kind trace.SpanKind, op *Operation) (context.Context, trace.Span) {
	if !t.tracing {
		return ctx, noSpan
	}
	ctx, span := t.Tracer().Start(ctx, op.name(), trace.WithSpanKind(kind))
	if span.IsRecording() {
		span.SetAttributes(op.attributes()...)
	}
	return ctx, span
}

// End ends a span started by Start with the outcome: errType is
// error.type: "" for success, ToolError for a result with isError, or
// the kind of error. An error's text is left out: a server's error can
// hold what it was given, and spans leave the machine.
func End(span trace.Span, errType string) {
	if !span.IsRecording() {
		return
	}
	if errType != "" {
		span.SetAttributes(semconv.ErrorTypeKey.String(errType))
		span.SetStatus(codes.Error, errType)
	}
	span.End()
}

// AttrKey names a label set by its values (a kind of set first), as an
// array, so that a lookup builds no string.
type AttrKey [4]string

// Attrs caches the attribute sets of measurements by a key the caller
// makes of their values, so that recording a metric with labels seen
// before allocates nothing. It holds at most max sets; past that, sets
// are built for each measurement. The zero value is not usable; use
// NewAttrs. It is safe for concurrent use.
type Attrs struct {
	mu   sync.RWMutex
	sets map[AttrKey]*attrSet
	max  int
}

// attrSet is a set's option, and the option alone as the argument list
// of a histogram's Record: a list made for each measurement (Record
// takes its options variadic, through an interface) was an allocation
// of every call.
type attrSet struct {
	opt metric.MeasurementOption
	rec []metric.RecordOption
}

// NewAttrs returns a cache of at most max attribute sets.
func NewAttrs(max int) *Attrs {
	return &Attrs{sets: map[AttrKey]*attrSet{}, max: max}
}

// Get returns the option of the set under key, made by kv the first time.
func (a *Attrs) Get(key AttrKey, kv func() []attribute.KeyValue) metric.MeasurementOption {
	return a.set(key, kv).opt
}

// Record returns the set under key as a histogram's Record options:
// h.Record(ctx, v, a.Record(key, kv)...).
func (a *Attrs) Record(key AttrKey, kv func() []attribute.KeyValue) []metric.RecordOption {
	return a.set(key, kv).rec
}

func (a *Attrs) set(key AttrKey, kv func() []attribute.KeyValue) *attrSet {
	a.mu.RLock()
	set, ok := a.sets[key]
	a.mu.RUnlock()
	if ok {
		return set
	}
	o := metric.WithAttributeSet(attribute.NewSet(kv()...))
	set = &attrSet{opt: o, rec: []metric.RecordOption{o}}
	a.mu.Lock()
	if len(a.sets) < a.max {
		a.sets[key] = set
	}
	a.mu.Unlock()
	return set
}

// CodeLabel is error.type for a JSON-RPC error code: the code for one in
// the range JSON-RPC reserves, else "_OTHER", so that a server that
// invents codes cannot make labels without end.
func CodeLabel(code int64) string {
	if code >= -32768 && code <= -32000 {
		return strconv.FormatInt(code, 10)
	}
	return "_OTHER"
}

// ErrorType is error.type for an MCP request's outcome: "" for success,
// ToolError for a tool result with isError, the JSON-RPC error's code
// (CodeLabel), "cancelled", or "_OTHER".
func ErrorType(ctx context.Context, res mcp.Result, err error) string {
	if err == nil {
		if r, ok := res.(*mcp.CallToolResult); ok && r != nil && r.IsError {
			return ToolError
		}
		return ""
	}
	if wire, ok := errors.AsType[*jsonrpc.Error](err); ok {
		return CodeLabel(wire.Code)
	}
	if ctx.Err() != nil {
		return "cancelled"
	}
	return "_OTHER"
}
