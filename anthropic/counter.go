package anthropic

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"
)

// ToolsPreamble is what the API adds to a request's count whenever it has
// tools: the tool-use system prompt, about 500 tokens. Counting N tool
// sets separately would otherwise count it N times.
const ToolsPreamble = 500

// TokenCounter counts what tool definitions cost with the API's
// count_tokens, for one model. It implements policy.Counter.
//
// The count of a tool set is the count of a one-word request with the
// tools, less the same request without them, less the tools preamble. The
// last count is cached by the sorted set of tool names (which changes
// when servers connect or leave), so a counter asked again about the same
// tools sends nothing.
type TokenCounter struct {
	Client *Client
	Model  string
	// Preamble overrides ToolsPreamble when positive.
	Preamble int

	mu       sync.Mutex
	key      string
	count    int
	baseline map[string]int // model → tokens of the request without tools
}

// CountTokens implements policy.Counter.
func (t *TokenCounter) CountTokens(ctx context.Context, defs []json.RawMessage) (int, error) {
	key := t.Model + "|" + nameKey(defs)
	t.mu.Lock()
	if key == t.key {
		n := t.count
		t.mu.Unlock()
		return n, nil
	}
	base, haveBase := t.baseline[t.Model]
	t.mu.Unlock()

	msgs := json.RawMessage(`[{"role":"user","content":"x"}]`)
	if !haveBase {
		b, _ := json.Marshal(map[string]any{"model": t.Model, "messages": msgs})
		n, err := t.Client.CountTokens(ctx, b, nil)
		if err != nil {
			return 0, err
		}
		base = n
	}
	b, _ := json.Marshal(map[string]any{"model": t.Model, "messages": msgs, "tools": defs})
	raw, err := t.Client.CountTokens(ctx, b, nil)
	if err != nil {
		return 0, err
	}
	preamble := t.Preamble
	if preamble <= 0 {
		preamble = ToolsPreamble
	}
	n := max(0, raw-base-preamble)
	if len(defs) == 0 {
		n = 0
	}
	t.mu.Lock()
	if t.baseline == nil {
		t.baseline = map[string]int{}
	}
	t.baseline[t.Model] = base
	t.key, t.count = key, n
	t.mu.Unlock()
	return n, nil
}

// nameKey is the sorted, comma-joined names of tool definitions.
func nameKey(defs []json.RawMessage) string {
	names := make([]string, 0, len(defs))
	for _, d := range defs {
		var t struct {
			Name string `json:"name"`
		}
		_ = json.Unmarshal(d, &t)
		names = append(names, t.Name)
	}
	slices.Sort(names)
	return strings.Join(names, ",")
}

// Source names where the counter's numbers come from (policy.Measure).
func (t *TokenCounter) Source() string { return "count_tokens" }
