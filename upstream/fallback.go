package upstream

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/toolshelf/toolshelf/catalog"
	"github.com/toolshelf/toolshelf/config"
)

// Discovery fallbacks, for a server that starts but does not answer
// tools/list properly. In order:
//
//  1. tool definitions the server printed instead of answering, in one of
//     three structured shapes: an OpenAI-style {"functions": [...]}, a
//     {"tools": [...]} object, or one JSON tool object per line;
//  2. the tool names the configuration auto-approves.
//
// Tools found this way are marked Unverified: searchable, so the model
// learns they exist, but not callable until the server lists them.
//
// Guessing tool names from free text, or asking a model to predict them,
// is deliberately not done: it invents tools that cannot be called.

// outputTools finds tool definitions in what a server printed.
func outputTools(out []byte) []json.RawMessage {
	if tools := shapeTools(bytes.TrimSpace(out)); tools != nil {
		return tools
	}
	var tools []json.RawMessage
	for line := range bytes.Lines(out) {
		line = bytes.TrimSpace(line)
		if len(line) == 0 || line[0] != '{' {
			continue
		}
		if ts := shapeTools(line); ts != nil {
			tools = append(tools, ts...)
			continue
		}
		if isToolObject(line) {
			tools = append(tools, line)
		}
	}
	return tools
}

// shapeTools reads a {"functions": [...]} or {"tools": [...]} object, or a
// JSON-RPC response whose result is one.
func shapeTools(data []byte) []json.RawMessage {
	var v struct {
		Tools     []json.RawMessage `json:"tools"`
		Functions []json.RawMessage `json:"functions"`
		Result    json.RawMessage   `json:"result"`
	}
	if len(data) == 0 || data[0] != '{' || json.Unmarshal(data, &v) != nil {
		return nil
	}
	var out []json.RawMessage
	for _, t := range v.Tools {
		if isToolObject(t) {
			out = append(out, t)
		}
	}
	out = append(out, functionTools(v.Functions)...)
	if len(out) == 0 && len(v.Result) > 0 {
		return shapeTools(v.Result)
	}
	return out
}

// isToolObject reports whether data is a JSON object with a string "name".
func isToolObject(data []byte) bool {
	var t struct {
		Name string `json:"name"`
	}
	return json.Unmarshal(data, &t) == nil && t.Name != ""
}

// functionTools converts OpenAI function definitions, bare
// ({"name","description","parameters"}) or wrapped
// ({"type":"function","function":{...}}), to MCP tool objects.
func functionTools(fns []json.RawMessage) []json.RawMessage {
	var out []json.RawMessage
	for _, raw := range fns {
		var f struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			Parameters  json.RawMessage `json:"parameters"`
			InputSchema json.RawMessage `json:"inputSchema"`
			Function    json.RawMessage `json:"function"`
		}
		if json.Unmarshal(raw, &f) != nil {
			continue
		}
		if f.Name == "" && len(f.Function) > 0 {
			out = append(out, functionTools([]json.RawMessage{f.Function})...)
			continue
		}
		if f.Name == "" {
			continue
		}
		schema := f.InputSchema
		if len(schema) == 0 {
			schema = f.Parameters
		}
		if len(schema) == 0 {
			schema = json.RawMessage(`{"type":"object"}`)
		}
		b, err := json.Marshal(struct {
			Name        string          `json:"name"`
			Description string          `json:"description,omitempty"`
			InputSchema json.RawMessage `json:"inputSchema"`
		}{f.Name, f.Description, schema})
		if err == nil {
			out = append(out, b)
		}
	}
	return out
}

// approvedTools returns tool objects for a configuration's autoApprove
// names.
func approvedTools(names []string) []json.RawMessage {
	out := make([]json.RawMessage, 0, len(names))
	for _, n := range names {
		b, _ := json.Marshal(map[string]any{
			"name":        n,
			"description": fmt.Sprintf("Known from the configuration's autoApprove list; the server has not listed %s yet.", n),
			"inputSchema": map[string]any{"type": "object"},
		})
		out = append(out, b)
	}
	return out
}

// entries parses raw tool objects into catalog entries for a server,
// applying its configuration: allow/deny patterns and alwaysLoad.
// Objects that are not tools are skipped and counted in bad.
func entries(cfg *serverConfig, raws []json.RawMessage, unverified bool) (out []catalog.Entry, bad []error) {
	for _, raw := range raws {
		e, err := catalog.ParseTool(cfg.Name, raw)
		if err != nil {
			bad = append(bad, err)
			continue
		}
		if !cfg.Keeps(e.Tool) {
			continue
		}
		if d, ok := cfg.Describe[e.Tool]; ok {
			if e, err = describe(cfg.Name, raw, d); err != nil {
				bad = append(bad, err)
				continue
			}
		}
		if cfg.AlwaysLoads(e.Tool) {
			e.AlwaysLoad = true
		}
		e.Unverified = unverified
		e.Unprefixed = cfg.NoPrefix
		out = append(out, e)
	}
	return out, bad
}

// describe applies an operator's words to a tool's definition: the
// result is the definition listed, searched and pinned.
func describe(server string, raw json.RawMessage, d config.Describe) (catalog.Entry, error) {
	var t map[string]json.RawMessage
	if err := json.Unmarshal(raw, &t); err != nil {
		return catalog.Entry{}, err
	}
	if d.Description != "" {
		t["description"], _ = json.Marshal(d.Description)
	}
	if d.SearchWords != "" {
		var meta map[string]any
		json.Unmarshal(t["_meta"], &meta)
		if meta == nil {
			meta = map[string]any{}
		}
		hint, _ := meta[catalog.MetaSearchHint].(string)
		meta[catalog.MetaSearchHint] = strings.TrimSpace(hint + " " + d.SearchWords)
		t["_meta"], _ = json.Marshal(meta)
	}
	b, err := json.Marshal(t)
	if err != nil {
		return catalog.Entry{}, err
	}
	return catalog.ParseTool(server, b)
}
