package upstream

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/toolshelf/toolshelf/catalog"
)

// TestCanonicalArgs: a call's arguments have one form, or are refused:
// keys equal under case or compatibility folding, or repeated, at any
// depth; a declared parameter's key spelled in another case takes the
// parameter's spelling; strings re-encoded as a reader decodes them.
func TestCanonicalArgs(t *testing.T) {
	params := []catalog.Param{{Name: "path"}, {Name: "content"}, {Name: "Kind"}}
	for _, tc := range []struct{ in, want, err string }{
		{``, `{}`, ""},
		{`null`, `{}`, ""},
		{` {"path": "/srv/ci/x", "content": "hi"} `, `{"path":"/srv/ci/x","content":"hi"}`, ""},
		{`{"path": "/srv/ci/ok", "PATH": "/etc/passwd"}`, "", `"path" and "PATH"`},
		{`{"PATH": "/etc/passwd", "path": "/srv/ci/ok"}`, "", `"PATH" and "path"`},
		{`{"path": "/a", "path": "/b"}`, "", `"path" is given twice`},
		{`{"paſh": 1, "pash": 2}`, "", "one key to servers"},
		{`{"Kind": 1, "kind": 2}`, "", "one key"},
		{`{"ｐａｔｈ": "/etc"}`, `{"path":"/etc"}`, ""},
		{`{"PATH": "/etc/passwd"}`, `{"path":"/etc/passwd"}`, ""},
		{`{"KIND": "x"}`, `{"Kind":"x"}`, ""},
		{`{"other": "x", "Other": "y"}`, "", "one key"},
		{`{"opts": {"mode": 1, "MODE": 2}}`, "", "in opts"},
		{`{"list": [{"a": 1}, {"a": 1, "A": 2}]}`, "", "in list[1]"},
		{`{"opts": {"MODE": 1}}`, `{"opts":{"MODE":1}}`, ""},
		{`{"n": 12345678901234567890123, "f": 1e400, "b": true, "z": null}`, `{"n":12345678901234567890123,"f":1e400,"b":true,"z":null}`, ""},
		{`{"s": "a\u0041\/\ud800<>&\u2028"}`, "{\"s\":\"aA/\ufffd<>&\u2028\"}", ""},
		{"{\"s\": \"\xff\"}", "{\"s\":\"\ufffd\"}", ""},
		{`{"s": "tab\tquote\"nl\n\u0001"}`, `{"s":"tab\tquote\"nl\n\u0001"}`, ""},
		{`[1]`, "", "not a JSON object"},
		{`"{}"`, "", "not a JSON object"},
		{`{"a": }`, "", "not JSON"},
		{`{} {}`, "", "not JSON"},
		{strings.Repeat(`{"a":`, 70) + `1` + strings.Repeat(`}`, 70), "", "deeper than 64"},
	} {
		got, _, err := canonicalArgs(json.RawMessage(tc.in), params)
		switch {
		case tc.err != "":
			var ae *ArgumentsError
			if err == nil || !errors.As(err, &ae) || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: %s, %v; want an error with %q", tc.in, got, err, tc.err)
			}
		case err != nil || string(got) != tc.want:
			t.Errorf("%s: %s, %v; want %s", tc.in, got, err, tc.want)
		}
	}
}

// TestCanonicalArgsAgree: on generated arguments (keys in every case,
// repeats, nesting), whatever passes has one reading: decoded by
// encoding/json exactly and case-blind (as a Go server binds them), each
// key reads the same value, and the form is stable (putting it in its
// form again changes nothing).
func TestCanonicalArgsAgree(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	keys := []string{"path", "Path", "PATH", "pAth", "paſh", "mode", "MODE", "n", "ｐａｔｈ"}
	var gen func(depth int) string
	gen = func(depth int) string {
		if depth > 2 || r.IntN(3) == 0 {
			return fmt.Sprintf("%q", fmt.Sprint("/v", r.IntN(5)))
		}
		var b strings.Builder
		b.WriteByte('{')
		for i := range r.IntN(4) {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, "%q:%s", keys[r.IntN(len(keys))], gen(depth+1))
		}
		b.WriteByte('}')
		return b.String()
	}
	params := []catalog.Param{{Name: "path"}, {Name: "mode"}}
	passed := 0
	for range 3000 {
		in := gen(0)
		if in[0] != '{' {
			continue
		}
		out, _, err := canonicalArgs(json.RawMessage(in), params)
		if err != nil {
			continue
		}
		passed++
		again, _, err := canonicalArgs(out, params)
		if err != nil || string(again) != string(out) {
			t.Fatalf("%s: not stable: %s then %s %v", in, out, again, err)
		}
		// Exact reading (a rule's) and case-blind reading (a Go
		// server's) of the top-level "path" agree.
		var exact map[string]json.RawMessage
		json.Unmarshal(out, &exact)
		var blind struct {
			Path json.RawMessage `json:"path"`
		}
		json.Unmarshal(out, &blind)
		if string(exact["path"]) != string(blind.Path) {
			t.Fatalf("%s → %s: a rule reads path %s, a Go server %s", in, out, exact["path"], blind.Path)
		}
	}
	if passed < 300 {
		t.Fatalf("only %d generated arguments passed: the test checks too little", passed)
	}
}
