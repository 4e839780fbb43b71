// Package messages shapes Anthropic Messages API requests for deferred
// tool loading, from a conversation history.
//
// Its JSON types keep every field and content block they do not model, so
// that a request passes through toolshelf unchanged apart from what it
// means to change (the official SDK's types drop unknown fields and, for
// an unknown block type, a message's whole content). From a history it
// derives the set of tools the model has discovered (tool_reference
// blocks, plus the names that compaction boundaries carry), and
// [Prepare] builds each turn's request: which tools are sent and how, the
// announcement of deferred tools, and the clean-ups the API and the model
// need. [Searcher] is the client-side tool search tool.
//
// The package is pure: it does no network or process I/O. Package
// anthropic sends what it prepares.
package messages

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	"github.com/toolshelf/toolshelf/internal/jsonscan"
)

// object is a JSON object kept as raw values.
type object = map[string]json.RawMessage

// marshalObject encodes the known fields over the kept ones. Keys are
// written in sorted order; JSON objects are unordered, so nothing is lost.
func marshalObject(kept object, known map[string]any) ([]byte, error) {
	out := make(object, len(kept)+len(known))
	maps.Copy(out, kept)
	for k, v := range known {
		if v == nil {
			continue
		}
		b, err := marshal(v)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", k, err)
		}
		out[k] = b
	}
	var buf bytes.Buffer
	buf.WriteByte('{')
	for i, k := range slices.Sorted(maps.Keys(out)) {
		if i > 0 {
			buf.WriteByte(',')
		}
		kb, _ := json.Marshal(k)
		buf.Write(kb)
		buf.WriteByte(':')
		buf.Write(out[k])
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

// marshal is json.Marshal without HTML escaping.
func marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

// take removes a field from o and decodes it into v, if present.
func take(o object, key string, v any) error {
	raw, ok := o[key]
	if !ok {
		return nil
	}
	delete(o, key)
	if p, ok := v.(*string); ok && len(raw) > 0 && raw[0] == '"' {
		if s, ok := jsonscan.Unquote(raw); ok {
			*p = s
			return nil
		}
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("%q: %v", key, err)
	}
	return nil
}

// Request is a Messages API request body. Fields other than these
// (system, max_tokens, tool_choice, thinking, stream, metadata, ...) are
// kept in Extra and sent as they came.
type Request struct {
	Model    string
	Messages []Message
	Tools    []Tool
	Extra    map[string]json.RawMessage
}

func (r Request) MarshalJSON() ([]byte, error) {
	known := map[string]any{"model": r.Model, "messages": r.Messages}
	if r.Messages == nil {
		known["messages"] = []Message{}
	}
	if r.Tools != nil {
		known["tools"] = r.Tools
	}
	return marshalObject(r.Extra, known)
}

// UnmarshalJSON reads a request. A request can carry hundreds of tool
// definitions (Claude Code sends a megabyte), and encoding/json validates
// and copies each value again at every level of a custom decoder; so the
// request is validated once and copied once, and its members and tools
// are slices of that copy.
func (r *Request) UnmarshalJSON(data []byte) error {
	return r.decode(data, true)
}

// DecodeRequest reads a request from data without a copy of it: the
// request's fields are slices of data, which must not change while the
// request is in use. For a body read once and only read after (the
// proxy's), where UnmarshalJSON would copy it whole.
func DecodeRequest(data []byte) (Request, error) {
	var r Request
	err := r.decode(data, false)
	return r, err
}

// decode reads data into r, splitting a copy of it when clone is set.
func (r *Request) decode(data []byte, clone bool) error {
	var o object
	if !jsonscan.Valid(data) {
		return json.Unmarshal(data, &o) // its error names the problem
	}
	kept := data
	if clone {
		kept = bytes.Clone(data)
	}
	o, ok := splitObject(kept)
	if !ok {
		if err := json.Unmarshal(data, &o); err != nil {
			return err
		}
	}
	*r = Request{}
	for key, v := range map[string]any{"model": &r.Model, "messages": &r.Messages} {
		if err := take(o, key, v); err != nil {
			return err
		}
	}
	if raw, ok := o["tools"]; ok {
		delete(o, "tools")
		tools, err := validTools(raw)
		if err != nil {
			return fmt.Errorf("%q: %v", "tools", err)
		}
		r.Tools = tools
	}
	if len(o) > 0 {
		r.Extra = o
	}
	return nil
}

// splitObject returns the members of data, a valid JSON object, as slices
// of it; ok is false when data is not an object.
func splitObject(data []byte) (object, bool) { return members(jsonscan.New(data)) }

// members reads the object at the scanner's cursor as slices of its data.
func members(s *jsonscan.Scanner) (object, bool) {
	o := object{}
	return o, s.Object(func(key string) { o[key] = json.RawMessage(s.Value()) })
}

// validTools reads a request's tools from valid JSON, each tool's values
// slices of raw, in one walk.
func validTools(raw json.RawMessage) ([]Tool, error) {
	s := jsonscan.New(raw)
	if s.Peek() != '[' {
		var tools []Tool
		err := json.Unmarshal(raw, &tools)
		return tools, err
	}
	tools := []Tool{}
	var err error
	s.Array(func() {
		if err != nil {
			return
		}
		var t Tool
		if s.Peek() != '{' {
			err = json.Unmarshal(s.Value(), &t) // its error names the problem
			return
		}
		o, _ := members(s)
		err = t.fromObject(o)
		tools = append(tools, t)
	})
	return tools, err
}

// Message is one message of a conversation.
//
// Boundary and Delta are toolshelf's own annotations, kept with the
// history but never sent: a compaction boundary's list of discovered
// tools, and an announcement of changes to the deferred tools.
type Message struct {
	Role string
	// Content is the message's blocks. A message whose content was a plain
	// string has one text block and Text set, so that it is written back
	// as a string.
	Content []Block
	Text    bool
	Extra   map[string]json.RawMessage

	Boundary *Boundary
	Delta    *Delta
}

// Boundary marks the message that replaced compacted history.
type Boundary struct {
	// PreCompactDiscoveredTools is the discovered set when compaction ran.
	PreCompactDiscoveredTools []string `json:"preCompactDiscoveredTools"`
}

// Delta records an announcement of deferred tools.
type Delta struct {
	Added   []string `json:"added,omitempty"`
	Removed []string `json:"removed,omitempty"`
	// Servers is the servers' summary announced with it, when it changed.
	Servers []string `json:"servers,omitempty"`
}

// Annotation keys under which Boundary and Delta are stored with a
// history (and removed from requests).
const (
	keyBoundary = "toolshelf_compact_boundary"
	keyDelta    = "toolshelf_deferred_tools_delta"
)

func (m Message) MarshalJSON() ([]byte, error) {
	known := map[string]any{"role": m.Role}
	if m.Text && len(m.Content) == 1 && m.Content[0].Type == "text" {
		known["content"] = m.Content[0].String("text")
	} else {
		known["content"] = m.Content
		if m.Content == nil {
			known["content"] = []Block{}
		}
	}
	if m.Boundary != nil {
		known[keyBoundary] = m.Boundary
	}
	if m.Delta != nil {
		known[keyDelta] = m.Delta
	}
	return marshalObject(m.Extra, known)
}

func (m *Message) UnmarshalJSON(data []byte) error {
	var o object
	if err := json.Unmarshal(data, &o); err != nil {
		return err
	}
	*m = Message{}
	if err := take(o, "role", &m.Role); err != nil {
		return err
	}
	if raw, ok := o["content"]; ok {
		delete(o, "content")
		var s string
		if json.Unmarshal(raw, &s) == nil {
			m.Content, m.Text = []Block{TextBlock(s)}, true
		} else if err := json.Unmarshal(raw, &m.Content); err != nil {
			return fmt.Errorf(`"content": %v`, err)
		}
	}
	if err := take(o, keyBoundary, &m.Boundary); err != nil {
		return err
	}
	if err := take(o, keyDelta, &m.Delta); err != nil {
		return err
	}
	if len(o) > 0 {
		m.Extra = o
	}
	return nil
}

// wire returns the message as it is sent: without toolshelf's
// annotations.
func (m Message) wire() Message {
	m.Boundary, m.Delta = nil, nil
	return m
}

// Block is one content block of any type: text, image, tool_use,
// tool_result, tool_reference, thinking, server_tool_use,
// tool_search_tool_result, or any type the API adds later. Its fields are
// kept as raw JSON; accessors read the ones toolshelf needs.
type Block struct {
	Type   string
	fields object // every field but "type"
}

func (b Block) MarshalJSON() ([]byte, error) {
	return marshalObject(b.fields, map[string]any{"type": b.Type})
}

func (b *Block) UnmarshalJSON(data []byte) error {
	var o object
	if err := json.Unmarshal(data, &o); err != nil {
		return err
	}
	*b = Block{}
	if err := take(o, "type", &b.Type); err != nil {
		return err
	}
	b.fields = o
	return nil
}

// String returns a string field, or "".
func (b Block) String(key string) string {
	var s string
	_ = json.Unmarshal(b.fields[key], &s)
	return s
}

// Raw returns a field as raw JSON, or nil.
func (b Block) Raw(key string) json.RawMessage { return b.fields[key] }

// With returns a copy of b with a field set (or removed, for nil).
func (b Block) With(key string, v any) Block {
	fields := maps.Clone(b.fields)
	if fields == nil {
		fields = object{}
	}
	if v == nil {
		delete(fields, key)
	} else {
		raw, err := marshal(v)
		if err != nil {
			panic(err) // only values of this package are set
		}
		fields[key] = raw
	}
	return Block{Type: b.Type, fields: fields}
}

// Results returns the blocks of a tool_result's content. A string content
// is one text block; ok is false when the content is neither.
func (b Block) Results() (blocks []Block, ok bool) {
	raw := b.fields["content"]
	if len(raw) == 0 {
		return nil, true
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []Block{TextBlock(s)}, true
	}
	return blocks, json.Unmarshal(raw, &blocks) == nil
}

// hasArrayContent reports whether a tool_result's content is an array.
func (b Block) hasArrayContent() bool {
	raw := bytes.TrimSpace(b.fields["content"])
	return len(raw) > 0 && raw[0] == '['
}

// TextBlock returns a text block.
func TextBlock(text string) Block { return Block{Type: "text"}.With("text", text) }

// ToolReference returns a tool_reference block naming a tool.
func ToolReference(name string) Block { return Block{Type: "tool_reference"}.With("tool_name", name) }

// ToolResult returns a tool_result block for a tool_use id.
func ToolResult(toolUseID string, content []Block, isError bool) Block {
	b := Block{Type: "tool_result"}.With("tool_use_id", toolUseID).With("content", content)
	if isError {
		b = b.With("is_error", true)
	}
	return b
}

// Tool is one entry of a request's tools: a custom tool (name,
// description, input_schema) or a server tool with a type. Other fields
// (strict, input_examples, allowed_callers, ...) are kept in Extra.
type Tool struct {
	Type         string
	Name         string
	Description  string
	InputSchema  json.RawMessage
	DeferLoading bool
	CacheControl json.RawMessage
	Extra        map[string]json.RawMessage
}

func (t Tool) MarshalJSON() ([]byte, error) {
	known := map[string]any{"name": t.Name}
	if t.Type != "" {
		known["type"] = t.Type
	}
	if t.Description != "" {
		known["description"] = t.Description
	}
	if t.InputSchema != nil {
		known["input_schema"] = t.InputSchema
	}
	if t.DeferLoading {
		known["defer_loading"] = true
	}
	if t.CacheControl != nil {
		known["cache_control"] = t.CacheControl
	}
	return marshalObject(t.Extra, known)
}

func (t *Tool) UnmarshalJSON(data []byte) error {
	var o object
	if err := json.Unmarshal(data, &o); err != nil {
		return err
	}
	return t.fromObject(o)
}

// fromObject reads a tool from its members, which it keeps.
func (t *Tool) fromObject(o object) error {
	*t = Tool{}
	for key, v := range map[string]any{"type": &t.Type, "name": &t.Name, "description": &t.Description, "defer_loading": &t.DeferLoading} {
		if err := take(o, key, v); err != nil {
			return err
		}
	}
	if raw, ok := o["input_schema"]; ok {
		t.InputSchema = raw
		delete(o, "input_schema")
	}
	if raw, ok := o["cache_control"]; ok {
		t.CacheControl = raw
		delete(o, "cache_control")
	}
	if len(o) > 0 {
		t.Extra = o
	}
	return nil
}
