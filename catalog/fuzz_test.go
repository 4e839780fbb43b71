package catalog

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/toolshelf/toolshelf/internal/jsonscan"
)

// FuzzQualifiedName checks that any two tools get valid, distinct names,
// that unshortened MCP names split back into their parts, and that the
// name of a tool does not depend on the other tools in the catalog unless
// they collide.
func FuzzQualifiedName(f *testing.F) {
	f.Add("github", "create_issue", "gitlab", "create_issue")
	f.Add("a.b", "x", "a_b", "x")
	f.Add("", "Read", "", "Read!")
	f.Add(strings.Repeat("s", 70), strings.Repeat("t", 70), strings.Repeat("s", 70), strings.Repeat("t", 69)+"u")
	f.Add("日本", "ツール", "__", "__")
	f.Fuzz(func(t *testing.T, s1, t1, s2, t2 string) {
		if t1 == "" || t2 == "" {
			return // ParseTool rejects tools without names
		}
		e1 := entryNamed(s1, t1)
		e2 := entryNamed(s2, t2)
		c := New([]Entry{e1, e2}, nil)
		want := 2
		if s1 == s2 && t1 == t2 {
			want = 1
		}
		if c.Len() != want {
			t.Fatalf("catalog has %d entries, want %d", c.Len(), want)
		}
		if want == 2 && c.Entry(0).Name == c.Entry(1).Name {
			t.Fatalf("(%q,%q) and (%q,%q) share the name %q", s1, t1, s2, t2, c.Entry(0).Name)
		}
		for e := range c.All() {
			if !ValidName(e.Name) {
				t.Fatalf("name %q of (%q,%q) is invalid", e.Name, e.Server, e.Tool)
			}
			// The split is unambiguous when the server part has no "__" and
			// does not end in "_".
			if s := sanitize(e.Server); e.Server != "" && !e.Shortened && !strings.Contains(s, "__") && !strings.HasSuffix(s, "_") {
				server, tool, ok := SplitName(e.Name)
				if !ok || server+sep+tool != sanitize(e.Server)+sep+sanitize(e.Tool) {
					t.Fatalf("SplitName(%q) = %q, %q, %v", e.Name, server, tool, ok)
				}
			}
		}
		// Alone, a tool gets the same name unless it collided.
		alone := New([]Entry{e1}, nil).Entry(0).Name
		if got, _ := c.Lookup(alone); got != nil && (got.Server != s1 || got.Tool != t1) {
			if fullName(s1, t1) != fullName(s2, t2) {
				t.Fatalf("adding (%q,%q) gave (%q,%q)'s name %q to it", s2, t2, s1, t1, alone)
			}
		}
	})
}

func entryNamed(server, tool string) Entry {
	b, _ := json.Marshal(map[string]string{"name": tool})
	return Entry{Server: server, Tool: tool, Raw: b}
}

// FuzzParseFast checks that the fast reading of a tool agrees with
// encoding/json's whenever it does not give up, and that it does not give
// up on the built-in catalog's tools.
func FuzzParseFast(f *testing.F) {
	f.Add(`{"name":"a","description":"d","inputSchema":{"type":"object","properties":{"x":{"type":"string","description":"the x"},"y":1}}}`)
	f.Add(`{"name":"a","Name":"b"}`)
	f.Add(`{"name":"a\u00e9","title":null,"annotations":{"title":"T"},"_meta":{"anthropic/searchHint":"hint","anthropic/alwaysLoad":true}}`)
	f.Add(`{"name":"a","inputSchema":{"properties":{"x":{"description":5},"x":{}}}}`)
	f.Add(`{"name":"a","inputSchema":{"properties":{"x":{"Description":"d"}}}}`)
	f.Add(`{"name":"a","inputSchema":{"properties":null}}`)
	f.Add(`{"name":"a","annotations":{"readOnlyHint":true,"destructiveHint":false,"openWorldHint":null,"idempotentHint":true,"idempotentHint":false}}`)
	f.Add(`{"name":"a","annotations":{"ReadOnlyHint":true,"destructiveHint":"yes"}}`)
	f.Fuzz(func(t *testing.T, tool string) {
		var compact bytes.Buffer
		if json.Compact(&compact, []byte(tool)) != nil {
			return
		}
		fast, params, ok := parseFast(compact.Bytes())
		if !ok {
			return
		}
		var slow toolJSON
		if err := json.Unmarshal(compact.Bytes(), &slow); err != nil {
			t.Fatalf("fast reading accepted %s; encoding/json: %v", tool, err)
		}
		want := parseParams(json.RawMessage(slow.InputSchema))
		if fast.Name != slow.Name || fast.Title != slow.Title || fast.Description != slow.Description ||
			!bytes.Equal(fast.InputSchema, slow.InputSchema) || !reflect.DeepEqual(params, want) ||
			(fast.Annotations == nil) != (slow.Annotations == nil) || fast.Annotations != nil && *fast.Annotations != *slow.Annotations ||
			len(fast.Meta) != len(slow.Meta) {
			t.Fatalf("%s:\nfast %+v %+v\nslow %+v %+v", tool, fast, params, slow, want)
		}
		for k, v := range slow.Meta {
			if !bytes.Equal(fast.Meta[k], v) {
				t.Fatalf("%s: _meta %q: fast %s, slow %s", tool, k, fast.Meta[k], v)
			}
		}
	})
}

func TestParseFastReadsRealTools(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "internal", "builtin", "catalog.json"))
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Servers []struct {
			Tools []json.RawMessage `json:"tools"`
		} `json:"servers"`
	}
	if err := json.Unmarshal(data, &f); err != nil {
		t.Fatal(err)
	}
	n, slow := 0, 0
	for _, s := range f.Servers {
		for _, raw := range s.Tools {
			var compact bytes.Buffer
			if err := json.Compact(&compact, raw); err != nil {
				t.Fatal(err)
			}
			n++
			if _, _, ok := parseFast(compact.Bytes()); !ok {
				slow++
				t.Logf("not read fast: %.200s", compact.Bytes())
			}
		}
	}
	if slow > n/100 {
		t.Errorf("%d of %d built-in tools were not read fast", slow, n)
	}
}

// FuzzDecodeValid checks that the one-walk reading of a catalog file
// agrees with encoding/json's whenever it does not give up.
func FuzzDecodeValid(f *testing.F) {
	f.Add(`{"servers":[{"name":"a","Title":"t","tools":[{"name":"x"},{"name":"y"}]}]}`)
	f.Add(`{"servers":[{"name":"a","tools":null}],"servers":[]}`)
	f.Add(`{"Servers":[{"NAME":"a","instructions":"\u00e9","tools":[1]}]}`)
	f.Add(`{"servers":[{"name":"a","extra":1}]}`)
	f.Add(`{"servers":[null]}`)
	f.Fuzz(func(t *testing.T, file string) {
		data := []byte(file)
		fast, ok := decodeValid(data)
		if !ok {
			return
		}
		var slow fileJSON
		if err := decodeSlow(data, &slow); err != nil {
			t.Fatalf("one walk read %s; encoding/json: %v", file, err)
		}
		if len(fast.Servers) != len(slow.Servers) {
			t.Fatalf("%s: %d servers, encoding/json %d", file, len(fast.Servers), len(slow.Servers))
		}
		for i := range fast.Servers {
			a, b := fast.Servers[i], slow.Servers[i]
			if a.Server != b.Server || len(a.Tools) != len(b.Tools) {
				t.Fatalf("%s: server %d is %+v, encoding/json %+v", file, i, a, b)
			}
			for j := range a.Tools {
				if !bytes.Equal(a.Tools[j], b.Tools[j]) {
					t.Fatalf("%s: tool %d.%d is %s, encoding/json %s", file, i, j, a.Tools[j], b.Tools[j])
				}
			}
		}
		// Decode compacts the tools where they lie in data: each entry
		// keeps one tool's compacted bytes all the same (a tool named
		// twice is kept once).
		c, err := Decode(bytes.NewReader(slices.Clone(data)))
		if err != nil {
			return
		}
		tools := map[string]int{}
		for _, s := range slow.Servers {
			for _, raw := range s.Tools {
				tools[string(jsonscan.Compact(nil, raw))]++
			}
		}
		for e := range c.All() {
			if tools[string(e.Raw)] == 0 {
				t.Fatalf("%s: an entry keeps %s, no tool of the file", file, e.Raw)
			}
			tools[string(e.Raw)]--
		}
	})
}

// The built-in catalog file is read in one walk.
func TestDecodeValidReadsRealFile(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "internal", "builtin", "catalog.json"))
	if err != nil {
		t.Fatal(err)
	}
	if f, ok := decodeValid(data); !ok || len(f.Servers) == 0 {
		t.Fatal("the built-in catalog was not read in one walk")
	}
}

// FuzzReadSpare: leaving out the whitespace between tokens keeps what is
// valid JSON valid and the same value, keeps what is not invalid, keeps
// every line where it was, and does not depend on where blocks end.
func FuzzReadSpare(f *testing.F) {
	f.Add("{\n  \"servers\": [\n    {\"name\": \"a b\", \"tools\": [ 1 , -2.5e3, true ]}\n  ]\n}\n")
	f.Add(`[1 2]`)
	f.Add("[tr ue, \"x\\\" y\", \"\\\\\" , nul\tl]")
	f.Add("{\"a\"\r\n:\t\"\\u0020 \"}  ")
	f.Fuzz(func(t *testing.T, in string) {
		out, err := readSpare(strings.NewReader(in))
		if err != nil {
			t.Fatal(err)
		}
		slow, err := readSpare(iotest.OneByteReader(strings.NewReader(in)))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(out, slow) {
			t.Fatalf("%q: read whole %q, a byte at a time %q", in, out, slow)
		}
		if json.Valid([]byte(in)) != json.Valid(out) {
			t.Fatalf("%q is valid: %v; %q is valid: %v", in, json.Valid([]byte(in)), out, json.Valid(out))
		}
		if strings.Count(in, "\n") != bytes.Count(out, []byte("\n")) {
			t.Fatalf("%q: the lines moved in %q", in, out)
		}
		if json.Valid(out) {
			var a, b bytes.Buffer
			json.Compact(&a, []byte(in))
			json.Compact(&b, out)
			if a.String() != b.String() {
				t.Fatalf("%q read as %q, another value", in, out)
			}
		}
	})
}
