package catalog

import (
	"reflect"
	"strings"
)

// serverKeys are the keys a server object of a catalog file may have.
var serverKeys = func() []string {
	keys := []string{"tools"}
	t := reflect.TypeFor[Server]()
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		keys = append(keys, name)
	}
	return keys
}()

// unknownField returns the first key of a catalog file's object, or of
// one of its server objects, that the format does not have ("" when
// there is none), matched without regard to case as encoding/json
// matches them. data is valid JSON (json.Unmarshal has read it): one walk
// over it costs less than decoding it again with DisallowUnknownFields.
func unknownField(data []byte) string {
	w := keyWalker{data: data}
	bad := ""
	w.object(func(key string) {
		if bad != "" {
			w.skip()
			return
		}
		if !strings.EqualFold(key, "servers") {
			bad = key
			w.skip()
			return
		}
		w.array(func() {
			w.object(func(key string) {
				if bad == "" && !known(key) {
					bad = key
				}
				w.skip()
			})
		})
	})
	return bad
}

func known(key string) bool {
	for _, k := range serverKeys {
		if strings.EqualFold(k, key) {
			return true
		}
	}
	return false
}

// keyWalker walks valid JSON without decoding it.
type keyWalker struct {
	data []byte
	i    int
}

func (w *keyWalker) space() {
	for w.i < len(w.data) && (w.data[w.i] == ' ' || w.data[w.i] == '\t' || w.data[w.i] == '\n' || w.data[w.i] == '\r') {
		w.i++
	}
}

// object calls member with each key of the object at the cursor, with
// the cursor at the key's value; member must move past the value. A value
// that is not an object is skipped.
func (w *keyWalker) object(member func(key string)) {
	w.space()
	if w.i >= len(w.data) || w.data[w.i] != '{' {
		w.skip()
		return
	}
	w.i++
	for {
		w.space()
		if w.i >= len(w.data) || w.data[w.i] == '}' {
			w.i++
			return
		}
		if w.data[w.i] == ',' {
			w.i++
			continue
		}
		start := w.i
		w.str()
		key, ok := unquote(w.data[start:w.i])
		if !ok {
			key = string(w.data[start:w.i])
		}
		w.space()
		w.i++ // the colon
		w.space()
		member(key)
	}
}

// array calls elem with the cursor at each element of the array at the
// cursor; elem must move past the element. A value that is not an array
// is skipped.
func (w *keyWalker) array(elem func()) {
	w.space()
	if w.i >= len(w.data) || w.data[w.i] != '[' {
		w.skip()
		return
	}
	w.i++
	for {
		w.space()
		if w.i >= len(w.data) || w.data[w.i] == ']' {
			w.i++
			return
		}
		if w.data[w.i] == ',' {
			w.i++
			continue
		}
		elem()
	}
}

// str moves past the string at the cursor.
func (w *keyWalker) str() {
	w.i++ // the opening quote
	for w.i < len(w.data) {
		switch w.data[w.i] {
		case '\\':
			w.i += 2
		case '"':
			w.i++
			return
		default:
			w.i++
		}
	}
}

// skip moves past the value at the cursor.
func (w *keyWalker) skip() {
	w.space()
	if w.i >= len(w.data) {
		return
	}
	switch w.data[w.i] {
	case '"':
		w.str()
	case '{', '[':
		depth := 0
		for w.i < len(w.data) {
			switch w.data[w.i] {
			case '"':
				w.str()
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
			}
			w.i++
			if depth == 0 {
				return
			}
		}
	default:
		for w.i < len(w.data) && !strings.ContainsRune(",}] \t\r\n", rune(w.data[w.i])) {
			w.i++
		}
	}
}

// firstValueEnd returns where the data after the first JSON value of
// data starts, spaces skipped.
func firstValueEnd(data []byte) int {
	w := keyWalker{data: data}
	w.skip()
	w.space()
	return w.i
}
