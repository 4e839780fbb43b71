package jsonscan

// Valid reports whether data is one JSON value, spaces around it allowed,
// exactly as encoding/json's Valid does (nesting deeper than 10,000 is
// refused as it refuses it), at several times its speed: encoding/json's
// scanner calls a function per byte, and validating a large body was the
// largest part of reading it. FuzzValid checks that the two agree.
func Valid(data []byte) bool {
	v := validator{data: data}
	if !v.value() {
		return false
	}
	v.space()
	return v.i == len(v.data)
}

// maxDepth is encoding/json's nesting limit.
const maxDepth = 10000

type validator struct {
	data  []byte
	i     int
	depth int
}

func (v *validator) space() { v.i = skipSpace(v.data, v.i) }

// next skips spaces and reports whether the next byte is c, taking it.
func (v *validator) next(c byte) bool {
	v.space()
	if v.i < len(v.data) && v.data[v.i] == c {
		v.i++
		return true
	}
	return false
}

func (v *validator) value() bool {
	v.space()
	if v.i >= len(v.data) {
		return false
	}
	switch c := v.data[v.i]; {
	case c == '{':
		return v.container('}', func() bool {
			v.space()
			return v.string() && v.next(':') && v.value()
		})
	case c == '[':
		return v.container(']', v.value)
	case c == '"':
		return v.string()
	case c == 't':
		return v.literal("true")
	case c == 'f':
		return v.literal("false")
	case c == 'n':
		return v.literal("null")
	case c == '-' || '0' <= c && c <= '9':
		return v.number()
	}
	return false
}

// container checks an object or an array, whose members member checks.
func (v *validator) container(end byte, member func() bool) bool {
	v.depth++
	if v.depth > maxDepth {
		return false
	}
	v.i++ // the opening bracket
	if v.next(end) {
		v.depth--
		return true
	}
	for {
		if !member() {
			return false
		}
		if v.next(',') {
			continue
		}
		if v.next(end) {
			v.depth--
			return true
		}
		return false
	}
}

func (v *validator) literal(word string) bool {
	if len(v.data)-v.i < len(word) || string(v.data[v.i:v.i+len(word)]) != word {
		return false
	}
	v.i += len(word)
	return true
}

func (v *validator) string() bool {
	if v.i >= len(v.data) || v.data[v.i] != '"' {
		return false
	}
	v.i++
	for v.i < len(v.data) {
		c := v.data[v.i]
		switch {
		case c == '"':
			v.i++
			return true
		case c < 0x20:
			return false
		case c == '\\':
			if v.i+1 >= len(v.data) {
				return false
			}
			switch v.data[v.i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				v.i += 2
			case 'u':
				if len(v.data)-v.i < 6 {
					return false
				}
				for _, h := range v.data[v.i+2 : v.i+6] {
					if !('0' <= h && h <= '9' || 'a' <= h && h <= 'f' || 'A' <= h && h <= 'F') {
						return false
					}
				}
				v.i += 6
			default:
				return false
			}
		default:
			v.i++
		}
	}
	return false
}

func (v *validator) number() bool {
	if v.data[v.i] == '-' {
		v.i++
	}
	switch {
	case v.i < len(v.data) && v.data[v.i] == '0':
		v.i++
	case v.digits() == 0:
		return false
	}
	if v.i < len(v.data) && v.data[v.i] == '.' {
		v.i++
		if v.digits() == 0 {
			return false
		}
	}
	if v.i < len(v.data) && (v.data[v.i] == 'e' || v.data[v.i] == 'E') {
		v.i++
		if v.i < len(v.data) && (v.data[v.i] == '+' || v.data[v.i] == '-') {
			v.i++
		}
		if v.digits() == 0 {
			return false
		}
	}
	return true
}

// digits takes a run of digits and returns its length.
func (v *validator) digits() int {
	start := v.i
	for v.i < len(v.data) && '0' <= v.data[v.i] && v.data[v.i] <= '9' {
		v.i++
	}
	return v.i - start
}

// Compact appends valid JSON to dst without the spaces between its
// tokens, as json.Compact does for valid input.
func Compact(dst, valid []byte) []byte {
	for i := 0; i < len(valid); i++ {
		switch c := valid[i]; c {
		case ' ', '\t', '\n', '\r':
		case '"':
			start := i
			for i++; i < len(valid) && valid[i] != '"'; i++ {
				if valid[i] == '\\' {
					i++
				}
			}
			dst = append(dst, valid[start:min(i+1, len(valid))]...)
		default:
			dst = append(dst, c)
		}
	}
	return dst
}
