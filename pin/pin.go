// Package pin keeps the tool definitions a user has trusted, so that a
// server cannot change what its tools say after they were approved (a
// "rug pull": a description rewritten to carry instructions for the
// model).
//
// Each definition (name, title, description, input and output schema,
// annotations) is hashed over a canonical JSON form and kept, with the
// definition itself, in a lock file beside the configuration
// (toolshelf.lock): sorted, indented JSON that reads well in a pull
// request. [Lock.Judge] says whether a tool as a server lists it now may
// be used.
package pin

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// definitionFields are the parts of an MCP tool object that say what the
// tool does; a change to any of them needs a person's approval. Fields a
// later revision adds are not pinned: they do not reach the model's
// reading of the tool. Of _meta, the keys toolshelf or clients act on are
// pinned (see pinnedMeta); the rest is not.
var definitionFields = []string{"name", "title", "description", "inputSchema", "outputSchema", "annotations"}

// pinnedFields are the fields of a canonical definition, in the order a
// diff shows them.
var pinnedFields = append(slices.Clone(definitionFields), "_meta")

// pinnedMeta reports whether a tool's _meta key is pinned: toolshelf acts
// on anthropic/alwaysLoad (listing a tool directly, in every session) and
// anthropic/searchHint (ranking it), clients on the rest of the anthropic/
// namespace, on OpenAI's Apps SDK keys (openai/) and on MCP Apps' ui. A
// server that adds one after approval changes what clients do with the
// tool, as a rewritten description would.
func pinnedMeta(key string) bool {
	for _, p := range []string{"anthropic/", "openai/", "ui/"} {
		if strings.HasPrefix(key, p) {
			return true
		}
	}
	// A skill's frontmatter and files, as upstream pins a skill.
	return key == "ui" || key == "io.modelcontextprotocol/skills"
}

// Definition is a tool's pinned fields in canonical JSON: object keys
// sorted, no insignificant space, numbers as written.
type Definition json.RawMessage

// Canonical returns the pinned fields of an MCP tool object in canonical
// form.
func Canonical(tool json.RawMessage) (Definition, error) {
	dec := json.NewDecoder(bytes.NewReader(tool))
	dec.UseNumber()
	var obj map[string]any
	if err := dec.Decode(&obj); err != nil {
		return nil, fmt.Errorf("a tool definition must be a JSON object: %v", err)
	}
	if obj == nil {
		return nil, fmt.Errorf("a tool definition must be a JSON object, not null")
	}
	kept := make(map[string]any, len(definitionFields)+1)
	for _, f := range definitionFields {
		if v, ok := obj[f]; ok {
			kept[f] = v
		}
	}
	if meta, ok := obj["_meta"].(map[string]any); ok {
		acted := map[string]any{}
		for k, v := range meta {
			if pinnedMeta(k) {
				acted[k] = v
			}
		}
		// Absent when empty, so that tools without such keys keep the
		// hashes they were pinned with.
		if len(acted) > 0 {
			kept["_meta"] = acted
		}
	}
	// encoding/json writes map keys sorted and json.Number as its text:
	// the same definition always gives the same bytes.
	b, err := json.Marshal(kept)
	if err != nil {
		return nil, err
	}
	return Definition(b), nil
}

// Hash returns the SHA-256 of a canonical definition, in hex.
func (d Definition) Hash() string {
	sum := sha256.Sum256(d)
	return hex.EncodeToString(sum[:])
}

// Fields returns the definition's fields by name, each as canonical JSON.
func (d Definition) Fields() map[string]json.RawMessage {
	var m map[string]json.RawMessage
	json.Unmarshal(d, &m)
	return m
}
