package gateway

import (
	"bytes"
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
//
// obj is the arguments' top level, as normalizeArgs read it: a schema
// that says only which properties are required, each property's one
// type and whether others may come (most tools' schemas) is checked on
// it, without decoding the arguments again; any other, and any
// arguments the cheap check is not sure of, go to the validator.
func misfit(e *catalog.Entry, args json.RawMessage, obj map[string]json.RawMessage) error {
	sc := checkOf(e)
	if sc.full == nil {
		return nil
	}
	if sc.cheap != nil && obj != nil {
		if fits, sure := sc.cheap.check(obj); fits && sure {
			return nil
		}
	}
	var v any
	if json.Unmarshal(args, &v) != nil {
		return nil // normalizeArgs has said so already
	}
	err := sc.full.Validate(v)
	if err == nil {
		return nil
	}
	whole, _ := json.Marshal(shelf.MatchOf(e, shelf.Full, false))
	return fmt.Errorf("the arguments do not fit %s's input schema: %s. The whole definition, to call it again: %s", e.Name, cut(err.Error(), 500), whole)
}

// schemaCheck is how a tool's input schema is checked: full is the
// resolved schema (nil: it cannot be checked), cheap the check of a
// schema simple enough to read on the arguments' top level (nil: not).
type schemaCheck struct {
	full  *jsonschema.Resolved
	cheap *cheapSchema
}

// cheapSchema is what a simple schema says: the required properties,
// each property's one JSON type ("" for any), and whether properties it
// does not name are refused.
type cheapSchema struct {
	required []string
	types    map[string]string
	closed   bool
}

// check reports whether obj fits, and whether the check is sure of it:
// a number that is not plainly an integer where one is wanted is left
// to the validator (1.0 is an integer to JSON Schema).
func (c *cheapSchema) check(obj map[string]json.RawMessage) (fits, sure bool) {
	for _, r := range c.required {
		if _, ok := obj[r]; !ok {
			return false, true
		}
	}
	for k, v := range obj {
		want, known := c.types[k]
		if !known {
			if c.closed {
				return false, true
			}
			continue
		}
		if want == "" || len(v) == 0 {
			continue
		}
		switch got := v[0]; want {
		case "string":
			if got != '"' {
				return false, true
			}
		case "boolean":
			if got != 't' && got != 'f' {
				return false, true
			}
		case "object":
			if got != '{' {
				return false, true
			}
		case "array":
			if got != '[' {
				return false, true
			}
		case "null":
			if got != 'n' {
				return false, true
			}
		case "number", "integer":
			if got != '-' && (got < '0' || got > '9') {
				return false, true
			}
			if want == "integer" && bytes.ContainsAny(v, ".eE") {
				return true, false
			}
		}
	}
	return true, true
}

// cheapOf reads a schema's text as a cheapSchema, or nil when it says
// anything more (a property's enum, pattern or bounds, nested schemas,
// combinators, a format).
func cheapOf(schema json.RawMessage) *cheapSchema {
	var s map[string]json.RawMessage
	if json.Unmarshal(schema, &s) != nil {
		return nil
	}
	c := &cheapSchema{types: map[string]string{}}
	for k, v := range s {
		switch k {
		case "$schema", "title", "description", "$id", "$comment", "examples", "default":
		case "type":
			if string(v) != `"object"` {
				return nil
			}
		case "required":
			if json.Unmarshal(v, &c.required) != nil {
				return nil
			}
		case "additionalProperties":
			switch string(bytes.TrimSpace(v)) {
			case "false":
				c.closed = true
			case "true", "{}":
			default:
				return nil
			}
		case "properties":
			var props map[string]map[string]json.RawMessage
			if json.Unmarshal(v, &props) != nil {
				return nil
			}
			for name, p := range props {
				typ := ""
				for pk, pv := range p {
					switch pk {
					case "title", "description", "$comment", "examples", "default":
					case "type":
						if json.Unmarshal(pv, &typ) != nil {
							return nil // a list of types: left to the validator
						}
						switch typ {
						case "string", "number", "integer", "boolean", "object", "array", "null":
						default:
							return nil
						}
					default:
						return nil
					}
				}
				c.types[name] = typ
			}
		default:
			return nil
		}
	}
	return c
}

// checks keeps each schema's check, by its text (tools with one schema
// share it): resolving is most of a check's cost. It is cleared past
// maxChecks, so that a catalog that changes all day does not grow it
// without end.
var checks = struct {
	sync.Mutex
	m map[string]schemaCheck
}{m: map[string]schemaCheck{}}

const maxChecks = 10_000

func checkOf(e *catalog.Entry) schemaCheck {
	checks.Lock()
	sc, ok := checks.m[string(e.InputSchema)] // no copy to look up
	checks.Unlock()
	if ok {
		return sc
	}
	var s jsonschema.Schema
	if len(e.InputSchema) != 0 && json.Unmarshal(e.InputSchema, &s) == nil {
		// Servers name the draft they wrote for (draft-07 is common, some
		// name older ones); what a tool's arguments use reads the same in
		// every draft the validator takes.
		s.Schema = ""
		if r, err := s.Resolve(nil); err == nil {
			sc = schemaCheck{full: r, cheap: cheapOf(e.InputSchema)}
		}
	}
	checks.Lock()
	if len(checks.m) >= maxChecks {
		clear(checks.m)
	}
	checks.m[string(e.InputSchema)] = sc
	checks.Unlock()
	return sc
}
