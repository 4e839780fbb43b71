package evaluate

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/toolshelf/toolshelf/catalog"
	"github.com/toolshelf/toolshelf/search"
)

// DefaultLimit is how many results each query retrieves unless told
// otherwise: enough for the @10 metrics.
const DefaultLimit = 10

// Report is the result of evaluating one engine on one dataset.
type Report struct {
	Dataset string `json:"dataset"`
	Engine  string `json:"engine"`
	Tools   int    `json:"tools"`
	// IndexMS is the time to build the engine, in milliseconds.
	IndexMS float64 `json:"index_ms"`
	Latency Latency `json:"latency_us"`
	// Errors counts queries the engine rejected; they count as no hits.
	Errors int `json:"errors,omitempty"`
	// Subsets maps "all", and "level=2", "category=x" and so on, to the
	// metrics over the queries with that label.
	Subsets map[string]*Metrics `json:"subsets"`
	// Misses are the answerable queries with a step not found in the top
	// MissDepth, in dataset order, when Options.Misses asks for them.
	Misses []*Miss `json:"misses,omitempty"`
}

// Latency holds per-query search latency percentiles in microseconds.
type Latency struct {
	P50 float64 `json:"p50"`
	P99 float64 `json:"p99"`
}

// Metrics are averages over the queries that have relevant groups.
type Metrics struct {
	Queries    int     `json:"queries"`
	Recall1    float64 `json:"recall@1"`
	Recall5    float64 `json:"recall@5"`
	Recall10   float64 `json:"recall@10"`
	Complete10 float64 `json:"complete@10"`
	MRR10      float64 `json:"mrr@10"`
	NDCG10     float64 `json:"ndcg@10"`
	// Weak counts the queries with relevant tools whose results the
	// engine flagged weak: wrongly, since a tool fits. WeakMissed counts
	// those of them whose top MissDepth hold no labelled tool: flagged
	// rightly, in that what was shown missed.
	Weak       int `json:"weak,omitempty"`
	WeakMissed int `json:"weak_missed,omitempty"`
	// Abstain counts the queries that no tool fits, and how many of them
	// got no hits at all or only hits flagged weak (the right answers).
	Abstain *Abstain `json:"abstain,omitempty"`
	// CI95 are bootstrap 95% intervals of recall@1, @5 and @10 (see
	// Bootstrap), so that a difference smaller than they are wide is seen
	// for what it is.
	CI95 *Intervals `json:"ci95,omitempty"`
	// Answers measures the answers a face gives (Options.Answers).
	Answers *AnswerMetrics `json:"answers,omitempty"`
}

// Intervals are the bounds of three metrics' intervals.
type Intervals struct {
	Recall1  [2]float64 `json:"recall@1"`
	Recall5  [2]float64 `json:"recall@5"`
	Recall10 [2]float64 `json:"recall@10"`
}

// Abstain reports the queries without relevant tools.
type Abstain struct {
	Queries int `json:"queries"`
	NoHits  int `json:"no_hits"`
	Weak    int `json:"weak"`
}

// Options configure Run. A nil *Options means the defaults.
type Options struct {
	// Limit is how many results each query retrieves. If zero, DefaultLimit.
	Limit int
	// Learned tunes RunFolds' learning from use (nil: the defaults).
	Learned *search.LearnedOptions
	// Queries, when set, picks the queries scored (Run and RunFolds):
	// one half of a dataset, to tune on the other.
	Queries func(Query) bool
	// Answers, when set, also measures the answers a face would give of
	// each query's hits: recall within a token budget, and their cost.
	Answers *Answers
	// Misses lists the queries with a step not found (Report.Misses).
	Misses bool
}

// Run builds an engine over the dataset's catalog with build, searches
// every query and reports the metrics. engine names the engine in the
// report.
func Run(ctx context.Context, ds *Dataset, engine string, build func(*catalog.Catalog) (search.Engine, error), opts *Options) (*Report, error) {
	return run(ctx, ds, engine, opts, func() (func(Query) search.Engine, error) {
		e, err := build(ds.Catalog)
		return func(Query) search.Engine { return e }, err
	})
}

// run builds the engines with prepare (timed as the index's build) and
// scores the queries Options picks, each with the engine engineFor gives
// it.
func run(ctx context.Context, ds *Dataset, engine string, opts *Options, prepare func() (engineFor func(Query) search.Engine, err error)) (*Report, error) {
	limit := DefaultLimit
	if opts != nil && opts.Limit != 0 {
		limit = opts.Limit
	}
	if limit < 0 {
		return nil, errors.New("limit must be a positive integer")
	}
	start := time.Now()
	engineFor, err := prepare()
	if err != nil {
		return nil, err
	}
	r := &Report{
		Dataset: ds.Name,
		Engine:  engine,
		Tools:   ds.Catalog.Len(),
		IndexMS: round(float64(time.Since(start).Microseconds())/1000, 3),
		Subsets: map[string]*Metrics{},
	}
	var answers *Answers
	misses := false
	if opts != nil {
		answers, misses = opts.Answers, opts.Misses
	}
	if err := r.score(ctx, opts.pick(ds.Queries), engineFor, limit, answers, misses); err != nil {
		return nil, err
	}
	return r, nil
}

// pick returns the queries Options.Queries picks (all of them without).
func (o *Options) pick(qs []Query) []Query {
	if o == nil || o.Queries == nil {
		return qs
	}
	var out []Query
	for _, q := range qs {
		if o.Queries(q) {
			out = append(out, q)
		}
	}
	return out
}

// score searches queries, each with engineFor's engine, and fills the
// report's metrics and latency.
func (r *Report) score(ctx context.Context, queries []Query, engineFor func(Query) search.Engine, limit int, answers *Answers, misses bool) error {
	sums := map[string]*Metrics{}
	perQuery := map[string][]Metrics{} // for the intervals
	latencies := make([]time.Duration, 0, len(queries))
	for _, q := range queries {
		if err := ctx.Err(); err != nil {
			return err
		}
		t := time.Now()
		hits, err := engineFor(q).Search(ctx, q.Text, limit)
		latencies = append(latencies, time.Since(t))
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			r.Errors++
			hits = nil
		}
		ids := make([]string, len(hits))
		for i, h := range hits {
			ids[i] = h.Entry.ID
		}
		weak := len(hits) > 0 && hits[0].Weak
		s := Score(q.Groups, ids)
		if misses && len(q.Groups) > 0 {
			if m := missOf(q, hits); m != nil {
				r.Misses = append(r.Misses, m)
			}
		}
		var ans answered
		if answers != nil {
			ans = answers.answer(hits)
		}
		for _, label := range append([]string{"all", LengthBand(q.Text)}, q.Labels...) {
			m := sums[label]
			if m == nil {
				m = &Metrics{}
				sums[label] = m
			}
			if len(q.Groups) == 0 {
				if m.Abstain == nil {
					m.Abstain = &Abstain{}
				}
				m.Abstain.Queries++
				if len(hits) == 0 {
					m.Abstain.NoHits++
				}
				if weak {
					m.Abstain.Weak++
				}
				continue
			}
			m.Queries++
			if weak {
				m.Weak++
				if s.Recall5 == 0 {
					m.WeakMissed++
				}
			}
			if answers != nil {
				if m.Answers == nil {
					m.Answers = &AnswerMetrics{}
				}
				m.Answers.add(q.Groups, ans)
			}
			perQuery[label] = append(perQuery[label], s)
			m.Recall1 += s.Recall1
			m.Recall5 += s.Recall5
			m.Recall10 += s.Recall10
			m.Complete10 += s.Complete10
			m.MRR10 += s.MRR10
			m.NDCG10 += s.NDCG10
		}
	}
	for label, m := range sums {
		if n := float64(m.Queries); n > 0 {
			for _, v := range []*float64{&m.Recall1, &m.Recall5, &m.Recall10, &m.Complete10, &m.MRR10, &m.NDCG10} {
				*v = round(*v/n, 4)
			}
		}
		if qs := perQuery[label]; len(qs) > 1 {
			m.CI95 = Bootstrap(qs)
		}
		if m.Answers != nil {
			m.Answers.finish(m.Queries)
		}
		r.Subsets[label] = m
	}
	r.Latency = percentiles(latencies)
	return nil
}

// Score computes the metrics of one query from its relevant groups and the
// ids of the hits, best first. A group is covered at rank k when one of its
// tools is among the first k hits.
func Score(groups [][]string, ids []string) Metrics {
	if len(groups) == 0 {
		return Metrics{}
	}
	covered := make([]bool, len(groups))
	coveredAt := func(k int) float64 {
		n := 0
		for g := range groups {
			for _, id := range ids[:min(k, len(ids))] {
				if slices.Contains(groups[g], id) {
					n++
					break
				}
			}
		}
		return float64(n) / float64(len(groups))
	}
	m := Metrics{Recall1: coveredAt(1), Recall5: coveredAt(5), Recall10: coveredAt(10)}
	if m.Recall10 == 1 {
		m.Complete10 = 1
	}
	var dcg float64
	for rank, id := range ids[:min(10, len(ids))] {
		gain := false
		for g := range groups {
			if !covered[g] && slices.Contains(groups[g], id) {
				covered[g] = true
				gain = true
			}
		}
		if gain {
			if m.MRR10 == 0 {
				m.MRR10 = 1 / float64(rank+1)
			}
			dcg += 1 / math.Log2(float64(rank+2))
		}
	}
	var ideal float64
	for i := range min(len(groups), 10) {
		ideal += 1 / math.Log2(float64(i+2))
	}
	m.NDCG10 = dcg / ideal
	return m
}

func percentiles(ds []time.Duration) Latency {
	if len(ds) == 0 {
		return Latency{}
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	at := func(p float64) float64 {
		i := int(math.Ceil(p*float64(len(ds)))) - 1
		return round(float64(ds[max(i, 0)].Nanoseconds())/1000, 1)
	}
	return Latency{P50: at(0.50), P99: at(0.99)}
}

func round(v float64, digits int) float64 {
	p := math.Pow(10, float64(digits))
	return math.Round(v*p) / p
}

// Bootstrap returns 95% intervals of the mean recall@1, @5 and @10 of
// per-query metrics: the 2.5th and 97.5th percentiles of the means of
// 1,000 resamples of the queries, drawn with replacement with a fixed
// seed, so that a report is the same every time.
func Bootstrap(qs []Metrics) *Intervals {
	const resamples = 1000
	rng := rand.New(rand.NewPCG(1, 2))
	means := [3][]float64{}
	for range resamples {
		var sum [3]float64
		for range qs {
			q := qs[rng.IntN(len(qs))]
			sum[0] += q.Recall1
			sum[1] += q.Recall5
			sum[2] += q.Recall10
		}
		for i := range sum {
			means[i] = append(means[i], sum[i]/float64(len(qs)))
		}
	}
	bounds := func(xs []float64) [2]float64 {
		sort.Float64s(xs)
		return [2]float64{round(xs[int(0.025*float64(len(xs)))], 4), round(xs[int(0.975*float64(len(xs)))-1], 4)}
	}
	return &Intervals{Recall1: bounds(means[0]), Recall5: bounds(means[1]), Recall10: bounds(means[2])}
}

// bootstrapMean is Bootstrap's interval for one per-query figure.
func bootstrapMean(xs []float64) [2]float64 {
	qs := make([]Metrics, len(xs))
	for i, x := range xs {
		qs[i].Recall1 = x
	}
	return Bootstrap(qs).Recall1
}

// LengthBand labels a query by its length in words, so that a figure can
// be read per band: words=1-8 (a short request), words=9-20, words=21+
// (a task described at length).
func LengthBand(text string) string {
	switch n := len(strings.Fields(text)); {
	case n <= 8:
		return "words=1-8"
	case n <= 20:
		return "words=9-20"
	default:
		return "words=21+"
	}
}
