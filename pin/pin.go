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
)

// definitionFields are the parts of an MCP tool object that say what the
// tool does; a change to any of them needs a person's approval. _meta and
// fields a later revision adds are not pinned: they do not reach the
// model's reading of the tool.
var definitionFields = []string{"name", "title", "description", "inputSchema", "outputSchema", "annotations"}

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
	kept := make(map[string]any, len(definitionFields))
	for _, f := range definitionFields {
		if v, ok := obj[f]; ok {
			kept[f] = v
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
