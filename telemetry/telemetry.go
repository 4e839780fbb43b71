// Package telemetry connects toolshelf to OpenTelemetry: traces exported
// over OTLP when the standard OTEL_* variables ask for them, metrics
// served in the Prometheus text format (and exported over OTLP when asked
// for), and trace context carried across MCP in a request's params._meta.
//
// Tracing is off unless configured; then the tracer is OpenTelemetry's
// no-op one and the code that records spans checks IsRecording before it
// builds a single attribute, so the hot path allocates nothing for it.
// Metrics are always kept: /metrics reads them.
package telemetry

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"runtime/debug"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/otlptranslator"
	runtimemetrics "go.opentelemetry.io/contrib/instrumentation/runtime"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	promexporter "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// Scope is the instrumentation scope of toolshelf's spans and metrics.
const Scope = "github.com/toolshelf/toolshelf"

// Options configure New. A nil *Options is the zero value.
type Options struct {
	// Getenv reads the OTEL_* variables; os.Getenv when nil.
	Getenv func(string) string
	// Version is toolshelf's version, for the service.version resource
	// attribute.
	Version string
	// SpanExporter, when set, receives the spans instead of the exporter
	// the variables choose (tests give an in-memory one); tracing is on.
	SpanExporter sdktrace.SpanExporter
	// Synchronous exports each span as it ends instead of in batches:
	// for tests that read what a receiver got right after a call.
	Synchronous bool
	// Logger, when set, receives the exporters' errors (a collector that
	// is down) instead of the standard log package. It is the process's
	// one OpenTelemetry error handler.
	Logger *slog.Logger
}

// Telemetry is one process's tracer and meter providers. The zero value
// is not usable; New returns a working one whatever the environment says.
type Telemetry struct {
	tracer   trace.TracerProvider
	tracing  bool
	meter    metric.MeterProvider
	registry *prometheus.Registry
	prop     propagation.TextMapPropagator
	shutdown []func(context.Context) error
}

// New reads the standard variables and returns toolshelf's telemetry.
//
// Traces are exported when OTEL_TRACES_EXPORTER is "otlp", or when it is
// unset and an OTLP endpoint is (OTEL_EXPORTER_OTLP_ENDPOINT or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT); OTEL_EXPORTER_OTLP_PROTOCOL (or its
// _TRACES_ form) chooses "http/protobuf" (the default) or "grpc", and the
// exporters read the endpoint, headers, timeout and TLS variables
// themselves. Metrics are exported over OTLP only when
// OTEL_METRICS_EXPORTER says "otlp". OTEL_SDK_DISABLED=true turns both
// off. An exporter name other than otlp or none is an error, as is an
// unknown protocol.
func New(ctx context.Context, opts *Options) (*Telemetry, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	getenv := o.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	if o.Logger != nil {
		logger := o.Logger
		otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) { logger.Warn("telemetry", "error", err) }))
	}
	t := &Telemetry{
		tracer:   noop.NewTracerProvider(),
		registry: prometheus.NewRegistry(),
		prop:     propagation.TraceContext{},
	}
	res := resource.NewSchemaless(semconv.ServiceName(serviceName(getenv)), semconv.ServiceVersion(o.Version))
	disabled := strings.EqualFold(getenv("OTEL_SDK_DISABLED"), "true")

	prom, err := promexporter.New(
		promexporter.WithRegisterer(t.registry),
		promexporter.WithTranslationStrategy(otlptranslator.UnderscoreEscapingWithSuffixes),
		promexporter.WithoutScopeInfo(),
		promexporter.WithoutTargetInfo(),
	)
	if err != nil {
		return nil, fmt.Errorf("telemetry: prometheus exporter: %w", err)
	}
	readers := []sdkmetric.Option{sdkmetric.WithReader(prom), sdkmetric.WithResource(res)}
	if !disabled {
		reader, err := metricReader(ctx, getenv)
		if err != nil {
			return nil, err
		}
		if reader != nil {
			readers = append(readers, sdkmetric.WithReader(reader))
		}
	}
	mp := sdkmetric.NewMeterProvider(readers...)
	t.meter = mp
	// The Go runtime's figures (goroutines, memory, GC), so that a leak
	// can be seen from outside.
	if err := runtimemetrics.Start(runtimemetrics.WithMeterProvider(mp)); err != nil {
		return nil, fmt.Errorf("telemetry: runtime metrics: %w", err)
	}
	if err := gcPauses(mp.Meter(Scope)); err != nil {
		return nil, err
	}
	t.shutdown = append(t.shutdown, mp.Shutdown)

	exp := o.SpanExporter
	if exp == nil && !disabled {
		if exp, err = spanExporter(ctx, getenv); err != nil {
			t.Shutdown(ctx)
			return nil, err
		}
	}
	if exp != nil {
		process := sdktrace.WithBatcher(exp)
		if o.Synchronous {
			process = sdktrace.WithSyncer(exp)
		}
		tp := sdktrace.NewTracerProvider(process, sdktrace.WithResource(res))
		t.tracer, t.tracing = tp, true
		t.shutdown = append(t.shutdown, tp.Shutdown)
	}
	return t, nil
}

// Discard returns telemetry that records nothing: no spans, no metrics
// (a pool or a command that serves no /metrics).
func Discard() *Telemetry {
	return &Telemetry{
		tracer:   noop.NewTracerProvider(),
		meter:    metricnoop.NewMeterProvider(),
		registry: prometheus.NewRegistry(),
		prop:     propagation.TraceContext{},
	}
}

func serviceName(getenv func(string) string) string {
	if n := getenv("OTEL_SERVICE_NAME"); n != "" {
		return n
	}
	return "toolshelf"
}

// exporterChoice returns what OTEL_<KIND>_EXPORTER asks for: "otlp",
// "none", or "" when it is unset.
func exporterChoice(getenv func(string) string, kind string) (string, error) {
	v := strings.TrimSpace(getenv("OTEL_" + kind + "_EXPORTER"))
	switch v {
	case "", "otlp", "none":
		return v, nil
	}
	return "", fmt.Errorf("telemetry: OTEL_%s_EXPORTER=%q: toolshelf exports otlp or none", kind, v)
}

// protocol returns the OTLP protocol for a signal: "http/protobuf" or
// "grpc".
func protocol(getenv func(string) string, signal string) (string, error) {
	p := getenv("OTEL_EXPORTER_OTLP_" + signal + "_PROTOCOL")
	if p == "" {
		p = getenv("OTEL_EXPORTER_OTLP_PROTOCOL")
	}
	switch p {
	case "", "http/protobuf":
		return "http/protobuf", nil
	case "grpc":
		return "grpc", nil
	}
	return "", fmt.Errorf("telemetry: OTLP protocol %q: want http/protobuf or grpc", p)
}

func spanExporter(ctx context.Context, getenv func(string) string) (sdktrace.SpanExporter, error) {
	choice, err := exporterChoice(getenv, "TRACES")
	if err != nil {
		return nil, err
	}
	endpoint := getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
	if choice == "none" || (choice == "" && !endpoint) {
		return nil, nil
	}
	p, err := protocol(getenv, "TRACES")
	if err != nil {
		return nil, err
	}
	// The exporters read the endpoint, headers and TLS settings from the
	// process's environment themselves.
	if p == "grpc" {
		return otlptracegrpc.New(ctx)
	}
	return otlptracehttp.New(ctx)
}

func metricReader(ctx context.Context, getenv func(string) string) (sdkmetric.Reader, error) {
	choice, err := exporterChoice(getenv, "METRICS")
	if err != nil || choice != "otlp" {
		return nil, err
	}
	p, err := protocol(getenv, "METRICS")
	if err != nil {
		return nil, err
	}
	var exp sdkmetric.Exporter
	if p == "grpc" {
		exp, err = otlpmetricgrpc.New(ctx)
	} else {
		exp, err = otlpmetrichttp.New(ctx)
	}
	if err != nil {
		return nil, fmt.Errorf("telemetry: OTLP metrics: %w", err)
	}
	return sdkmetric.NewPeriodicReader(exp), nil
}

// Tracing reports whether spans are exported; when not, the tracer is a
// no-op.
func (t *Telemetry) Tracing() bool { return t.tracing }

// Tracer returns toolshelf's tracer.
func (t *Telemetry) Tracer() trace.Tracer { return t.tracer.Tracer(Scope) }

// Meter returns toolshelf's meter.
func (t *Telemetry) Meter() metric.Meter { return t.meter.Meter(Scope) }

// MetricsHandler serves the metrics in the Prometheus text format.
func (t *Telemetry) MetricsHandler() http.Handler {
	return promhttp.HandlerFor(t.registry, promhttp.HandlerOpts{})
}

// Shutdown flushes what is queued for export and stops the exporters.
func (t *Telemetry) Shutdown(ctx context.Context) error {
	var errs []error
	for _, f := range t.shutdown {
		errs = append(errs, f(ctx))
	}
	return errors.Join(errs...)
}

// gcPauses reports the time the garbage collector has stopped the world,
// and how often, which the runtime instrumentation leaves out.
func gcPauses(m metric.Meter) error {
	pause, err := m.Float64ObservableCounter("go.gc.pause", metric.WithUnit("s"), metric.WithDescription("Time the Go garbage collector stopped the world."))
	if err != nil {
		return fmt.Errorf("telemetry: go.gc.pause: %w", err)
	}
	count, err := m.Int64ObservableCounter("go.gc.cycles", metric.WithDescription("Garbage collections completed."))
	if err != nil {
		return fmt.Errorf("telemetry: go.gc.cycles: %w", err)
	}
	_, err = m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		var st debug.GCStats
		debug.ReadGCStats(&st)
		o.ObserveFloat64(pause, st.PauseTotal.Seconds())
		o.ObserveInt64(count, st.NumGC)
		return nil
	}, pause, count)
	return err
}
