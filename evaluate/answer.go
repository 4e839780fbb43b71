package evaluate

import (
	"math"
	"slices"
	"sort"

	"github.com/toolshelf/toolshelf/catalog"
	"github.com/toolshelf/toolshelf/search"
)

// A search answer is read by a model token by token: a tool found at rank
// 3 of an answer that costs 4,000 tokens before it is dearer than one at
// rank 5 of a compact answer. So beside recall@k, Run measures recall
// within a budget: the share of labelled tools found within the first N
// tokens of the answer a face really gives (its depth, its budget, what
// each match carries), and what answers cost.

// Answers says how a face turns hits into an answer, for measuring it.
type Answers struct {
	// Depth, when set, keeps as many hits as it judges worth reading (of
	// Options.Limit retrieved); without it, all are kept.
	Depth *search.Depth
	// Budget, when positive, keeps the hits whose Cost adds up to no more
	// than it (at least one).
	Budget int
	// Cost is the tokens one hit costs in the answer.
	Cost func(search.Hit) int
	// Overhead is the tokens of an answer around its matches.
	Overhead int
	// Cap, when set, also bounds an answer's matches by what it says of
	// the hits (shelf.WholeCost: never more than the old answer cost);
	// 0 from it bounds nothing.
	Cap func(hits []search.Hit) int
	// Companions, when set, are the tools an answer names beside a hit
	// (search.Companions): a group is covered when the answer names one
	// of its tools, as a match or as a companion.
	Companions func(search.Hit) []*catalog.Entry
}

// Within are the token budgets recall is measured within.
var Within = []int{1000, 2500}

// AnswerMetrics are what answers carried and cost, over a subset's
// answerable queries.
type AnswerMetrics struct {
	// Recall1000 and Recall2500: covered groups / groups, counting a
	// group covered when one of its tools is in the answer and the
	// answer up to its end costs at most N tokens.
	Recall1000 float64 `json:"recall@1000tokens"`
	Recall2500 float64 `json:"recall@2500tokens"`
	// Tokens are percentiles of an answer's cost.
	TokensP50 int `json:"tokens_p50"`
	TokensP90 int `json:"tokens_p90"`
	// Matches is the mean number of matches an answer carries.
	Matches float64 `json:"matches"`
	// Complete is the share of answers that name a tool of every group
	// (as a match or a companion): complete coverage by the answer.
	Complete float64 `json:"complete"`
	// CI95 are bootstrap 95% intervals of the two recalls (see
	// Bootstrap).
	CI95 *[2][2]float64 `json:"ci95,omitempty"`

	tokens           []int
	per1000, per2500 []float64
}

// answered is what an answer names: each kept hit with its companions,
// and what the answer costs up to its end.
type answered struct {
	hits  []search.Hit
	named [][]string // per hit: its id and its companions' ids
	costs []int
}

// answer returns what a face's answer of hits names and costs.
func (a *Answers) answer(hits []search.Hit) answered {
	kept, costs := a.keep(hits)
	ans := answered{hits: kept, costs: costs}
	for _, h := range kept {
		ids := []string{h.Entry.ID}
		if a.Companions != nil {
			for _, c := range a.Companions(h) {
				ids = append(ids, c.ID)
			}
		}
		ans.named = append(ans.named, ids)
	}
	return ans
}

// keep returns the hits a face's answer keeps, and the cumulative cost
// of the answer at the end of each.
func (a *Answers) keep(hits []search.Hit) ([]search.Hit, []int) {
	if a.Depth != nil {
		hits = hits[:a.Depth.Keep(hits)]
	}
	costs := make([]int, 0, len(hits))
	total := a.Overhead
	budget := a.Budget
	if a.Cap != nil && budget > 0 {
		if c := a.Cap(hits); c > 0 {
			budget = min(budget, c)
		}
	}
	for i, h := range hits {
		c := a.Cost(h)
		if budget > 0 && i > 0 && total+c-a.Overhead > budget {
			hits = hits[:i]
			break
		}
		total += c
		costs = append(costs, total)
	}
	return hits, costs
}

// recallWithin is the share of groups covered by what the answer names
// up to where it has cost n tokens.
func recallWithin(groups [][]string, ans answered, n int) float64 {
	if len(groups) == 0 {
		return 0
	}
	covered := 0
	for _, g := range groups {
	hits:
		for i, ids := range ans.named {
			if ans.costs[i] > n {
				break
			}
			for _, id := range ids {
				if slices.Contains(g, id) {
					covered++
					break hits
				}
			}
		}
	}
	return float64(covered) / float64(len(groups))
}

// add counts one answer.
func (m *AnswerMetrics) add(groups [][]string, ans answered) {
	hits, costs := ans.hits, ans.costs
	r1, r2 := recallWithin(groups, ans, Within[0]), recallWithin(groups, ans, Within[1])
	if recallWithin(groups, ans, math.MaxInt) == 1 {
		m.Complete++
	}
	m.Recall1000 += r1
	m.Recall2500 += r2
	m.per1000, m.per2500 = append(m.per1000, r1), append(m.per2500, r2)
	m.Matches += float64(len(hits))
	total := 0
	if len(costs) > 0 {
		total = costs[len(costs)-1]
	}
	m.tokens = append(m.tokens, total)
}

// finish turns sums over n queries into means and percentiles.
func (m *AnswerMetrics) finish(n int) {
	if n == 0 {
		return
	}
	m.Recall1000 = round(m.Recall1000/float64(n), 4)
	m.Recall2500 = round(m.Recall2500/float64(n), 4)
	m.Matches = round(m.Matches/float64(n), 2)
	m.Complete = round(m.Complete/float64(n), 4)
	if n > 1 {
		m.CI95 = &[2][2]float64{bootstrapMean(m.per1000), bootstrapMean(m.per2500)}
	}
	sort.Ints(m.tokens)
	at := func(p float64) int { return m.tokens[min(len(m.tokens)-1, int(p*float64(len(m.tokens))))] }
	m.TokensP50, m.TokensP90 = at(0.5), at(0.9)
}
