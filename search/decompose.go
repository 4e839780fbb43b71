package search

import (
	"cmp"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Multi-step requests ("check my balance, then send 0.05 ETH, and finally
// post the receipt to Slack") need one tool per step, but one ranked list
// over the whole request favours the step with the rarest words. Such a
// request is split into its clauses, each clause is searched on its own,
// and the results are interleaved, so that every step has its best tools
// near the top.

// clauseBreak splits a request into clauses: at sentence ends, semicolons,
// and the connectives people use to sequence steps.
var clauseBreak = regexp.MustCompile(`(?i)[.!?;]+\s+|[.!?;]+$|\n+|,?\s+\b(?:and then|then|after that|afterwards|afterward|next|finally|lastly|also|as well as|followed by|once (?:that|this|done)|after (?:which|you)|before (?:that|you))\b,?\s*`)

// minClauseWords is how many words other than stop words a clause needs
// to be searched on its own.
const minClauseWords = 2

// clauses returns the clauses of a query worth searching separately, or
// nil when it has fewer than two.
func clauses(query string) []string {
	var out []string
	for _, part := range clauseBreak.Split(query, -1) {
		part = strings.TrimSpace(part)
		words := 0
		for _, t := range Tokenize(part) {
			if !stopWords[t] {
				words++
			}
		}
		if words >= minClauseWords {
			out = append(out, part)
		}
	}
	if len(out) < 2 {
		return nil
	}
	return out
}

// fuse merges ranked lists by weighted reciprocal rank: a hit at rank r
// (from 0) of list i adds weights[i] / (k + r + 1). Ties keep the order
// of first appearance. Each fused hit is explained by what each list
// added, named after labels[i], so that its matches add up to its score.
func fuse(lists [][]Hit, labels []string, weights []float64, k float64, limit int) []Hit {
	type acc struct {
		hit     Hit
		score   float64
		matches []Match
	}
	byName := map[string]*acc{}
	var order []*acc
	for i, l := range lists {
		for r, h := range l {
			a := byName[h.Entry.Name]
			if a == nil {
				a = &acc{hit: h}
				byName[h.Entry.Name] = a
				order = append(order, a)
			}
			v := weights[i] / (k + float64(r) + 1)
			a.score += v
			a.matches = append(a.matches, Match{Term: fmt.Sprintf("rank %d in %s", r+1, labels[i]), Fields: matchFields(h.Matches), Score: v})
		}
	}
	sort.SliceStable(order, func(i, j int) bool { return order[i].score > order[j].score })
	out := make([]Hit, 0, min(limit, len(order)))
	for _, a := range order[:min(limit, len(order))] {
		h := a.hit
		h.Score, h.Matches = a.score, a.matches
		out = append(out, h)
	}
	return out
}

// matchFields is the union of the fields of matches, in first-seen order.
func matchFields(ms []Match) []string {
	var fields []string
	for _, m := range ms {
		for _, f := range m.Fields {
			if !slices.Contains(fields, f) {
				fields = append(fields, f)
			}
		}
	}
	return fields
}

// partLabels names the parts of a multi-step request for explanations.
func partLabels(clauses []string) []string {
	labels := []string{"the whole request"}
	for _, c := range clauses {
		labels = append(labels, strconv.Quote(c))
	}
	return labels
}

// allWeak returns why a request split into lists (the whole request's
// first) is weak: the first list's reason when no list has a strong best
// hit, "" when one has — a long request can be weak as a whole and strong
// step by step.
func allWeak(lists [][]Hit) string {
	reason := ""
	for i := len(lists) - 1; i >= 0; i-- {
		l := lists[i]
		if len(l) > 0 && !l[0].Weak {
			return ""
		}
		if len(l) > 0 {
			reason = l[0].WeakReason
		}
	}
	return cmp.Or(reason, WeakLowMatch)
}

// markWeak flags hits weak for reason, or not weak when it is "".
func markWeak(hits []Hit, reason string) {
	for i := range hits {
		hits[i].Weak, hits[i].WeakReason = reason != "", reason
	}
}

// Why a search's hits are flagged weak.
const (
	WeakLowMatch  = "the best match says little of what was asked"
	WeakNotHere   = "most of the request's words are in no tool here"
	WeakOnlyAlike = "the best match says none of the request's own words, only words like them"
)
