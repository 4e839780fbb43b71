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
}

// Definitions returns the definition of every tool of c that a client
// can be sent, in catalog order: unverified tools are left out.
func Definitions(c *catalog.Catalog) []json.RawMessage {
	defs := make([]json.RawMessage, 0, c.Len())
	for e := range c.All() {
		if !e.Unverified {
			defs = append(defs, e.Definition())
		}
	}
	return defs
}

// NewView measures c for checklist with counter (the offline [Tokenizer]
// when nil). extra are the definitions of the face's own tools (its
// search tool, the gateway's call_tool), which are never in the catalog.
func NewView(ctx context.Context, c *catalog.Catalog, checklist Checklist, extra []json.RawMessage, counter Counter) *View {
	if counter == nil {
		counter = Tokenizer{}
	}
	v := &View{Catalog: c, Checklist: checklist}
	var all, deferrable []json.RawMessage
	loaded := append([]json.RawMessage(nil), extra...)
	for _, d := range extra {
		var t struct {
			Name string `json:"name"`
		}
		_ = json.Unmarshal(d, &t)
		v.Tools = append(v.Tools, Tool{Name: t.Name})
	}
	for e := range c.All() {
		if e.Unverified {
			continue
		}
		def := e.Definition()
		all = append(all, def)
		t := ToolOf(e)
		v.Tools = append(v.Tools, t)
		if checklist.Defer(t).Deferred {
			deferrable = append(deferrable, def)
		} else {
			loaded = append(loaded, def)
		}
	}
	v.All = Measure(ctx, counter, all)
	v.Deferrable = Measure(ctx, counter, deferrable)
	v.Loaded = Measure(ctx, counter, loaded)
	return v
}

// Decide runs the definitive gate for this catalog: r's Tools, Checklist
// and Cost are the view's.
func (v *View) Decide(r Request) Decision {
	r.Tools, r.Checklist, r.Cost = v.Tools, v.Checklist, v.Deferrable
	return Decide(r)
}
