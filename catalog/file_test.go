package catalog

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const sampleFile = `{
  "servers": [
    {
      "name": "memory",
      "protocolVersion": "2025-06-18",
      "instructions": "Knowledge graph.",
      "tools": [
        {"name": "read_graph", "description": "Read the entire knowledge graph", "inputSchema": {"type": "object", "properties": {}},
         "execution": {"taskSupport": "forbidden"}, "outputSchema": {"type": "object"}, "x-unknown": [1, 2]}
      ]
    },
    {
      "name": "gitlab",
      "tools": [
        {"name": "create_issue", "inputSchema": {"$schema": "http://json-schema.org/draft-07/schema#"}}
      ]
    }
  ]
}
`

func TestDecodeEncodeRoundTrip(t *testing.T) {
	c, err := Decode(strings.NewReader(sampleFile))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"mcp__gitlab__create_issue", "mcp__memory__read_graph"}, c.Names()); diff != "" {
		t.Errorf("names (-want +got):\n%s", diff)
	}
	if s, _ := c.Server("memory"); s.Instructions != "Knowledge graph." || s.ProtocolVersion != "2025-06-18" {
		t.Errorf("server memory = %+v", s)
	}

	var buf bytes.Buffer
	if err := c.Encode(&buf); err != nil {
		t.Fatal(err)
	}
	c2, err := Decode(&buf)
	if err != nil {
		t.Fatalf("decoding the encoded catalog: %v\n%s", err, buf.String())
	}
	if c2.Version() != c.Version() {
		t.Errorf("round trip changed the version")
	}
	e, _ := c2.Lookup("mcp__memory__read_graph")
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(e.Raw, &fields); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"execution", "outputSchema", "x-unknown", "inputSchema"} {
		if _, ok := fields[k]; !ok {
			t.Errorf("round trip lost the field %q: %s", k, e.Raw)
		}
	}
}

func TestDecodeErrors(t *testing.T) {
	tests := []struct {
		name, in string
		line     int
		want     string
	}{
		{"syntax", "{\n  \"servers\": [\n    {\"name\": \"x\",, }\n  ]\n}", 3, "invalid character"},
		{"unknown key", "{\n  \"servers\": [],\n  \"server\": 1\n}", 3, `unknown field "server"`},
		{"wrong type", "{\"servers\": {\"name\": \"x\"}}", 1, "wrong type"},
		{"no name", `{"servers": [{"tools": []}]}`, 0, "server 1 has no name"},
		{"bad tool", "{\"servers\": [{\"name\": \"x\", \"tools\": [\n{\"description\": \"no name\"}]}]}", 2, `server "x", tool 1: tool has no "name"`},
		{"bad tool after others", "{\"servers\": [\n  {\"name\": \"a\", \"tools\": [\n    {\"name\": \"t1\",\n     \"description\": \"one\"}]},\n  {\"name\": \"x\", \"tools\": [\n    {\"name\": \"t2\"},\n\n    {\"description\": \"no\\nname\"}]}]}", 8, `server "x", tool 2: tool has no "name"`},
		{"bad tool, read the slow way", "{\"servers\": [\n  {\"name\": \"x\", \"instructions\": null, \"tools\": [\n    {\"name\": \"t1\"},\n    {\"description\": \"no name\"}]}]}", 4, `server "x", tool 2: tool has no "name"`},
		{"truncated", "{\"servers\": [", 1, "unexpected end"},
		{"no servers", `{}`, 1, `no "servers"`},
		{"trailing", `{"servers": []} {}`, 1, "data after"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Decode(strings.NewReader(tt.in))
			if err == nil {
				t.Fatal("Decode succeeded, want an error")
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error = %q, want it to mention %q", err, tt.want)
			}
			var le *FileError
			if tt.line > 0 && (!errors.As(err, &le) || le.Line != tt.line) {
				t.Errorf("error = %#v, want a FileError at line %d", err, tt.line)
			}
		})
	}
}
