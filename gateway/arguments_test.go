package gateway

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/toolshelf/toolshelf/catalog"
	"github.com/toolshelf/toolshelf/shelf"
)

// A call whose arguments do not fit the tool's schema is answered with
// the whole definition and never reaches the server; a call that fits
// goes through. Compact matches make such calls likelier, and one step
// mends them.
func TestMisfitArgumentsGetTheSchema(t *testing.T) {
	strict := map[string]any{"inputSchema": map[string]any{
		"type":     "object",
		"$schema":  "http://json-schema.org/draft-07/schema#",
		"required": []string{"channel", "text"},
		"properties": map[string]any{
			"channel": map[string]any{"type": "string"},
			"text":    map[string]any{"type": "string"},
			"urgency": map[string]any{"enum": []string{"low", "high"}},
		},
		"additionalProperties": false,
	}}
	g, _ := gatewayFor(t, nil, memServer(t, "slack", []json.RawMessage{rawTool("post_message", "Post a message to a channel", strict)}))
	cs := connect(t, g, nil)
	for _, args := range []map[string]any{
		{"text": "hi"},                // a required one missing
		{"channel": "ops", "text": 5}, // a wrong type
		{"channel": "ops", "text": "hi", "urgency": "medium"}, // not in the enum
		{"channel": "ops", "text": "hi", "colour": "red"},     // an unknown one
	} {
		res := call(t, cs, toolCall, map[string]any{"name": "mcp__slack__post_message", "arguments": args})
		got := text(res)
		if !res.IsError || !strings.Contains(got, "do not fit") || !strings.Contains(got, `"input_schema"`) || strings.Contains(got, `"tool":"post_message"`) {
			t.Errorf("arguments %v: %s", args, got)
		}
	}
	res := call(t, cs, toolCall, map[string]any{"name": "mcp__slack__post_message", "arguments": map[string]any{"channel": "ops", "text": "hi", "urgency": "low"}})
	if res.IsError || !strings.Contains(text(res), `"tool":"post_message"`) {
		t.Errorf("arguments that fit: %s", text(res))
	}
}

// "search": {"results": "full"} gives whole definitions in every answer.
func TestFullResults(t *testing.T) {
	g, _ := gatewayFor(t, &Options{Results: shelf.Full}, standardUpstreams(t)...)
	cs := connect(t, g, nil)
	var sr searchResult
	json.Unmarshal([]byte(text(call(t, cs, toolSearch, map[string]any{"query": "create a pull request"}))), &sr)
	if len(sr.Matches) == 0 || sr.Matches[0].InputSchema == nil || sr.Matches[0].Description == "" || sr.Matches[0].Signature != "" {
		t.Errorf("full matches: %+v", sr.Matches)
	}
}

// The cheap check of simple schemas says what the validator says: every
// schema and arguments below are decided both ways, and agree; the
// schemas that say more are left to the validator.
func TestCheapSchemaCheckAgrees(t *testing.T) {
	schemas := []string{
		`{"type":"object","properties":{"text":{"type":"string"},"n":{"type":"integer"},"x":{"type":"number"},"on":{"type":"boolean"},"tags":{"type":"array"},"meta":{"type":"object"},"any":{"description":"anything"}},"required":["text"]}`,
		`{"type":"object","properties":{"id":{"type":"integer","description":"The id"}},"required":["id"],"additionalProperties":false}`,
		`{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{},"additionalProperties":false}`,
		`{"type":"object","properties":{"v":{"type":"null"}}}`,
	}
	args := []string{
		`{}`, `{"text":"a"}`, `{"text":1}`, `{"text":"a","n":3}`, `{"text":"a","n":3.5}`, `{"text":"a","n":3.0}`,
		`{"text":"a","n":-2}`, `{"text":"a","n":"3"}`, `{"text":"a","x":1e3}`, `{"text":"a","on":true}`, `{"text":"a","on":"yes"}`,
		`{"text":"a","tags":[1]}`, `{"text":"a","tags":{}}`, `{"text":"a","meta":{}}`, `{"text":"a","meta":[]}`, `{"text":"a","any":[1,{"b":null}]}`,
		`{"text":null}`, `{"id":1}`, `{"id":1,"other":2}`, `{"id":1e2}`, `{"other":1}`, `{"v":null}`, `{"v":0}`,
	}
	for _, schema := range schemas {
		e := &catalog.Entry{Name: "mcp__t__t", InputSchema: json.RawMessage(schema)}
		if checkOf(e).cheap == nil {
			t.Fatalf("not checked cheaply: %s", schema)
		}
		for _, a := range args {
			var obj map[string]json.RawMessage
			json.Unmarshal([]byte(a), &obj)
			cheap, full := misfit(e, json.RawMessage(a), obj), misfit(e, json.RawMessage(a), nil)
			if (cheap == nil) != (full == nil) {
				t.Errorf("%s on %s: cheap %v, validator %v", a, schema, cheap, full)
			}
		}
	}
	for _, schema := range []string{
		`{"type":"object","properties":{"s":{"type":"string","enum":["a"]}}}`,
		`{"type":"object","properties":{"s":{"type":["string","null"]}}}`,
		`{"type":"object","properties":{"s":{"type":"string","format":"uri"}}}`,
		`{"type":"object","properties":{"o":{"type":"object","properties":{"x":{"type":"string"}}}}}`,
		`{"type":"object","anyOf":[{"required":["a"]},{"required":["b"]}]}`,
		`{"type":"object","additionalProperties":{"type":"string"}}`,
	} {
		if checkOf(&catalog.Entry{InputSchema: json.RawMessage(schema)}).cheap != nil {
			t.Errorf("checked cheaply, though it says more: %s", schema)
		}
	}
}
