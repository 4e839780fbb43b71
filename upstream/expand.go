package upstream

import (
	"fmt"
	"strings"
)

// expander expands ${VAR} and ${VAR:-default} in configuration strings.
// It remembers the first variable that is unset and has no default; the
// error names the variable and where it was used, never a value.
type expander struct {
	getenv func(string) string
	err    error
	// values are what references expanded to, for redaction, and vars
	// the names of the variables they came from, which no other server
	// may inherit.
	values []string
	vars   []string
}

func (x *expander) expand(s, where string) string {
	if !strings.Contains(s, "${") {
		return s
	}
	var b strings.Builder
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		end := strings.IndexByte(s[i:], '}')
		if end < 0 {
			b.WriteString(s) // an unclosed ${ is left as written
			return b.String()
		}
		b.WriteString(s[:i])
		expr := s[i+2 : i+end]
		name, def, hasDef := strings.Cut(expr, ":-")
		if !validVarName(name) {
			b.WriteString(s[i : i+end+1]) // not a variable reference
		} else if v := x.getenv(name); v != "" {
			b.WriteString(v)
			x.values = append(x.values, v)
			x.vars = append(x.vars, name)
		} else if hasDef {
			b.WriteString(def)
		} else if x.err == nil {
			x.err = fmt.Errorf("environment variable %s is not set (used in %s; write ${%s:-default} to give a default)", name, where, name)
		}
		s = s[i+end+1:]
	}
}

func validVarName(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		if !(r == '_' || r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || i > 0 && r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}
