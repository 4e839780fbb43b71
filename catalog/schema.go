package catalog

import (
	"bytes"
	"encoding/json"
)

// emptyObjectSchema is the schema of a tool that takes no arguments.
var emptyObjectSchema = json.RawMessage(`{"type":"object"}`)

// NormalizeSchema returns an input schema that MCP clients and the Messages
// API accept: a JSON object whose "type" is "object". Real servers send
// schemas without a type (server-gitlab sends only "$schema"), with a type
// list such as ["object","null"], or none at all; the go-sdk refuses to
// serve such a tool and the Messages API rejects it. Every other keyword,
// $defs and $ref included, is kept as received. changed reports whether
// the schema had to be rewritten.
func NormalizeSchema(schema json.RawMessage) (out json.RawMessage, changed bool) {
	var m map[string]json.RawMessage
	if len(bytes.TrimSpace(schema)) == 0 || json.Unmarshal(schema, &m) != nil || m == nil {
		return emptyObjectSchema, true
	}
	if t, ok := m["type"]; ok && bytes.Equal(bytes.TrimSpace(t), []byte(`"object"`)) {
		return schema, false
	}
	m["type"] = json.RawMessage(`"object"`)
	if _, ok := m["properties"]; !ok {
		m["properties"] = json.RawMessage(`{}`)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(m); err != nil {
		return emptyObjectSchema, true
	}
	return bytes.TrimSpace(buf.Bytes()), true
}

// Definition returns the tool as the Messages API takes it: compact JSON
// {"name", "description", "input_schema"} with the qualified name and the
// normalised schema. This is what a request sends, so it is also what
// token counts measure.
func (e *Entry) Definition() json.RawMessage {
	schema, _ := NormalizeSchema(e.InputSchema)
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(struct {
		Name        string          `json:"name"`
		Description string          `json:"description,omitempty"`
		InputSchema json.RawMessage `json:"input_schema"`
	}{e.Name, e.Description, compactJSON(schema)})
	return bytes.TrimSpace(buf.Bytes())
}

// compactJSON removes insignificant whitespace; invalid JSON is returned
// as is.
func compactJSON(raw json.RawMessage) json.RawMessage {
	var buf bytes.Buffer
	if json.Compact(&buf, raw) != nil {
		return raw
	}
	return buf.Bytes()
}
