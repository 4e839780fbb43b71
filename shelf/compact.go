package shelf

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"
)

// A compact match is what a model needs to choose a tool and, most of the
// time, to call it: its purpose in one sentence and a signature, rather
// than the whole input schema, which is most of a definition's tokens
// (77% on mcpproxy-go's corpus). Whole definitions come on demand
// (select:NAME, describe, or the schema in a call's error).

// Limits of a compact match, so that no server's text makes one long.
const (
	maxPurpose   = 200 // bytes of the purpose sentence
	maxSignature = 400 // bytes of the signature
	maxEnum      = 4   // enum values shown before "|…"
	maxEnumValue = 24  // bytes of one enum value shown
)

// Purpose returns the first sentence of a description, cut to a bound.
func Purpose(desc string) string {
	desc = strings.TrimSpace(desc)
	end := len(desc)
	for i, r := range desc {
		if r == '\n' || r == '。' {
			end = i
			break
		}
		// A period ends a sentence when a space or the end follows it, and
		// it is not part of "e.g." or a version ("v1.2").
		if (r == '.' || r == '!' || r == '?') && i > 0 {
			next := i + 1
			if next == len(desc) || desc[next] == ' ' {
				if r == '.' && isAbbreviation(desc[:i]) {
					continue
				}
				end = next
				break
			}
		}
	}
	return clip(strings.TrimSpace(desc[:end]), maxPurpose)
}

// isAbbreviation reports whether the text before a period ends with one
// of the abbreviations that do not end a sentence.
func isAbbreviation(before string) bool {
	lower := strings.ToLower(before)
	for _, a := range []string{"e.g", "i.e", "etc", "vs", "approx", "incl"} {
		if strings.HasSuffix(lower, a) && (len(lower) == len(a) || !unicode.IsLetter(rune(lower[len(lower)-len(a)-1]))) {
			return true
		}
	}
	return false
}

// Signature returns the parameters of an input schema in a line: required
// ones first, in the schema's order of "required", then the optional
// ones (marked ?) by name, each with its type; enums are cut short. A
// schema without properties gives "()".
func Signature(schema json.RawMessage) string {
	var s schemaJSON
	if len(schema) == 0 || json.Unmarshal(schema, &s) != nil {
		return "()"
	}
	required := map[string]bool{}
	var names []string
	for _, n := range s.Required {
		if _, ok := s.Properties[n]; ok && !required[n] {
			required[n] = true
			names = append(names, n)
		}
	}
	var optional []string
	for n := range s.Properties {
		if !required[n] {
			optional = append(optional, n)
		}
	}
	sort.Strings(optional)
	names = append(names, optional...)
	var b strings.Builder
	b.WriteByte('(')
	for i, n := range names {
		part := n
		if !required[n] {
			part += "?"
		}
		part += ": " + typeOf(s.Properties[n])
		if i > 0 {
			part = ", " + part
		}
		if b.Len()+len(part) > maxSignature {
			fmt.Fprintf(&b, ", …%d more", len(names)-i)
			break
		}
		b.WriteString(part)
	}
	b.WriteByte(')')
	return b.String()
}

type schemaJSON struct {
	Properties map[string]json.RawMessage `json:"properties"`
	Required   []string                   `json:"required"`
}

// typeOf words a property's type: string, number, boolean, object,
// T[] for an array, "a"|"b" for an enum, a|b for a union.
func typeOf(raw json.RawMessage) string {
	var p struct {
		Type  json.RawMessage   `json:"type"`
		Enum  []json.RawMessage `json:"enum"`
		Const json.RawMessage   `json:"const"`
		Items json.RawMessage   `json:"items"`
		AnyOf []json.RawMessage `json:"anyOf"`
		OneOf []json.RawMessage `json:"oneOf"`
		Ref   string            `json:"$ref"`
	}
	if json.Unmarshal(raw, &p) != nil {
		return "any"
	}
	if len(p.Const) > 0 {
		return clip(string(p.Const), maxEnumValue)
	}
	if len(p.Enum) > 0 {
		var vals []string
		for i, v := range p.Enum {
			if i == maxEnum {
				vals = append(vals, "…")
				break
			}
			vals = append(vals, clip(string(v), maxEnumValue))
		}
		return strings.Join(vals, "|")
	}
	if alts := append(p.AnyOf, p.OneOf...); len(alts) > 0 {
		var types []string
		for _, a := range alts {
			if t := typeOf(a); t != "null" && !contains(types, t) {
				types = append(types, t)
			}
		}
		if len(types) > 0 {
			return strings.Join(types, "|")
		}
	}
	var types []string
	if json.Unmarshal(p.Type, &types) != nil {
		var one string
		if json.Unmarshal(p.Type, &one) == nil && one != "" {
			types = []string{one}
		}
	}
	var out []string
	for _, t := range types {
		switch t {
		case "null":
			continue
		case "integer":
			t = "number"
		case "array":
			t = "any[]"
			if len(p.Items) > 0 {
				item := typeOf(p.Items)
				if strings.Contains(item, "|") {
					item = "(" + item + ")"
				}
				t = item + "[]"
			}
		}
		out = append(out, t)
	}
	switch {
	case len(out) > 0:
		return strings.Join(out, "|")
	case len(types) > 0:
		return "null"
	case p.Ref != "":
		return "object"
	case len(p.Items) > 0:
		return typeOf(p.Items) + "[]"
	}
	return "any"
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// clip cuts s to at most n bytes on a rune boundary, marking the cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	n -= len("…")
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
