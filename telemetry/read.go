package telemetry

import (
	"fmt"
	"io"
	"math"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Sample is one series of a metric family as /metrics serves it.
type Sample struct {
	Labels map[string]string
	// Value is a counter's or a gauge's value; a histogram's count.
	Value float64
	// Buckets are a histogram's cumulative counts by upper bound (+Inf
	// included); Sum is its sum.
	Buckets map[float64]uint64
	Sum     float64
}

// ReadMetrics parses the Prometheus text format (what /metrics serves)
// into samples by family name: doctor --live reads a running gateway's
// with it.
func ReadMetrics(r io.Reader) (map[string][]Sample, error) {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(r)
	if err != nil {
		return nil, fmt.Errorf("reading metrics: %w", err)
	}
	out := make(map[string][]Sample, len(families))
	for name, f := range families {
		for _, m := range f.GetMetric() {
			s := Sample{Labels: map[string]string{}}
			for _, l := range m.GetLabel() {
				s.Labels[l.GetName()] = l.GetValue()
			}
			switch f.GetType() {
			case dto.MetricType_COUNTER:
				s.Value = m.GetCounter().GetValue()
			case dto.MetricType_GAUGE:
				s.Value = m.GetGauge().GetValue()
			case dto.MetricType_HISTOGRAM:
				h := m.GetHistogram()
				s.Value, s.Sum = float64(h.GetSampleCount()), h.GetSampleSum()
				s.Buckets = map[float64]uint64{math.Inf(1): h.GetSampleCount()}
				for _, b := range h.GetBucket() {
					s.Buckets[b.GetUpperBound()] = b.GetCumulativeCount()
				}
			default:
				s.Value = m.GetUntyped().GetValue()
			}
			out[name] = append(out[name], s)
		}
	}
	return out, nil
}

// Find returns the sample of a family whose labels include want, or false.
func Find(samples map[string][]Sample, name string, want map[string]string) (Sample, bool) {
	for _, s := range samples[name] {
		match := true
		for k, v := range want {
			if s.Labels[k] != v {
				match = false
				break
			}
		}
		if match {
			return s, true
		}
	}
	return Sample{}, false
}
