package upstream

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/toolshelf/toolshelf/catalog"
	"github.com/toolshelf/toolshelf/internal/jsonscan"
	"golang.org/x/text/unicode/norm"
)

// One form of a call: the arguments a rule judges are the bytes the
// server gets. Servers read JSON their own ways: Go's encoding/json (and
// many hand-written, mcp-go and .NET servers) matches a key to a field
// whatever its case and keeps the last of two; others keep the first, or
// read every key exactly. A call whose arguments say {"path": ok, "PATH":
// bad} would pass a rule on path and write PATH. So arguments are parsed
// once, here, into one form: keys that one reader could take for one
// another (equal once case and compatibility forms are folded, or given
// twice) are refused, at any depth; a top-level key that is a declared
// parameter but for its case or form is renamed to the parameter's own
// spelling (a server that folds case reads the same value, one that does
// not now reads it too); strings are re-encoded as the reader decodes
// them (a broken escape or byte as U+FFFD, as encoding/json does); and the
// result, not the client's bytes, is what rules, policy check, the audit
// record and the server get.

// maxArgsDepth bounds how deep a call's arguments nest: past it the call
// is refused, not cut.
const maxArgsDepth = 64

// An ArgumentsError is a call's arguments that have no one form: not a
// JSON object, nested too deep, or with keys a server could take for one
// another. The gateway answers it as invalid params (-32602).
type ArgumentsError struct{ Reason string }

func (e *ArgumentsError) Error() string { return "the arguments are refused: " + e.Reason }

// NewCall is a call of tool e with its arguments in their one form (see
// above); the error is an [*ArgumentsError].
func NewCall(e *catalog.Entry, args json.RawMessage, via string) (*Call, error) {
	c := &Call{Tool: e, Args: args, Via: via}
	if err := c.canonicalize(); err != nil {
		return nil, err
	}
	return c, nil
}

// Canonical reports whether the call's arguments are in their one form
// (the call was reached or checked, or made by [NewCall]).
func (c *Call) Canonical() bool { return c.canonical }

// canonicalize puts the call's arguments in their one form, once.
func (c *Call) canonicalize() error {
	if c.canonical {
		return nil
	}
	var params []catalog.Param
	if c.Tool != nil {
		params = c.Tool.Params
	}
	args, renamed, err := canonicalArgs(c.Args, params)
	if err != nil {
		return err
	}
	c.Args, c.canonical, c.renamed = args, true, renamed
	return nil
}

// Renamed reports whether a key of the call's arguments was given its
// declared parameter's spelling (see canonicalize).
func (c *Call) Renamed() bool { return c.renamed }

// canonicalArgs is raw in its one form (see above); params are the
// tool's declared parameters, whose spelling a key that folds to one of
// them takes.
func canonicalArgs(raw json.RawMessage, params []catalog.Param) (args json.RawMessage, renamed bool, err error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return json.RawMessage(`{}`), false, nil
	}
	if !jsonscan.Valid(raw) {
		return nil, false, &ArgumentsError{Reason: "they are not JSON"}
	}
	if raw[0] != '{' {
		return nil, false, &ArgumentsError{Reason: "they are not a JSON object"}
	}
	w := argsWriter{out: make([]byte, 0, len(raw)), params: params}
	w.value(jsonscan.New(raw), 0, "")
	if w.err != nil {
		return nil, false, w.err
	}
	return w.out, w.renamed, nil
}

// argsWriter writes arguments in their one form as it reads them.
type argsWriter struct {
	out     []byte
	params  []catalog.Param
	err     error
	renamed bool
}

func (w *argsWriter) fail(format string, a ...any) {
	if w.err == nil {
		w.err = &ArgumentsError{Reason: fmt.Sprintf(format, a...)}
	}
}

// value writes the value at the scanner's cursor; at is where it lies,
// for errors.
func (w *argsWriter) value(s *jsonscan.Scanner, depth int, at string) {
	if w.err != nil {
		s.Skip()
		return
	}
	if depth > maxArgsDepth {
		w.fail("nested deeper than %d levels", maxArgsDepth)
		s.Skip()
		return
	}
	switch s.Peek() {
	case '{':
		w.object(s, depth, at)
	case '[':
		w.out = append(w.out, '[')
		i := 0
		s.Array(func() {
			if i > 0 {
				w.out = append(w.out, ',')
			}
			w.value(s, depth+1, at+"["+strconv.Itoa(i)+"]")
			i++
		})
		w.out = append(w.out, ']')
	case '"':
		str, ok := s.String()
		if !ok {
			w.fail("a string at %s cannot be read", where(at))
			return
		}
		w.out = appendString(w.out, str)
	default:
		w.out = append(w.out, s.Value()...) // a number, true, false or null, as written
	}
}

// object writes the object at the cursor, refusing keys a reader could
// take for one another and, at the top, giving a declared parameter's
// key its own spelling.
func (w *argsWriter) object(s *jsonscan.Scanner, depth int, at string) {
	seen := map[string]string{} // folded key → the key as given
	w.out = append(w.out, '{')
	n := 0
	s.Object(func(key string) {
		if w.err != nil {
			s.Skip()
			return
		}
		folded := foldKey(key)
		if prev, ok := seen[folded]; ok {
			if prev == key {
				w.fail("the key %s is given twice%s (servers differ on which they read)", strconv.Quote(clip(key, 80)), in(at))
			} else {
				w.fail("the keys %s and %s%s are one key to servers that fold case or form; give one of them", strconv.Quote(clip(prev, 80)), strconv.Quote(clip(key, 80)), in(at))
			}
			s.Skip()
			return
		}
		seen[folded] = key
		name := key
		if depth == 0 {
			name = w.declared(key, folded)
			w.renamed = w.renamed || name != key
		}
		if n > 0 {
			w.out = append(w.out, ',')
		}
		n++
		w.out = appendString(w.out, name)
		w.out = append(w.out, ':')
		w.value(s, depth+1, at+"."+name)
	})
	w.out = append(w.out, '}')
}

// declared is the spelling of the declared parameter a top-level key
// folds to, or the key itself when it is declared or folds to none.
func (w *argsWriter) declared(key, folded string) string {
	match := ""
	for _, p := range w.params {
		if p.Name == key {
			return key
		}
		if match == "" && foldKey(p.Name) == folded {
			match = p.Name
		}
	}
	if match != "" {
		return match
	}
	return key
}

// foldKey is a key as a reader that ignores case and compatibility forms
// sees it: NFKC, then every letter as the least of its simple case
// folding orbit (encoding/json's folding: K, k and the Kelvin sign are
// one; s and ſ are one).
func foldKey(key string) string {
	ascii := true
	for i := 0; i < len(key); i++ {
		if key[i] >= utf8.RuneSelf {
			ascii = false
			break
		}
	}
	if !ascii {
		key = norm.NFKC.String(key)
	}
	b := make([]byte, 0, len(key))
	for _, r := range key {
		b = utf8.AppendRune(b, leastFold(r))
	}
	return string(b)
}

// leastFold is the least rune of r's simple case folding orbit.
func leastFold(r rune) rune {
	if r < utf8.RuneSelf {
		if 'A' <= r && r <= 'Z' {
			return r
		}
		if 'a' <= r && r <= 'z' {
			return r - 'a' + 'A'
		}
		if r != 'k' && r != 's' {
			return r
		}
	}
	least := r
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		least = min(least, f)
	}
	return least
}

// appendString appends s as a JSON string: quotes, backslashes and
// control characters escaped, nothing else (no HTML escaping, which no
// reader needs).
func appendString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c == '\n':
			b = append(b, '\\', 'n')
		case c == '\r':
			b = append(b, '\\', 'r')
		case c == '\t':
			b = append(b, '\\', 't')
		case c < 0x20:
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		default:
			b = append(b, c)
		}
	}
	return append(b, '"')
}

// where names a place in the arguments for a message.
func where(at string) string {
	if at == "" {
		return "the top"
	}
	return clip(strings.TrimPrefix(at, "."), 80)
}

func in(at string) string {
	if at == "" {
		return ""
	}
	return " in " + where(at)
}
