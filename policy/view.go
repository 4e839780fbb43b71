package policy

import (
	"context"
	"encoding/json"

	"github.com/toolshelf/toolshelf/catalog"
)

// View is the policy's view of one catalog snapshot: the checklist's
// verdict on each tool that can be sent, and what sending them costs.
// Counting means tokenising every definition, so a face builds one View
// per snapshot and asks it for every decision; every face builds it the
// same way, so every face prints the same numbers.
type View struct {
	Catalog   *catalog.Catalog
	Checklist Checklist
	// Tools is the face's own tools (Extra) followed by every verified
	// tool of the catalog. Unverified tools cannot be called or sent.
	Tools []Tool
	// All is what every verified catalog tool costs sent in full: the
	// catalog's token total. Deferrable is the part the checklist defers;
	// Loaded is what stays visible when deferring: the face's own tools
	// and the catalog tools the checklist keeps.
	All, Deferrable, Loaded Cost
	// Tool is what each verified catalog tool costs, by qualified name,
	// when the counter counts one definition at a time (the offline
	// tokenizer and the heuristic); nil for a counter that counts sets
	// (count_tokens). The totals are then sums of these.
	Tool map[string]Cost
}

// NewView measures c for checklist with counter (the offline [Tokenizer]
// when nil). extra are the definitions of the face's own tools (its
// search tool, the gateway's call_tool), which are never in the catalog.
func NewView(ctx context.Context, c *catalog.Catalog, checklist Checklist, extra []json.RawMessage, counter Counter) *View {
	if counter == nil {
		counter = Tokenizer{}
	}
	v := &View{Catalog: c, Checklist: checklist}
	for _, d := range extra {
		var t struct {
			Name string `json:"name"`
		}
		_ = json.Unmarshal(d, &t)
		v.Tools = append(v.Tools, Tool{Name: t.Name})
	}
	type sent struct {
		name     string
		def      json.RawMessage
		deferred bool
	}
	var tools []sent
	for e := range c.All() {
		if e.Unverified {
			continue
		}
		t := ToolOf(e)
		v.Tools = append(v.Tools, t)
		tools = append(tools, sent{e.Name, e.Definition(), checklist.Defer(t).Deferred})
	}
	if !additive(counter) {
		// A counter of sets (count_tokens) is asked once a set.
		var all, deferrable []json.RawMessage
		loaded := append([]json.RawMessage(nil), extra...)
		for _, t := range tools {
			all = append(all, t.def)
			if t.deferred {
				deferrable = append(deferrable, t.def)
			} else {
				loaded = append(loaded, t.def)
			}
		}
		v.All = Measure(ctx, counter, all)
		v.Deferrable = Measure(ctx, counter, deferrable)
		v.Loaded = Measure(ctx, counter, loaded)
		return v
	}
	// Each definition is counted once; every total is a sum.
	src := sourceOf(counter)
	v.All, v.Deferrable, v.Loaded = Cost{Source: src}, Cost{Source: src}, Cost{Source: src}
	for _, d := range extra {
		v.Loaded.add(Measure(ctx, counter, []json.RawMessage{d}))
	}
	v.Tool = make(map[string]Cost, len(tools))
	for _, t := range tools {
		cost := Measure(ctx, counter, []json.RawMessage{t.def})
		v.Tool[t.name] = cost
		v.All.add(cost)
		if t.deferred {
			v.Deferrable.add(cost)
		} else {
			v.Loaded.add(cost)
		}
	}
	return v
}

// additive reports whether a counter's count of a set is the sum of its
// counts of each definition.
func additive(c Counter) bool {
	switch c.(type) {
	case Tokenizer, *Tokenizer:
		return true
	}
	return false
}

// add adds what one definition costs to a total.
func (c *Cost) add(d Cost) {
	c.Tokens += d.Tokens
	c.Chars += d.Chars
	if d.Source != c.Source && d.CountError != "" {
		c.Source, c.CountError = d.Source, d.CountError
	}
}

// Decide runs the definitive gate for this catalog: r's Tools, Checklist
// and Cost are the view's.
func (v *View) Decide(r Request) Decision {
	r.Tools, r.Checklist, r.Cost = v.Tools, v.Checklist, v.Deferrable
	return Decide(r)
}
