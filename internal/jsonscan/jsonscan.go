// Package jsonscan walks JSON that is known to be valid without decoding
// it: the members of an object and the elements of an array, as slices of
// the input. encoding/json validates a value again at every level of a
// custom decoder, and copies every json.RawMessage; on the large bodies
// toolshelf reads (a catalog file of 100,000 tools, a Messages API request
// with hundreds of tool definitions) that was most of the time spent.
//
// A Scanner must only be given valid JSON (json.Valid, or data that
// json.Unmarshal has accepted): on other input it stops early or returns
// nonsense, but it always returns.
package jsonscan

import (
	"bytes"
	"encoding/json"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"
)

// Scanner walks one JSON text.
type Scanner struct {
	data []byte
	i    int
}

// New returns a Scanner at the start of data.
func New(data []byte) *Scanner { return &Scanner{data: data} }

// Pos is the scanner's offset in its data.
func (s *Scanner) Pos() int { return s.i }

// Peek returns the first byte of the value at the cursor (after spaces),
// or 0 at the end.
func (s *Scanner) Peek() byte {
	s.space()
	if s.i >= len(s.data) {
		return 0
	}
	return s.data[s.i]
}

func (s *Scanner) space() { s.i = skipSpace(s.data, s.i) }

// skipSpace returns where the spaces of data at i end.
func skipSpace(data []byte, i int) int {
	for i < len(data) {
		switch data[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// Object calls member with each key of the object at the cursor, with the
// cursor at the key's value; member must move past the value (with Skip,
// Value, String, Object or Array). It returns false, having skipped the
// value, when the value is not an object.
func (s *Scanner) Object(member func(key string)) bool { return s.object(false, member) }

// Members is Object, but a key that needs no decoding shares the
// scanner's data: member must not keep it past its call. For reading a
// few known keys of a message without a copy of each key.
func (s *Scanner) Members(member func(key string)) bool { return s.object(true, member) }

func (s *Scanner) object(shared bool, member func(key string)) bool {
	return s.each('{', '}', func() {
		start := s.i
		s.str()
		var key string
		body := s.data[start+1 : max(s.i-1, start+1)]
		ok := shared && len(body) > 0 && plain(body) && s.i-1 > start
		if ok {
			key = unsafe.String(&body[0], len(body))
		} else if key, ok = Unquote(s.data[start:s.i]); !ok {
			key = string(s.data[start:s.i])
		}
		s.space()
		s.i = min(s.i+1, len(s.data)) // the colon
		s.space()
		before := s.i
		member(key)
		s.progress(before)
	})
}

// Array calls elem with the cursor at each element of the array at the
// cursor; elem must move past the element. It returns false, having
// skipped the value, when the value is not an array.
func (s *Scanner) Array(elem func()) bool {
	return s.each('[', ']', elem)
}

// each calls one with the cursor at each member of the object or array
// at the cursor, between open and end; false, the value skipped, when
// the value does not start with open.
func (s *Scanner) each(open, end byte, one func()) bool {
	if s.Peek() != open {
		s.Skip()
		return false
	}
	s.i++
	for {
		s.space()
		if s.i >= len(s.data) {
			return true
		}
		switch s.data[s.i] {
		case end:
			s.i++
			return true
		case ',':
			s.i++
			continue
		}
		before := s.i
		one()
		s.progress(before)
	}
}

// progress skips a value its caller left, and on input that is not valid
// JSON, where nothing moves the cursor, ends the walk.
func (s *Scanner) progress(before int) {
	if s.i == before {
		s.Skip()
	}
	if s.i == before {
		s.i = len(s.data)
	}
}

// Value returns the value at the cursor, a slice of the data, and moves
// past it.
func (s *Scanner) Value() []byte {
	s.space()
	start := s.i
	s.Skip()
	return s.data[start:s.i]
}

// String returns the string at the cursor and moves past it; ok is false,
// the value skipped, when it is not a string.
func (s *Scanner) String() (string, bool) { return s.string(false) }

// SharedString is String, but a string that needs no decoding (no
// escapes, ASCII) shares the scanner's data instead of being a copy: for
// data that is kept as long as the string and never changed, such as a
// tool's JSON that its catalog entry keeps. Anywhere else a small string
// would keep all the data alive, or change with it.
func (s *Scanner) SharedString() (string, bool) { return s.string(true) }

func (s *Scanner) string(shared bool) (string, bool) {
	if s.Peek() != '"' {
		s.Skip()
		return "", false
	}
	start := s.i
	s.str()
	body := s.data[start+1 : max(s.i-1, start+1)]
	if shared && len(body) > 0 && plain(body) && s.i-1 > start {
		return unsafe.String(&body[0], len(body)), true
	}
	return Unquote(s.data[start:s.i])
}

// plain reports whether a string's body needs no decoding.
func plain(body []byte) bool {
	for _, c := range body {
		if c == '\\' || c < 0x20 || c == '"' || c >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// str moves past the string at the cursor: to the next quote that no
// backslash escapes, found a block at a time (bytes.IndexByte), since
// most of a large request or catalog is inside strings.
func (s *Scanner) str() {
	s.i++ // the opening quote
	for s.i < len(s.data) {
		q := bytes.IndexByte(s.data[s.i:], '"')
		if q < 0 {
			break
		}
		q += s.i
		for s.i <= q {
			k := bytes.IndexByte(s.data[s.i:q], '\\')
			if k < 0 {
				s.i = q + 1
				return
			}
			s.i += k + 2 // the backslash and what it escapes, perhaps the quote
		}
	}
	s.i = len(s.data) // unterminated, or ending in a backslash
}

// Skip moves past the value at the cursor.
func (s *Scanner) Skip() {
	s.space()
	if s.i >= len(s.data) {
		return
	}
	switch s.data[s.i] {
	case '"':
		s.str()
	case '{', '[':
		depth := 0
		for s.i < len(s.data) {
			switch s.data[s.i] {
			case '"':
				s.str()
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
			}
			s.i++
			if depth == 0 {
				return
			}
		}
	default:
		for s.i < len(s.data) {
			switch s.data[s.i] {
			case ',', '}', ']', ' ', '\t', '\r', '\n':
				return
			}
			s.i++
		}
	}
}

// Unquote decodes a JSON string, quotes included, as encoding/json does.
// Common escapes and valid UTF-8 are decoded here; a string with a
// surrogate escape or invalid UTF-8 (which encoding/json mends) goes to
// encoding/json. FuzzUnquote checks they agree.
func Unquote(q []byte) (string, bool) {
	if len(q) < 2 || q[0] != '"' || q[len(q)-1] != '"' {
		return "", false
	}
	body := q[1 : len(q)-1]
	if plain(body) {
		return string(body), true
	}
	if s, ok := unescape(body); ok {
		return s, true
	}
	var v string
	err := json.Unmarshal(q, &v)
	return v, err == nil
}

// unescape decodes a string's body; ok is false for what it leaves to
// encoding/json.
func unescape(body []byte) (string, bool) {
	out := make([]byte, 0, len(body))
	for i := 0; i < len(body); i++ {
		c := body[i]
		switch {
		case c == '"' || c < 0x20:
			return "", false
		case c >= utf8.RuneSelf:
			r, n := utf8.DecodeRune(body[i:])
			if r == utf8.RuneError && n == 1 {
				return "", false
			}
			out = append(out, body[i:i+n]...)
			i += n - 1
		case c != '\\':
			out = append(out, c)
		case i+1 >= len(body):
			return "", false
		default:
			i++
			switch body[i] {
			case '"', '\\', '/':
				out = append(out, body[i])
			case 'b':
				out = append(out, '\b')
			case 'f':
				out = append(out, '\f')
			case 'n':
				out = append(out, '\n')
			case 'r':
				out = append(out, '\r')
			case 't':
				out = append(out, '\t')
			case 'u':
				if i+4 >= len(body) {
					return "", false
				}
				r, err := strconv.ParseUint(string(body[i+1:i+5]), 16, 32)
				if err != nil || utf16.IsSurrogate(rune(r)) {
					return "", false
				}
				out = utf8.AppendRune(out, rune(r))
				i += 4
			default:
				return "", false
			}
		}
	}
	return string(out), true
}
