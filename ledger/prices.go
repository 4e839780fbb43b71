package ledger

import (
	"math"
	"regexp"
	"strings"
)

// Price is what a model's tokens cost, in US dollars per million tokens
// of each kind.
type Price struct {
	Input      float64 `json:"input"`
	Output     float64 `json:"output"`
	CacheRead  float64 `json:"cacheRead"`
	CacheWrite float64 `json:"cacheWrite"`
}

// Cost is what t costs at p, in billionths of a dollar, rounded up.
func (p Price) Cost(t Tokens) int64 {
	// $/MTok × tokens = micro-dollars; × 1000 = nanos.
	micro := p.Input*float64(t.Input) + p.Output*float64(t.Output) + p.CacheRead*float64(t.CacheRead) + p.CacheWrite*float64(t.CacheWrite)
	return int64(math.Ceil(micro * 1000))
}

// Prices are prices by model name. A model is found by its name, then
// without a date at its end (claude-opus-4-8-20261015), then by the
// longest name in the table it begins with.
type Prices map[string]Price

// PricesDate is when the built-in table was read from its sources.
const PricesDate = "2026-11-28"

// BuiltinPrices returns the built-in table, a fresh copy: Anthropic's
// models as platform.claude.com/docs/en/about-claude/pricing lists them
// (a cache write at the 5-minute rate; Haiku 5.5 at its rate for prompts
// up to 100k tokens), OpenAI's as its pricing page lists them (cached
// input as a cache read; OpenAI bills no cache writes). docs/design.md
// says where each row comes from; the configuration's "prices" override
// them.
func BuiltinPrices() Prices {
	p := Prices{}
	set := func(in, write, read, out float64, models ...string) {
		for _, m := range models {
			p[m] = Price{Input: in, Output: out, CacheRead: read, CacheWrite: write}
		}
	}
	set(10, 12.5, 0.25, 50, "claude-fable-5-1", "claude-mythos-5-1")
	set(10, 12.5, 1, 50, "claude-fable-5", "claude-mythos-5")
	set(4, 5, 0.2, 20, "claude-opus-5-5")
	set(5, 6.25, 0.5, 25, "claude-opus-5", "claude-opus-4-8", "claude-opus-4-7", "claude-opus-4-6", "claude-opus-4-5")
	set(15, 18.75, 1.5, 75, "claude-opus-4-1", "claude-opus-4")
	set(2, 2.5, 0.1, 10, "claude-sonnet-5-5")
	set(2, 2.5, 0.2, 10, "claude-sonnet-5")
	set(3, 3.75, 0.3, 15, "claude-sonnet-4-6", "claude-sonnet-4-5", "claude-sonnet-4")
	set(0.1, 0.125, 0.01, 0.5, "claude-haiku-5-5")
	set(1, 1.25, 0.1, 5, "claude-haiku-4-5")
	set(0.8, 1, 0.08, 4, "claude-haiku-3-5", "claude-3-5-haiku")
	set(5, 0, 0.5, 30, "gpt-5.5")
	set(30, 0, 30, 180, "gpt-5.5-pro")
	set(2.5, 0, 0.25, 15, "gpt-5.4")
	set(0.75, 0, 0.075, 4.5, "gpt-5.4-mini")
	set(0.2, 0, 0.02, 1.25, "gpt-5.4-nano")
	return p
}

// dated is a model name's date suffix.
var dated = regexp.MustCompile(`-(\d{8}|\d{4}-\d{2}-\d{2})$`)

// Of returns the price of model.
func (ps Prices) Of(model string) (Price, bool) {
	name, ok := ps.Name(model)
	return ps[name], ok
}

// Name returns the table's name for model: the row Of prices it by.
// Metrics label a model by it, so that a client's made-up names add no
// series.
func (ps Prices) Name(model string) (string, bool) {
	if _, ok := ps[model]; ok {
		return model, true
	}
	model = dated.ReplaceAllString(model, "")
	if _, ok := ps[model]; ok {
		return model, true
	}
	best := ""
	for name := range ps {
		// What follows the name must be a word of its own, not a version:
		// claude-opus-4 is neither claude-opus-45 nor claude-opus-4-9.
		rest, ok := strings.CutPrefix(model, name)
		if ok && len(name) > len(best) && len(rest) >= 2 && rest[0] == '-' && (rest[1] < '0' || rest[1] > '9') {
			best = name
		}
	}
	return best, best != ""
}
