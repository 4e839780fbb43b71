package catalog

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
)

// Meta keys that Claude Code and the Anthropic tooling read from a tool's
// _meta object.
const (
	MetaAlwaysLoad = "anthropic/alwaysLoad"
	MetaSearchHint = "anthropic/searchHint"
)

// Entry is one tool in a catalog.
//
// An Entry is created by [ParseTool] from the JSON object an upstream
// server returned in tools/list; [New] assigns its qualified Name.
type Entry struct {
	// Name is the qualified name, unique within its catalog and valid as a
	// Messages API tool name: mcp__<server>__<tool> for an MCP tool.
	Name string
	// Skill, when set, makes the entry a skill (the skills extension), not
	// a tool: the URI its SKILL.md is served at. Skills are searched
	// beside tools (shelf.Shelf.UpdateSkills) and never called; its Tool
	// is that URI too (unique where skill names are not), its Title the
	// skill's name, and Uses the tools it names that can be called.
	Skill string
	Uses  []string
	// Server is the upstream server's name as configured. It is empty for
	// tools that do not come from an MCP server (an agent's own tools).
	Server string
	// Tool is the tool's name as the server gave it.
	Tool string
	// Title is the tool's display title, from "title" or annotations.title.
	Title string
	// Description is the tool's description as received.
	Description string
	// InputSchema is the tool's input JSON Schema as received, compacted:
	// it shares Raw's memory, and must not be modified. Normalised copies
	// for re-exposure are made by the packages that re-expose.
	InputSchema json.RawMessage
	// Params are the top-level properties of InputSchema, sorted by name.
	Params []Param
	// Raw is the whole tool object as received, so that fields toolshelf
	// does not model (outputSchema, annotations, execution, _meta, ...)
	// survive a round trip.
	Raw json.RawMessage
	// SearchHint is a curated capability phrase from
	// _meta["anthropic/searchHint"].
	SearchHint string
	// AlwaysLoad is set by _meta["anthropic/alwaysLoad"] or by the server's
	// configuration: the tool is never deferred.
	AlwaysLoad bool
	// ID identifies the tool outside toolshelf, such as a dataset's tool id.
	// It is optional and not interpreted.
	ID string
	// Shortened reports that Name had to be cut to fit MaxNameLen, or was
	// given a hash suffix to stay distinct from another tool's name.
	Shortened bool
	// Unverified marks a tool that the server has not listed over MCP: it
	// was found in the server's output or named by its configuration
	// (autoApprove). Such a tool is searchable but not callable.
	Unverified bool
	// Stale marks a tool from a cached tool list that the server has not
	// confirmed since toolshelf started.
	Stale bool
	// Hints are its annotations' behaviour hints (readOnlyHint, ...).
	Hints Hints
	// Asks is the question an operator's rule asks the person before
	// every call of the tool (package rules): search says so in its
	// match, so that the model knows.
	Asks string
	// Unprefixed keeps the tool's own name as its Name, without the
	// mcp__<server>__ prefix (its server's "prefix": false). Such a name
	// is sanitised and shortened like any other, and must not collide.
	Unprefixed bool
}

// SkillEntry is a skill as an entry searched beside tools (Entry.Skill):
// its SKILL.md's URI, the server serving it, its name and description,
// and the tools it names that can be called (uses).
func SkillEntry(server, uri, name, description string, uses []string) Entry {
	raw, _ := json.Marshal(map[string]any{"name": name, "description": description})
	return Entry{Server: server, Tool: uri, Title: name, Description: description, Skill: uri, Uses: uses, Raw: raw}
}

// IsMCP reports whether the tool comes from an MCP server.
func (e *Entry) IsMCP() bool { return e.Server != "" }

// toolJSON is the part of an MCP tool object that toolshelf reads.
type toolJSON struct {
	Name        string                     `json:"name"`
	Title       string                     `json:"title"`
	Description string                     `json:"description"`
	InputSchema rawRef                     `json:"inputSchema"` // a slice of Raw, not a copy
	Annotations *annotationsJSON           `json:"annotations"`
	Meta        map[string]json.RawMessage `json:"_meta"`
}

// annotationsJSON is the part of a tool's annotations that toolshelf
// reads: its title and its behaviour hints.
type annotationsJSON struct {
	Title       string `json:"title"`
	ReadOnly    bool   `json:"readOnlyHint"`
	Destructive bool   `json:"destructiveHint"`
	Idempotent  bool   `json:"idempotentHint"`
	OpenWorld   bool   `json:"openWorldHint"`
}

// Hints are a tool's behaviour hints as its server gave them; one it did
// not give is false (the MCP default of destructiveHint, true, would make
// every tool without annotations destructive).
type Hints struct {
	ReadOnly, Destructive, Idempotent, OpenWorld bool
}

// ParseTool builds an Entry from one tool object of a tools/list result.
// The object is kept verbatim in Entry.Raw. The Name is left for [New].
func ParseTool(server string, raw json.RawMessage) (Entry, error) {
	// Compact so that a catalog's version does not depend on whitespace;
	// every field and every escape is kept. Compacting first also checks
	// the JSON, and makes what is decoded next smaller.
	compact := bytes.NewBuffer(make([]byte, 0, len(raw)))
	if err := json.Compact(compact, raw); err != nil {
		return Entry{}, fmt.Errorf("tool is not valid JSON: %v", err)
	}
	b := compact.Bytes()
	if cap(b)-len(b) > len(b)/8 {
		b = bytes.Clone(b) // kept by the entry: not the spaces' room too
	}
	return parseCompact(server, b)
}

// parseCompact is ParseTool for a tool's valid, compacted JSON, which the
// entry keeps.
func parseCompact(server string, compact []byte) (Entry, error) {
	t, params, fast := parseFast(compact)
	if !fast {
		if err := json.Unmarshal(compact, &t); err != nil {
			return Entry{}, fmt.Errorf("tool is not a JSON object: %v", err)
		}
		params = parseParams(json.RawMessage(t.InputSchema))
	}
	if t.Name == "" {
		return Entry{}, errors.New(`tool has no "name"`)
	}
	e := Entry{
		Server:      server,
		Tool:        t.Name,
		Title:       t.Title,
		Description: t.Description,
		InputSchema: json.RawMessage(t.InputSchema),
		Raw:         compact,
	}
	e.Params = params
	if a := t.Annotations; a != nil {
		if e.Title == "" {
			e.Title = a.Title
		}
		e.Hints = Hints{ReadOnly: a.ReadOnly, Destructive: a.Destructive, Idempotent: a.Idempotent, OpenWorld: a.OpenWorld}
	}
	if v, ok := t.Meta[MetaAlwaysLoad]; ok {
		var b bool
		if json.Unmarshal(v, &b) == nil {
			e.AlwaysLoad = b
		}
	}
	if v, ok := t.Meta[MetaSearchHint]; ok {
		var s string
		if json.Unmarshal(v, &s) == nil {
			e.SearchHint = s
		}
	}
	return e, nil
}

// propertyJSON is a property's description; a property that is not an
// object, or whose description is not a string, still has a name.
type propertyJSON string

func (p *propertyJSON) UnmarshalJSON(b []byte) error {
	var v struct {
		Description string `json:"description"`
	}
	if json.Unmarshal(b, &v) == nil {
		*p = propertyJSON(v.Description)
	}
	return nil
}

// Param is one top-level property of a tool's input schema.
type Param struct {
	Name        string
	Description string
}

// parseParams returns the top-level properties of an input schema,
// sorted by name. A schema that is not an object with properties has none.
func parseParams(schema json.RawMessage) []Param {
	if len(schema) == 0 {
		return nil
	}
	var s struct {
		Properties map[string]propertyJSON `json:"properties"`
	}
	if json.Unmarshal(schema, &s) != nil || len(s.Properties) == 0 {
		return nil
	}
	ps := make([]Param, 0, len(s.Properties))
	for name, p := range s.Properties {
		ps = append(ps, Param{Name: name, Description: string(p)})
	}
	sort.Slice(ps, func(i, j int) bool { return ps[i].Name < ps[j].Name })
	return ps
}
