package gateway

import (
	"encoding/json"
	"fmt"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/toolshelf/toolshelf/catalog"
	"github.com/toolshelf/toolshelf/shelf"
)

// A search answers with compact matches (a signature, not the schema),
// so a model may call with arguments that do not fit. The gateway checks
// them against the tool's input schema before the call goes out, and
// answers a misfit with the schema itself: the model corrects itself in
// one step, and the server never sees the bad call.

// misfit returns the tool error for arguments that do not fit e's input
// schema, or nil when they fit (or the schema cannot be checked: one
// with remote references, or of a draft the validator does not read,
// is the server's to check).
func misfit(e *catalog.Entry, args json.RawMessage) error {
	rs := resolvedSchema(e)
	if rs == nil {
		return nil
	}
	var v any
	if json.Unmarshal(args, &v) != nil {
		return nil // normalizeArgs has said so already
	}
	err := rs.Validate(v)
	if err == nil {
		return nil
	}
	whole, _ := json.Marshal(shelf.MatchOf(e, shelf.Full, false))
	return fmt.Errorf("the arguments do not fit %s's input schema: %s. The whole definition, to call it again: %s", e.Name, cut(err.Error(), 500), whole)
}

// resolved keeps the schemas resolved, by their text (tools with one
// schema share it): resolving is most of a check's cost. It is cleared
// past maxResolved, so that a catalog that changes all day does not grow
// it without end.
var resolved = struct {
	sync.Mutex
	m map[string]*jsonschema.Resolved // nil: cannot be checked
}{m: map[string]*jsonschema.Resolved{}}

const maxResolved = 10_000

func resolvedSchema(e *catalog.Entry) *jsonschema.Resolved {
	resolved.Lock()
	rs, ok := resolved.m[string(e.InputSchema)] // no copy to look up
	resolved.Unlock()
	if ok {
		return rs
	}
	var s jsonschema.Schema
	if len(e.InputSchema) == 0 || json.Unmarshal(e.InputSchema, &s) != nil {
		rs = nil
	} else {
		// Servers name the draft they wrote for (draft-07 is common, some
		// name older ones); what a tool's arguments use reads the same in
		// every draft the validator takes.
		s.Schema = ""
		if r, err := s.Resolve(nil); err == nil {
			rs = r
		}
	}
	resolved.Lock()
	if len(resolved.m) >= maxResolved {
		clear(resolved.m)
	}
	resolved.m[string(e.InputSchema)] = rs
	resolved.Unlock()
	return rs
}
