package upstream

import (
	"bytes"
	"compress/gzip"
	"compress/zlib"
	"encoding/base32"
	"encoding/base64"
	"encoding/hex"
	"html"
	"io"
	"regexp"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/toolshelf/toolshelf/internal/confusable"
)

// Beyond the forms a secret is matched in directly (secretforms.go), a
// text is decoded the ways a server could write a secret to get past the
// match, each in bounded time, and the decoded views are searched: percent
// encoding, HTML entities, JSON and JavaScript escapes, rot13, look-alike
// letters folded (Cyrillic, Greek, fullwidth), lists of character codes,
// base32, and base64 (of compressed data too, inflated within a bound). A
// text whose view holds a secret is cut whole: where the secret lies in
// the original cannot be told once it was decoded.
//
// What the wall cannot promise: a server that holds a secret can always
// write it in a form not listed here (encrypted with a key of its own,
// spelled out in words, one character a call). Containment, which keeps
// the secret out of the server's reach, is the defence; this wall catches
// what leaks by accident or by a known trick.

// What is inflated of compressed runs is bounded: one run up to
// maxInflated, all of a text's up to maxInflatedTotal. A run that inflates
// past them (a compression bomb, or more data than the wall reads) cannot
// be read whole, and the text that holds it is cut as if it held a secret.
const (
	maxInflated      = 1 << 20
	maxInflatedTotal = 8 << 20
)

var (
	percentRun = regexp.MustCompile(`(?:%[0-9A-Fa-f]{2})+`)
	escapeRun  = regexp.MustCompile(`\\(?:u[0-9A-Fa-f]{4}|x[0-9A-Fa-f]{2}|[0-7]{3})`)
	codeRun    = regexp.MustCompile(`\b\d{2,3}(?:\s*[,; ]\s*\d{2,3}){5,}\b`)
)

// runs calls f with each run of at least min bytes that in accepts: a
// byte loop, where a regular expression over a megabyte costs tens of
// milliseconds.
func runs(s string, min int, in func(c byte) bool, f func(run string)) {
	start := -1
	for i := 0; i <= len(s); i++ {
		if i < len(s) && in(s[i]) {
			if start < 0 {
				start = i
			}
			continue
		}
		if start >= 0 && i-start >= min {
			f(s[start:i])
		}
		start = -1
	}
}

func codeChar(c byte) bool {
	return c >= '0' && c <= '9' || c == ',' || c == ';' || c == ' ' || c == '\t' || c == '\n'
}

func base64Char(c byte) bool {
	return c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '+' || c == '/' || c == '_' || c == '-' || c == '='
}

func base32Char(c byte) bool {
	return c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '2' && c <= '7' || c == '='
}

// views calls visit with each decoded form of s worth searching for
// secrets (each differs from s) until visit says it found one. Every run
// is decoded, however many (the work is linear in s); undecided is a
// compressed run past the bounds on inflating, which could not be read.
func views(s string, visit func(v string) (found bool)) (undecided bool) {
	done := false
	add := func(v string) {
		if !done && v != "" && v != s {
			done = visit(v)
		}
	}
	// unescaped adds a view that undid an escaping (percent, HTML,
	// backslash escapes), and the views of it that a byte loop finds:
	// hex with separators inside a URL, tag characters percent-encoded.
	unescaped := func(v string) {
		add(v)
		if !done && v != s {
			plainViews(v, add)
		}
	}
	inflatedTotal := 0
	if strings.Contains(s, "%") {
		unescaped(percentRun.ReplaceAllStringFunc(s, func(run string) string {
			b := make([]byte, 0, len(run)/3)
			for i := 0; i+3 <= len(run); i += 3 {
				n, _ := strconv.ParseUint(run[i+1:i+3], 16, 8)
				b = append(b, byte(n))
			}
			return string(b)
		}))
	}
	if strings.Contains(s, "&") {
		unescaped(html.UnescapeString(s))
	}
	if strings.Contains(s, `\`) {
		unescaped(escapeRun.ReplaceAllStringFunc(s, func(e string) string {
			switch e[1] {
			case 'u':
				n, _ := strconv.ParseUint(e[2:], 16, 32)
				return string(rune(n))
			case 'x':
				n, _ := strconv.ParseUint(e[2:], 16, 8)
				return string(rune(n))
			}
			n, _ := strconv.ParseUint(e[1:], 8, 8)
			return string(rune(n))
		}))
	}
	// rot13 is matched as a form of each secret (forms), not as a view.
	plainViews(s, add)
	add(confusable.Fold(s))
	// Lists of codes are looked for only in runs of digits and
	// separators long enough to hold six (a byte loop first: the
	// expression over a whole answer is slow).
	var codes []string
	runs(s, 17, codeChar, func(run string) { codes = append(codes, codeRun.FindAllString(run, -1)...) })
	for _, run := range codes {
		var b strings.Builder
		for _, f := range strings.FieldsFunc(run, func(r rune) bool { return r == ',' || r == ';' || r == ' ' || r == '\t' || r == '\n' }) {
			if n, err := strconv.Atoi(f); err == nil && n >= 32 && n < 127 {
				b.WriteByte(byte(n))
			}
		}
		add(b.String())
	}
	runs(s, 16, base32Char, func(run string) {
		run = strings.TrimRight(run, "=")
		if done || len(run) < 16 || strings.ToUpper(run) != run && strings.ToLower(run) != run {
			return // base32 is of one case
		}
		run = strings.ToUpper(run)
		// A secret may begin at any of a quantum's eight characters.
		for k := 0; k < 8 && k < len(run); k++ {
			part := run[k:]
			// The longest prefix that ends a quantum or a valid part of one.
			for n := len(part) % 8; n == 1 || n == 3 || n == 6; n = len(part) % 8 {
				part = part[:len(part)-1]
			}
			if b, err := base32.StdEncoding.WithPadding(base32.NoPadding).DecodeString(part); err == nil {
				add(printable(b))
			}
		}
	})
	runs(s, 12, base64Char, func(run string) {
		if done {
			return
		}
		run = strings.TrimRight(run, "=")
		for _, enc := range []*base64.Encoding{base64.RawStdEncoding, base64.RawURLEncoding} {
			for k := 0; k < 4 && k < len(run); k++ {
				part := run[k:]
				if len(part)%4 == 1 {
					part = part[:len(part)-1]
				}
				b, err := enc.DecodeString(part)
				if err != nil {
					continue
				}
				if k == 0 {
					text, whole := inflated(b, max(0, min(maxInflated, maxInflatedTotal-inflatedTotal)))
					inflatedTotal += len(text)
					undecided = undecided || !whole
					add(text)
				}
				add(printable(b))
			}
		}
	})
	return undecided && !done
}

// plainViews adds the views of s that a byte loop finds: invisible
// characters a person does not see and a model still reads (Unicode tags,
// each ASCII letter + U+E0000, "ASCII smuggling", read as the letters
// they stand for; zero-width and other format characters dropped), and
// hex written with separators (de:ad:be:ef, 0xde, 0xad, \xde\xad) read
// as one run of hex and as the bytes it spells.
func plainViews(s string, add func(v string)) {
	if !isASCII(s) {
		add(visible(s))
	}
	runs(s, 2*minEncoded, hexSepChar, func(run string) {
		if h := hexDigits(run); h != "" {
			add(h)
			if b, err := hex.DecodeString(h[:len(h)&^1]); err == nil {
				add(printable(b))
			}
		}
	})
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// visible is s as a model reads it, with what a person does not see
// made plain: Unicode tag characters (U+E0020–U+E007E) as the ASCII
// they shadow, and format characters (zero-width spaces and joiners,
// the soft hyphen, bidirectional marks, variation selectors) dropped.
func visible(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r >= 0xE0020 && r <= 0xE007E:
			b.WriteByte(byte(r - 0xE0000))
		case r >= 0xE0000 && r <= 0xE007F, r >= 0xFE00 && r <= 0xFE0F, r >= 0xE0100 && r <= 0xE01EF, unicode.Is(unicode.Cf, r):
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

func hexSepChar(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' || c == ':' || c == '-' || c == ' ' || c == ',' || c == 'x' || c == 'X' || c == '\\' || c == '.' || c == '_'
}

// hexDigits is a run of hex written with separators or prefixes as one
// lower-case run of digits, "" when it is not one (hex without a
// separator is matched as a form of each secret).
func hexDigits(run string) string {
	var b strings.Builder
	seps := 0
	for i := 0; i < len(run); i++ {
		c := run[i]
		switch {
		case (c == '0' || c == '\\') && i+1 < len(run) && (run[i+1] == 'x' || run[i+1] == 'X'):
			i++
			seps++
		case c >= '0' && c <= '9' || c >= 'a' && c <= 'f':
			b.WriteByte(c)
		case c >= 'A' && c <= 'F':
			b.WriteByte(c + 'a' - 'A')
		default: // a separator, or an x of no prefix
			seps++
		}
	}
	if seps == 0 || b.Len() < 2*minEncoded {
		return ""
	}
	return b.String()
}

// inflated is b decompressed (gzip or zlib), within limit bytes; "" when
// it is neither. whole is false when there was more than limit.
func inflated(b []byte, limit int) (text string, whole bool) {
	var r io.Reader
	var err error
	switch {
	case len(b) > 2 && b[0] == 0x1f && b[1] == 0x8b:
		r, err = gzip.NewReader(bytes.NewReader(b))
	case len(b) > 2 && b[0] == 0x78 && (b[1] == 0x01 || b[1] == 0x5e || b[1] == 0x9c || b[1] == 0xda):
		r, err = zlib.NewReader(bytes.NewReader(b))
	default:
		return "", true
	}
	if err != nil {
		return "", true // not compressed after all: read as base64 alone
	}
	out, _ := io.ReadAll(io.LimitReader(r, int64(limit)+1))
	if len(out) > limit {
		return string(out[:limit]), false
	}
	return string(out), true
}

// printable is b as text when most of it is (a secret is), else "".
func printable(b []byte) string {
	if len(b) < minEncoded || !utf8.Valid(b) {
		return ""
	}
	n := 0
	for _, c := range b {
		if c >= 0x20 && c < 0x7f || c == '\n' || c == '\t' {
			n++
		}
	}
	if n*10 < len(b)*9 {
		return ""
	}
	return string(b)
}

// skeletonOf is skeleton without the positions.
func skeletonOf(s string) string {
	sk := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'A' && c <= 'Z':
			sk = append(sk, c+'a'-'A')
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
			sk = append(sk, c)
		}
	}
	return string(sk)
}

func rot13(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z':
			return 'a' + (r-'a'+13)%26
		case r >= 'A' && r <= 'Z':
			return 'A' + (r-'A'+13)%26
		}
		return r
	}, s)
}

// holdsEncoded reports whether a decoded view of s holds one of the
// redactor's secrets (in any of the forms cutTexts finds), or could not be
// read whole (a compressed run past the bounds): what cannot be decided
// is cut.
func (r *Redactor) holdsEncoded(s string) bool {
	if r == nil || len(r.secrets) == 0 {
		return false
	}
	found := false
	undecided := views(s, func(v string) bool {
		r.literalSet.find(v, func(int, int) { found = true })
		if !found && len(r.skeletons) > 0 && len(v) >= minSkeleton {
			r.skeletonSet.find(skeletonOf(v), func(int, int) { found = true })
		}
		return found
	})
	return found || undecided
}
