package jsonscan

import (
	"encoding/json"
	"reflect"
	"testing"
)

// On valid JSON, an object's members are what encoding/json decodes; on
// any input, a walk ends.
func FuzzObject(f *testing.F) {
	for _, s := range []string{`{"a":1,"b":[1,{"c":"}"}],"d\"e":"x\\"}`, `{}`, `[1,2]`, `{"a":}`, `{"a":{"b":[`, `"s"`, `{"a":1}x`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		data := []byte(in)
		s := New(data)
		got := map[string]json.RawMessage{}
		isObject := s.Object(func(key string) { got[key] = json.RawMessage(s.Value()) })
		if !json.Valid(data) {
			return
		}
		var want map[string]json.RawMessage
		if json.Unmarshal(data, &want) != nil {
			if isObject {
				t.Fatalf("%s: walked as an object", in)
			}
			return
		}
		if want == nil {
			return // null
		}
		for k, v := range want {
			var a, b any
			json.Unmarshal(v, &a)
			json.Unmarshal(got[k], &b)
			if !reflect.DeepEqual(a, b) {
				t.Fatalf("%s: member %q is %s, want %s", in, k, got[k], v)
			}
		}
		if len(got) != len(want) {
			t.Fatalf("%s: %d members, want %d", in, len(got), len(want))
		}
	})
}
