package proxy

import (
	"context"
	"errors"

	"github.com/toolshelf/toolshelf/ledger"
	"github.com/toolshelf/toolshelf/telemetry"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// ledgerMetrics count what the ledger counts, for /metrics: tokens by
// kind and cost, by profile and model. People are no label: a label per
// person would be a series per person.
type ledgerMetrics struct {
	tokens metric.Int64Counter
	cost   metric.Float64Counter
	rounds metric.Int64Counter
}

func newLedgerMetrics(tel *telemetry.Telemetry) (*ledgerMetrics, error) {
	mt := tel.Meter()
	m := &ledgerMetrics{}
	var err1, err2, err3 error
	m.tokens, err1 = mt.Int64Counter("toolshelf.proxy.tokens",
		metric.WithDescription("Tokens of the model rounds the proxy sent, by profile, model (the price table's name, or other) and kind (input, output, cache_read, cache_write); rounds without reported usage at their most."))
	m.cost, err2 = mt.Float64Counter("toolshelf.proxy.cost", metric.WithUnit("USD"),
		metric.WithDescription("Cost of the model rounds the proxy sent, in US dollars, by profile and model."))
	m.rounds, err3 = mt.Int64Counter("toolshelf.proxy.rounds",
		metric.WithDescription("Model rounds the proxy sent, by profile, model, whether the proxy made it by itself (own) and outcome."))
	return m, errors.Join(err1, err2, err3)
}

// observe counts a settled round.
func (m *ledgerMetrics) observe(l *ledger.Ledger, e *ledger.Entry) {
	if m == nil || e.Void {
		return
	}
	ctx := context.Background()
	profile, model := attribute.String("profile", e.Profile), attribute.String("model", l.ModelName(e.Model))
	for _, k := range []struct {
		kind string
		n    int64
	}{{"input", e.Input}, {"output", e.Output}, {"cache_read", e.CacheRead}, {"cache_write", e.CacheWrite}} {
		if k.n > 0 {
			m.tokens.Add(ctx, k.n, metric.WithAttributes(profile, model, attribute.String("kind", k.kind)))
		}
	}
	m.cost.Add(ctx, float64(e.Nanos)/1e9, metric.WithAttributes(profile, model))
	m.rounds.Add(ctx, 1, metric.WithAttributes(profile, model, attribute.Bool("own", e.Own), attribute.String("outcome", e.Outcome)))
}
