package policy

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"math"
	"sync"

	"github.com/tiktoken-go/tokenizer"
)

// A Counter measures how many tokens tool definitions cost in a request.
// Definitions are Messages API tool objects ({"name", "description",
// "input_schema"}), as [catalog.Entry.Definition] returns them.
type Counter interface {
	CountTokens(ctx context.Context, defs []json.RawMessage) (int, error)
}

// Sources of a token count.
const (
	SourceHeuristic   = "heuristic"    // characters / 2.5
	SourceTokenizer   = "tokenizer"    // offline cl100k × ClaudeFactor
	SourceCountTokens = "count_tokens" // the Messages API's count_tokens
)

// Chars is what the character heuristic measures: the lengths of each
// definition's name, description and serialised input schema.
func Chars(defs []json.RawMessage) int {
	n := 0
	for _, d := range defs {
		var t struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			InputSchema json.RawMessage `json:"input_schema"`
		}
		_ = json.Unmarshal(d, &t)
		n += len(t.Name) + len(t.Description) + len(t.InputSchema)
	}
	return n
}

// Heuristic counts tokens as characters / 2.5, Claude Code's fallback
// when nothing better is available. On real tool definitions it
// overestimates by about 1.5–1.9 times.
type Heuristic struct{}

// CountTokens implements Counter.
func (Heuristic) CountTokens(_ context.Context, defs []json.RawMessage) (int, error) {
	return int(math.Ceil(float64(Chars(defs)) / CharsPerToken)), nil
}

// ClaudeFactor scales cl100k counts to Claude's tokenizer. There is no
// offline tokenizer for current Claude models; a third-party calibration
// on MCP tool definitions measured count_tokens / cl100k at 1.18–1.26,
// 1.23 overall.
const ClaudeFactor = 1.23

// Tokenizer estimates tokens offline: the cl100k token count of each
// definition's JSON, times Factor (ClaudeFactor when zero), rounded per
// definition. Rounding each definition makes counts add up: a set costs
// the sum of what its tools cost, so a per-server table, a catalog's
// total and a decision's count agree.
type Tokenizer struct {
	Factor float64
}

var (
	cl100kOnce sync.Once
	cl100k     tokenizer.Codec
	cl100kErr  error
)

// CountTokens implements Counter.
func (t Tokenizer) CountTokens(_ context.Context, defs []json.RawMessage) (int, error) {
	f := t.Factor
	if f == 0 {
		f = ClaudeFactor
	}
	n := 0
	for _, d := range defs {
		c, err := counted.count(d)
		if err != nil {
			return 0, err
		}
		n += int(math.Round(float64(c) * f))
	}
	return n, nil
}

// counted remembers the cl100k count of definitions already counted, by
// content: a new catalog snapshot (one server's list changed) mostly
// holds definitions counted before, and tokenising is the slow part.
var counted = &countCache{counts: map[[sha256.Size]byte]int{}}

// maxCounted bounds the cache: a hundred thousand definitions, 4 MB.
const maxCounted = 100_000

type countCache struct {
	mu     sync.Mutex
	counts map[[sha256.Size]byte]int
}

func (c *countCache) count(def []byte) (int, error) {
	key := sha256.Sum256(def)
	c.mu.Lock()
	n, ok := c.counts[key]
	c.mu.Unlock()
	if ok {
		return n, nil
	}
	n, err := CL100K(string(def))
	if err != nil {
		return 0, err
	}
	c.mu.Lock()
	if len(c.counts) >= maxCounted {
		clear(c.counts)
	}
	c.counts[key] = n
	c.mu.Unlock()
	return n, nil
}

// CL100K returns the number of cl100k_base tokens in s. The vocabulary is
// compiled into the binary; it is loaded on first use.
func CL100K(s string) (int, error) {
	cl100kOnce.Do(func() { cl100k, cl100kErr = tokenizer.Get(tokenizer.Cl100kBase) })
	if cl100kErr != nil {
		return 0, cl100kErr
	}
	ids, _, err := cl100k.Encode(s)
	return len(ids), err
}

// Measure counts what defs cost with counter. When the counter fails (an
// API that is down, a proxy without count_tokens), the character
// heuristic is used instead and the failure is kept in the Cost, so that
// the decision says what happened.
func Measure(ctx context.Context, counter Counter, defs []json.RawMessage) Cost {
	c := Cost{Chars: Chars(defs)}
	if counter != nil {
		n, err := counter.CountTokens(ctx, defs)
		if err == nil {
			c.Tokens, c.Source = n, sourceOf(counter)
			return c
		}
		c.CountError = err.Error()
	}
	c.Tokens, _ = Heuristic{}.CountTokens(ctx, defs)
	c.Source = SourceHeuristic
	return c
}

// sourceOf names where a counter's numbers come from. A counter outside
// this package may say with a Source method.
func sourceOf(c Counter) string {
	switch c := c.(type) {
	case Heuristic:
		return SourceHeuristic
	case Tokenizer, *Tokenizer:
		return SourceTokenizer
	case interface{ Source() string }:
		return c.Source()
	}
	return "counter"
}
