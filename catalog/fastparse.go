package catalog

import (
	"encoding/json"
	"slices"
	"strings"
)

// A catalog file of 100,000 tools is hundreds of megabytes of JSON, and
// encoding/json reads each tool several times over (validating, skipping
// the schema, decoding the schema for its properties, each property for
// its description). parseFast reads the common shape of a tool in one
// walk; anything it is not sure of (a key that differs from a field only
// by case, a field of an unexpected type, a repeated property) makes it
// give up, and ParseTool decodes with encoding/json as before, so the two
// agree (FuzzParseFast).

// parseFast fills t and the tool's parameters from a compact, valid tool
// object. ok is false when the caller must decode it with encoding/json.
func parseFast(b []byte) (t toolJSON, params []Param, ok bool) {
	w := keyWalker{data: b}
	if len(b) == 0 || b[0] != '{' {
		return t, nil, false
	}
	ok = true
	w.object(func(key string) {
		if !ok {
			w.skip()
			return
		}
		switch key {
		case "name":
			t.Name, ok = w.stringValue()
		case "title":
			t.Title, ok = w.stringValue()
		case "description":
			t.Description, ok = w.stringValue()
		case "inputSchema":
			start := w.i
			params, ok = w.properties()
			t.InputSchema = rawRef(b[start:w.i])
		case "annotations":
			ok = w.objectOf(func(key string) bool {
				if key == "title" {
					title, good := w.stringValue()
					t.Annotations = &struct {
						Title string `json:"title"`
					}{title}
					return good
				}
				w.skip()
				return !strings.EqualFold(key, "title")
			})
		case "_meta":
			t.Meta = map[string]json.RawMessage{}
			ok = w.objectOf(func(key string) bool {
				start := w.i
				w.skip()
				t.Meta[key] = json.RawMessage(b[start:w.i])
				return true
			})
		default:
			for _, k := range [...]string{"name", "title", "description", "inputSchema", "annotations", "_meta"} {
				if strings.EqualFold(key, k) {
					ok = false
				}
			}
			w.skip()
		}
	})
	if !ok {
		return toolJSON{}, nil, false
	}
	return t, params, true
}

// stringValue reads the string at the cursor; ok is false when the value
// is not a string.
func (w *keyWalker) stringValue() (string, bool) {
	if w.i >= len(w.data) || w.data[w.i] != '"' {
		w.skip()
		return "", false
	}
	start := w.i
	w.str()
	return unquote(w.data[start:w.i])
}

// unquote decodes a JSON string (quotes included).
func unquote(q []byte) (string, bool) {
	for _, c := range q[1 : len(q)-1] {
		if c == '\\' || c < 0x20 || c >= 0x80 {
			// Escapes and UTF-8 (which encoding/json checks and mends).
			var v string
			err := json.Unmarshal(q, &v)
			return v, err == nil
		}
	}
	return string(q[1 : len(q)-1]), true
}

// objectOf walks the object at the cursor, calling member with each key;
// it is false when the value is not an object or member says so.
func (w *keyWalker) objectOf(member func(key string) bool) bool {
	if w.i >= len(w.data) || w.data[w.i] != '{' {
		w.skip()
		return false
	}
	ok := true
	w.object(func(key string) {
		if !ok {
			w.skip()
			return
		}
		ok = member(key)
	})
	return ok
}

// properties reads an input schema's top-level properties as parseParams
// does, sorted by name; ok is false when it cannot be sure to agree.
func (w *keyWalker) properties() (params []Param, ok bool) {
	if w.i >= len(w.data) || w.data[w.i] != '{' {
		w.skip()
		return nil, false
	}
	seen := false
	ok = w.objectOf(func(key string) bool {
		if key != "properties" {
			w.skip()
			return !strings.EqualFold(key, "properties")
		}
		if seen || w.i >= len(w.data) || w.data[w.i] != '{' {
			w.skip()
			return false
		}
		seen = true
		return w.objectOf(func(name string) bool {
			p := Param{Name: name}
			good := true
			if w.i < len(w.data) && w.data[w.i] == '{' {
				found := false
				good = w.objectOf(func(key string) bool {
					if key != "description" {
						w.skip()
						return !strings.EqualFold(key, "description")
					}
					if found {
						w.skip()
						return false // repeated: encoding/json decides
					}
					found = true
					// A description that is not a string leaves none, as
					// encoding/json does.
					p.Description, _ = w.stringValue()
					return true
				})
			} else {
				w.skip()
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
			return nil, false // a repeated property or description: encoding/json decides
		}
	}
	if len(params) == 0 {
		params = nil
	}
	return params, true
}
