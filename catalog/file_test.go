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
			var le *LineError
			if tt.line > 0 && (!errors.As(err, &le) || le.Line != tt.line) {
				t.Errorf("error = %#v, want a LineError at line %d", err, tt.line)
			}
		})
	}
}

func TestReadDatasetTools(t *testing.T) {
	in := `{"id": "srv::a", "server": "srv", "name": "a", "description": "does a", "input_schema": {"type": "object", "properties": {"p": {"type": "string"}}}}

{"server": "math", "name": "math.factorial", "description": "Factorial."}
`
	entries, err := ReadDatasetTools(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	c := New(entries, nil)
	if diff := cmp.Diff([]string{"mcp__math__math_factorial", "mcp__srv__a"}, c.Names()); diff != "" {
		t.Errorf("names (-want +got):\n%s", diff)
	}
	e, _ := c.Lookup("mcp__srv__a")
	if e.ID != "srv::a" || len(e.Params) != 1 || e.Description != "does a" {
		t.Errorf("entry = %+v", e)
	}
	if e, _ := c.Lookup("mcp__math__math_factorial"); e.ID != "math.factorial" {
		t.Errorf("id defaults to the name; got %q", e.ID)
	}

	bad := []struct {
		in   string
		line int
		want string
	}{
		{"{\"name\": \"a\"}\n{\"name\": 3}\n", 2, "wrong type"},
		{"{\"name\": \"a\"}\n\n{oops}\n", 3, "invalid character"},
		{"{\"id\": \"x\", \"name\": \"a\"}\n{\"id\": \"x\", \"name\": \"b\"}\n", 2, `duplicate tool id "x"`},
		{"{\"server\": \"s\"}\n", 1, `no "name"`},
	}
	for _, b := range bad {
		_, err := ReadDatasetTools(strings.NewReader(b.in))
		var le *LineError
		if !errors.As(err, &le) || le.Line != b.line || !strings.Contains(err.Error(), b.want) {
			t.Errorf("ReadDatasetTools(%q) error = %v, want line %d mentioning %q", b.in, err, b.line, b.want)
		}
	}
}

func TestReadDatasetServers(t *testing.T) {
	servers, err := ReadDatasetServers(strings.NewReader(`{"server": "heroku", "description": "Heroku platform", "categories": ["cloud"]}` + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]Server{{Name: "heroku", Description: "Heroku platform"}}, servers); diff != "" {
		t.Errorf("servers (-want +got):\n%s", diff)
	}
	if _, err := ReadDatasetServers(strings.NewReader(`{"description": "x"}`)); err == nil {
		t.Error("a server without a name was accepted")
	}
}
