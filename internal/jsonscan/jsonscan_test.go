package jsonscan

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
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

// Valid agrees with encoding/json's, and Compact of valid JSON with
// json.Compact.
func FuzzValid(f *testing.F) {
	for _, s := range []string{`{"a":[1,-0.5e+3,true,false,null,"x\u00e9\n"]}`, ` [ ] `, `01`, `1.`, `-`, `"\x"`, "\"\x01\"", `{"a" 1}`, `[1,]`, `{,}`, `tru`, `"\ud800"`, "\"\xff\"", `1e`, `[1] [2]`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		data := []byte(in)
		got, want := Valid(data), json.Valid(data)
		if got != want {
			t.Fatalf("Valid(%q) = %v, encoding/json says %v", in, got, want)
		}
		if !want {
			return
		}
		var c bytes.Buffer
		if err := json.Compact(&c, data); err != nil {
			t.Fatal(err)
		}
		if got := Compact(nil, data); !bytes.Equal(got, c.Bytes()) {
			t.Fatalf("Compact(%q) = %q, json.Compact %q", in, got, c.Bytes())
		}
	})
}

func TestValidDepth(t *testing.T) {
	for _, n := range []int{maxDepth, maxDepth + 1} {
		data := bytes.Repeat([]byte("["), n)
		data = append(data, bytes.Repeat([]byte("]"), n)...)
		if got, want := Valid(data), json.Valid(data); got != want {
			t.Errorf("depth %d: Valid = %v, encoding/json %v", n, got, want)
		}
	}
}

// Unquote agrees with encoding/json on every string it accepts, and
// accepts every string encoding/json does.
func FuzzUnquote(f *testing.F) {
	for _, s := range []string{`"plain"`, `"a\nb\t\"c\"\\\/"`, `"\u00e9\u4e2d"`, `"\ud83d\ude00"`, `"\ud800"`, "\"\xff\"", `"é"`, `"\u0000"`, `"\x"`, `null`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		in = strings.Trim(in, " \t\r\n") // Unquote is given a string token alone
		if !strings.HasPrefix(in, `"`) {
			return // not a string: encoding/json reads null into one, Unquote is never asked
		}
		got, ok := Unquote([]byte(in))
		var want string
		err := json.Unmarshal([]byte(in), &want)
		if (err == nil) != ok || ok && got != want {
			t.Fatalf("Unquote(%q) = %q, %v; encoding/json %q, %v", in, got, ok, want, err)
		}
	})
}
