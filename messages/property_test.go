package messages

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/toolshelf/toolshelf/policy"
)

// TestDiscoveredNeverShrinks drives random conversations: searches that
// reference random tools (some of which later leave the pool), calls,
// text, compactions that keep a random tail, and pool changes. After every
// step the discovered set holds everything it held before, and the
// prepared request sends every tool it references.
func TestDiscoveredNeverShrinks(t *testing.T) {
	for seed := range uint64(200) {
		r := rand.New(rand.NewPCG(seed, 1))
		var all []string
		for i := range 12 {
			all = append(all, fmt.Sprintf("mcp__s%d__tool_%d", i%3, i))
		}
		pool := map[string]bool{}
		for _, n := range all[:8] {
			pool[n] = true
		}
		var history []Message
		prev := map[string]bool{}
		id := 0
		for step := range 40 {
			switch op := r.IntN(10); {
			case op < 3: // a search that found some tools
				id++
				use := fmt.Sprintf("toolu_%d", id)
				var refs []Block
				for range 1 + r.IntN(3) {
					refs = append(refs, ToolReference(all[r.IntN(len(all))]))
				}
				history = append(history,
					Message{Role: "assistant", Content: []Block{Block{Type: "tool_use"}.With("id", use).With("name", "tool_search").With("input", map[string]string{"query": "x"})}},
					Message{Role: "user", Content: append([]Block{ToolResult(use, refs, false)}, maybeText(r)...)})
			case op < 5: // a call
				id++
				use := fmt.Sprintf("toolu_%d", id)
				history = append(history,
					Message{Role: "assistant", Content: []Block{Block{Type: "tool_use"}.With("id", use).With("name", all[r.IntN(len(all))]).With("input", map[string]string{})}},
					Message{Role: "user", Content: []Block{ToolResult(use, []Block{TextBlock("done")}, false)}})
			case op < 6:
				history = append(history, Message{Role: "user", Content: []Block{TextBlock("more")}})
			case op < 8: // compaction, keeping a random tail
				keep := r.IntN(min(4, len(history)) + 1)
				discovered := DiscoveredNames(history)
				tail := slices.Clone(history[len(history)-keep:])
				history = append([]Message{NewBoundary("summary", discovered)}, tail...)
			default: // a server connects or leaves
				n := all[r.IntN(len(all))]
				pool[n] = !pool[n]
			}
			now := Discovered(history)
			for n := range prev {
				if !now[n] {
					t.Fatalf("seed %d step %d: %s left the discovered set", seed, step, n)
				}
			}
			prev = now

			var tools []Tool
			var deferred []string
			for _, n := range slices.Sorted(maps.Keys(pool)) {
				if pool[n] {
					tools = append(tools, Tool{Name: n, InputSchema: []byte(`{"type":"object"}`), CacheControl: cacheSometimes(r)})
					deferred = append(deferred, n)
				}
			}
			tools = append(tools, (&Searcher{}).Tool())
			p, err := Prepare(Turn{
				Model: "m", Tools: tools, History: history, SearchTool: DefaultSearchTool,
				Decision: policy.Decision{Enabled: r.IntN(5) > 0, Deferred: deferred},
				Announce: Announce(r.IntN(2)),
			})
			if err != nil {
				t.Fatal(err)
			}
			checkInvariants(t, p)
			checkDiscoveredVisible(t, p, now, pool)
			if t.Failed() {
				t.Fatalf("seed %d step %d", seed, step)
			}
		}
	}
}

func maybeText(r *rand.Rand) []Block {
	if r.IntN(3) == 0 {
		return []Block{TextBlock("a note beside the results")}
	}
	return nil
}

func cacheSometimes(r *rand.Rand) []byte {
	if r.IntN(6) == 0 {
		return []byte(`{"type":"ephemeral"}`)
	}
	return nil
}

// checkDiscoveredVisible: with search on, every discovered tool still in
// the pool is sent, and the model can see it: in full, or deferred with a
// reference in the request that expands it.
func checkDiscoveredVisible(t *testing.T, p *Prepared, discovered, pool map[string]bool) {
	t.Helper()
	sent := map[string]Tool{}
	for _, tool := range p.Request.Tools {
		sent[tool.Name] = tool
	}
	if _, on := sent[DefaultSearchTool]; !on {
		return
	}
	refs := referencedIn(p.Request.Messages)
	for n := range discovered {
		if !pool[n] {
			continue
		}
		tool, ok := sent[n]
		switch {
		case !ok:
			t.Errorf("discovered %s is not sent", n)
		case tool.DeferLoading && !refs[n]:
			t.Errorf("discovered %s is deferred with no reference to expand it", n)
		}
	}
}
