package catalog

import (
	"encoding/json"
	"slices"
	"strings"

	"github.com/toolshelf/toolshelf/internal/jsonscan"
)

// A catalog file of 100,000 tools is hundreds of megabytes of JSON, and
// encoding/json reads each tool several times over (validating, skipping
// the schema, decoding the schema for its properties, each property for
// its description). parseFast reads the common shape of a tool in one
// walk; anything it is not sure of (a key that differs from a field only
// by case, a field of an unexpected type, a repeated property) makes it
// give up, and ParseTool decodes with encoding/json as before, so the two
// agree (FuzzParseFast).

// toolKeys are the keys of toolJSON.
var toolKeys = [...]string{"name", "title", "description", "inputSchema", "annotations", "_meta"}

// parseFast fills t and the tool's parameters from a compact, valid tool
// object, which the entry keeps as Raw and never changes: strings that
// need no decoding share its memory rather than copy it (a description is
// a large part of a tool). ok is false when the caller must decode it
// with encoding/json.
func parseFast(b []byte) (t toolJSON, params []Param, ok bool) {
	s := jsonscan.New(b)
	ok = true
	isObject := s.Object(func(key string) {
		if !ok {
			return
		}
		switch key {
		case "name":
			t.Name, ok = s.SharedString()
		case "title":
			t.Title, ok = s.SharedString()
		case "description":
			t.Description, ok = s.SharedString()
		case "inputSchema":
			start := s.Pos()
			params, ok = properties(s)
			t.InputSchema = rawRef(b[start:s.Pos()])
		case "annotations":
			a := &annotationsJSON{}
			t.Annotations = a
			ok = objectOf(s, func(key string) bool {
				if key == "title" {
					var good bool
					a.Title, good = s.SharedString()
					return good
				}
				if h := a.hint(key); h != nil {
					// As encoding/json would: true, false, or null
					// (unchanged); anything else goes the slow way.
					switch string(s.Value()) {
					case "true":
						*h = true
					case "false":
						*h = false
					case "null":
					default:
						return false
					}
					return true
				}
				// Another case of a key it reads: encoding/json matches
				// keys without case, so it decides.
				return !strings.EqualFold(key, "title") && !a.anyCase(key)
			})
		case "_meta":
			t.Meta = map[string]json.RawMessage{}
			ok = objectOf(s, func(key string) bool {
				t.Meta[key] = json.RawMessage(s.Value())
				return true
			})
		default:
			for _, k := range toolKeys {
				if strings.EqualFold(key, k) {
					ok = false
				}
			}
		}
	})
	if !ok || !isObject {
		return toolJSON{}, nil, false
	}
	return t, params, true
}

// objectOf walks the object at the cursor, calling member with each key;
// it is false when the value is not an object or member says so.
func objectOf(s *jsonscan.Scanner, member func(key string) bool) bool {
	ok := true
	isObject := s.Object(func(key string) {
		if ok {
			ok = member(key)
		}
	})
	return ok && isObject
}

// properties reads an input schema's top-level properties as parseParams
// does, sorted by name; ok is false when it cannot be sure to agree.
func properties(s *jsonscan.Scanner) (params []Param, ok bool) {
	seen := false
	ok = objectOf(s, func(key string) bool {
		if key != "properties" {
			return !strings.EqualFold(key, "properties")
		}
		if seen || s.Peek() != '{' {
			return false
		}
		seen = true
		return objectOf(s, func(name string) bool {
			p := Param{Name: name}
			good := true
			if s.Peek() == '{' {
				found := false
				good = objectOf(s, func(key string) bool {
					if key != "description" {
						return !strings.EqualFold(key, "description")
					}
					if found {
						return false // repeated: encoding/json decides
					}
					found = true
					// A description that is not a string leaves none, as
					// encoding/json does.
					p.Description, _ = s.SharedString()
					return true
				})
			}
			params = append(params, p)
			return good
		})
	})
	if !ok {
		return nil, false
	}
	slices.SortStableFunc(params, func(a, b Param) int { return strings.Compare(a.Name, b.Name) })
	for i := 1; i < len(params); i++ {
		if params[i].Name == params[i-1].Name {
			return nil, false // a repeated property: encoding/json decides
		}
	}
	if len(params) == 0 {
		params = nil
	}
	return params, true
}

// hint is the field of a behaviour hint's key, or nil.
func (a *annotationsJSON) hint(key string) *bool {
	switch key {
	case "readOnlyHint":
		return &a.ReadOnly
	case "destructiveHint":
		return &a.Destructive
	case "idempotentHint":
		return &a.Idempotent
	case "openWorldHint":
		return &a.OpenWorld
	}
	return nil
}

// anyCase reports whether key is a hint's key in another case.
func (a *annotationsJSON) anyCase(key string) bool {
	for _, k := range [...]string{"readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"} {
		if strings.EqualFold(key, k) {
			return true
		}
	}
	return false
}
