package sandbox

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// Declaration writes a tool as the function a program calls, in
// TypeScript: the description as a doc comment, each argument with its
// type, a ? when it is optional and its description as a comment, and the
// type of what the call returns, from the tool's output schema (any
// without one). A model writes calls from it as it would from a library's
// types, in fewer tokens than the JSON schema.
func Declaration(server, tool, description string, input, output json.RawMessage) string {
	var b strings.Builder
	if d := comment(description, 600); d != "" {
		fmt.Fprintf(&b, "/** %s */\n", d)
	}
	b.WriteString(Accessor(server, tool))
	in := parseSchema(input)
	props, _ := in["properties"].(map[string]any)
	if len(props) == 0 {
		b.WriteString("(args?: {})")
	} else {
		required := stringSet(in["required"])
		b.WriteString("(args: {\n")
		for _, name := range sortedKeys(props) {
			p, _ := props[name].(map[string]any)
			if d := comment(str(p["description"]), 200); d != "" {
				fmt.Fprintf(&b, "  /** %s */\n", d)
			}
			opt := "?"
			if required[name] {
				opt = ""
			}
			fmt.Fprintf(&b, "  %s%s: %s;\n", property(name), opt, typeOf(in, p, 0))
		}
		b.WriteString("})")
	}
	result := "any"
	if out := parseSchema(output); len(out) > 0 {
		result = typeOf(out, out, 0)
	}
	fmt.Fprintf(&b, ": Promise<%s>", result)
	return b.String()
}

var identifier = regexp.MustCompile(`^[A-Za-z_$][A-Za-z0-9_$]*$`)

// Accessor is how a program names a tool: tools.server.tool, with
// brackets for a name that is not an identifier.
func Accessor(server, tool string) string {
	return "tools" + member(server) + member(tool)
}

func member(name string) string {
	if identifier.MatchString(name) {
		return "." + name
	}
	q, _ := json.Marshal(name)
	return "[" + string(q) + "]"
}

func property(name string) string {
	if identifier.MatchString(name) {
		return name
	}
	q, _ := json.Marshal(name)
	return string(q)
}

func parseSchema(raw json.RawMessage) map[string]any {
	var m map[string]any
	_ = json.Unmarshal(raw, &m)
	return m
}

// maxTypeDepth bounds how deep a type is written; deeper is any.
const maxTypeDepth = 4

// typeOf writes a schema as a TypeScript type; root resolves $refs.
func typeOf(root, s map[string]any, depth int) string {
	if len(s) == 0 || depth > maxTypeDepth {
		return "any"
	}
	if ref := str(s["$ref"]); ref != "" {
		return typeOf(root, resolve(root, ref), depth+1)
	}
	if c, ok := s["const"]; ok {
		return literal(c)
	}
	if enum, ok := s["enum"].([]any); ok && len(enum) > 0 && len(enum) <= 12 {
		parts := make([]string, len(enum))
		for i, v := range enum {
			parts[i] = literal(v)
		}
		return strings.Join(parts, " | ")
	}
	for _, key := range []string{"anyOf", "oneOf"} {
		if alts, ok := s[key].([]any); ok && len(alts) > 0 {
			var parts []string
			for _, a := range alts {
				m, _ := a.(map[string]any)
				if t := typeOf(root, m, depth+1); !slices.Contains(parts, t) {
					parts = append(parts, t)
				}
			}
			return strings.Join(parts, " | ")
		}
	}
	switch t := s["type"].(type) {
	case []any:
		var parts []string
		for _, x := range t {
			c := map[string]any{}
			for k, v := range s {
				c[k] = v
			}
			c["type"] = x
			parts = append(parts, typeOf(root, c, depth+1))
		}
		return strings.Join(parts, " | ")
	case string:
		switch t {
		case "string", "boolean", "null":
			return t
		case "integer", "number":
			return "number"
		case "array":
			items, _ := s["items"].(map[string]any)
			it := typeOf(root, items, depth+1)
			if strings.ContainsAny(it, "|") {
				it = "(" + it + ")"
			}
			return it + "[]"
		case "object":
			return objectType(root, s, depth)
		}
	}
	if _, ok := s["properties"]; ok {
		return objectType(root, s, depth)
	}
	return "any"
}

// objectType writes an object schema on one line.
func objectType(root, s map[string]any, depth int) string {
	props, _ := s["properties"].(map[string]any)
	if len(props) == 0 {
		if extra, ok := s["additionalProperties"].(map[string]any); ok {
			return "Record<string, " + typeOf(root, extra, depth+1) + ">"
		}
		return "Record<string, any>"
	}
	required := stringSet(s["required"])
	var parts []string
	for _, name := range sortedKeys(props) {
		p, _ := props[name].(map[string]any)
		opt := "?"
		if required[name] {
			opt = ""
		}
		parts = append(parts, fmt.Sprintf("%s%s: %s", property(name), opt, typeOf(root, p, depth+1)))
	}
	return "{ " + strings.Join(parts, "; ") + " }"
}

// resolve finds a local $ref (#/$defs/x, #/definitions/x).
func resolve(root map[string]any, ref string) map[string]any {
	path, ok := strings.CutPrefix(ref, "#/")
	if !ok {
		return nil
	}
	var cur any = root
	for _, part := range strings.Split(path, "/") {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = m[strings.ReplaceAll(strings.ReplaceAll(part, "~1", "/"), "~0", "~")]
	}
	m, _ := cur.(map[string]any)
	return m
}

func literal(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

func stringSet(v any) map[string]bool {
	set := map[string]bool{}
	list, _ := v.([]any)
	for _, x := range list {
		if s, ok := x.(string); ok {
			set[s] = true
		}
	}
	return set
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// comment is text fit for a /** */ comment on one line, cut to n bytes.
func comment(s string, n int) string {
	s = strings.Join(strings.Fields(strings.ReplaceAll(s, "*/", "* /")), " ")
	if len(s) > n {
		s = strings.ToValidUTF8(s[:n], "") + "…"
	}
	return s
}
