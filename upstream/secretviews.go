package upstream

import (
	"bytes"
	"compress/gzip"
	"compress/zlib"
	"encoding/base32"
	"encoding/base64"
	"html"
	"io"
	"regexp"
	"slices"
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

// codeList is a list of character codes: six or more numbers of two or
// three digits with separators.
var codeList = regexp.MustCompile(`\b\d{2,3}(?:\s*[,; ]\s*\d{2,3}){5,}\b`)

// text is what the views read: an answer's text, or a view of it.
type text interface{ string | []byte }

// The kinds of run one pass over a text finds, each byte classed once.
const (
	hexRun    uint8 = 1 << iota // hex digits with separators or prefixes
	codesRun                    // digits and separators (a list of codes)
	base32Run                   // base32's alphabet
	base64Run                   // base64's alphabets, standard and URL
)

var byteClass = func() (t [256]uint8) {
	for c := range 256 {
		b := byte(c)
		if b >= '0' && b <= '9' || b >= 'a' && b <= 'f' || b >= 'A' && b <= 'F' || strings.IndexByte(":- ,xX\\._", b) >= 0 {
			t[c] |= hexRun
		}
		if b >= '0' && b <= '9' || strings.IndexByte(",; \t\n", b) >= 0 {
			t[c] |= codesRun
		}
		letter := b >= 'A' && b <= 'Z' || b >= 'a' && b <= 'z'
		if letter || b >= '2' && b <= '7' {
			t[c] |= base32Run
		}
		if letter || b >= '0' && b <= '9' || strings.IndexByte("+/_-", b) >= 0 {
			t[c] |= base64Run
		}
	}
	return t
}()

// runsOf calls f with the start and end of each maximal run of each kind
// in want, in one pass over s.
func runsOf[T text](s T, want uint8, f func(kind uint8, start, end int)) {
	var start [4]int
	prev := uint8(0)
	for i := 0; i <= len(s); i++ {
		c := uint8(0)
		if i < len(s) {
			c = byteClass[s[i]] & want
		}
		if c == prev {
			continue
		}
		for k := range start {
			bit := uint8(1) << k
			switch {
			case c&bit != 0 && prev&bit == 0:
				start[k] = i
			case c&bit == 0 && prev&bit != 0:
				f(bit, start[k], i)
			}
		}
		prev = c
	}
}

// A viewer calls visit with each decoded view of a text worth searching
// for secrets, until visit says it found one. A run is decoded only when
// what it decodes to is long enough to hold a needle (shortest), into
// buffers the viewer reuses: a text costs an allocation for each
// whole-text view it needs (percent, HTML and backslash escapes,
// invisible or look-alike characters), not one for each run.
type viewer struct {
	shortest int
	visit    func(v []byte) (found bool)

	done      bool // visit found a secret
	undecided bool // a compressed run past the bounds could not be read
	inflated  int  // bytes inflated of all the text's runs
	run, dec  []byte
}

func (w *viewer) add(v []byte) {
	if !w.done && len(v) >= w.shortest {
		w.done = w.visit(v)
	}
}

// views reads s: the whole-text views of its escapings, then every run
// of s in one pass. Every run is decoded that can hold a secret, however
// many (the work is linear in s).
func (w *viewer) views(s string) {
	if strings.IndexByte(s, '%') >= 0 {
		w.unescaped(s, percentDecoded(s))
	}
	if strings.IndexByte(s, '&') >= 0 {
		w.unescaped(s, []byte(html.UnescapeString(s)))
	}
	if strings.IndexByte(s, '\\') >= 0 {
		w.unescaped(s, backslashDecoded(s))
	}
	// rot13 is matched as a form of each secret (forms), not as a view.
	if !isASCII(s) {
		if v := visible(s); string(v) != s {
			w.add(v)
		}
		if f := confusable.Fold(s); f != s {
			w.add([]byte(f))
		}
	}
	runsOf(s, hexRun|codesRun|base32Run|base64Run, func(kind uint8, start, end int) {
		if w.done || end-start < 12 {
			return // no kind of run this short is read
		}
		switch kind {
		case hexRun:
			readHex(w, s[start:end])
		case codesRun:
			readCodes(w, s[start:end])
		case base32Run:
			readBase32(w, s[start:end])
		case base64Run:
			readBase64(w, s[start:end])
		}
	})
}

// unescaped adds v, a view of s that undid an escaping, and the views of
// it a byte loop finds: hex with separators inside a URL, tag characters
// percent-encoded.
func (w *viewer) unescaped(s string, v []byte) {
	if w.done || string(v) == s {
		return
	}
	w.add(v)
	if !isASCII(v) {
		w.add(visible(v))
	}
	runsOf(v, hexRun, func(_ uint8, start, end int) {
		if !w.done && end-start >= 2*minEncoded {
			readHex(w, v[start:end])
		}
	})
}

// percentDecoded is s with every %XX decoded; other percent signs stay.
func percentDecoded(s string) []byte {
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]) {
			b = append(b, unhex(s[i+1])<<4|unhex(s[i+2]))
			i += 2
			continue
		}
		b = append(b, s[i])
	}
	return b
}

// backslashDecoded is s with its \uXXXX, \xXX and octal \ooo escapes
// decoded, each as the character it names.
func backslashDecoded(s string) []byte {
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			n, size := -1, 0
			switch rest := s[i+1:]; {
			case rest[0] == 'u' && len(rest) >= 5 && allHex(rest[1:5]):
				n, size = hexValue(rest[1:5]), 5
			case rest[0] == 'x' && len(rest) >= 3 && allHex(rest[1:3]):
				n, size = hexValue(rest[1:3]), 3
			case len(rest) >= 3 && isOctal(rest[0]) && isOctal(rest[1]) && isOctal(rest[2]):
				if v := int(rest[0]-'0')<<6 | int(rest[1]-'0')<<3 | int(rest[2]-'0'); v < 256 {
					n, size = v, 3
				}
			}
			if n >= 0 {
				b = utf8.AppendRune(b, rune(n))
				i += size
				continue
			}
		}
		b = append(b, s[i])
	}
	return b
}

func isHex(c byte) bool   { return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' }
func isOctal(c byte) bool { return c >= '0' && c <= '7' }

func unhex(c byte) byte {
	switch {
	case c >= 'a':
		return c - 'a' + 10
	case c >= 'A':
		return c - 'A' + 10
	}
	return c - '0'
}

func allHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if !isHex(s[i]) {
			return false
		}
	}
	return true
}

func hexValue(s string) int {
	n := 0
	for i := 0; i < len(s); i++ {
		n = n<<4 | int(unhex(s[i]))
	}
	return n
}

// readHex reads a run of hex written with separators or prefixes
// (de:ad:be:ef, 0xde, 0xad, \xde\xad) as one lower-case run of digits, and
// as the bytes it spells. Hex without a separator is matched as a form of
// each secret.
func readHex[T text](w *viewer, run T) {
	w.run = w.run[:0]
	seps := 0
	for i := 0; i < len(run); i++ {
		c := run[i]
		switch {
		case (c == '0' || c == '\\') && i+1 < len(run) && (run[i+1] == 'x' || run[i+1] == 'X'):
			i++
			seps++
		case c >= '0' && c <= '9' || c >= 'a' && c <= 'f':
			w.run = append(w.run, c)
		case c >= 'A' && c <= 'F':
			w.run = append(w.run, c+'a'-'A')
		default: // a separator, or an x of no prefix
			seps++
		}
	}
	if seps == 0 || len(w.run) < 2*minEncoded || len(w.run) < w.shortest {
		return
	}
	w.add(w.run)
	// The bytes it spells, from each of the two places a pair can start
	// (a word of hex letters before it shifts the pairs), printable or
	// not: a secret is found among bytes that are not text.
	for k := 0; k < 2 && !w.done; k++ {
		digits := w.run[k:]
		n := len(digits) / 2
		if n < w.shortest {
			return
		}
		w.dec = slices.Grow(w.dec[:0], n)[:n]
		for i := range n {
			w.dec[i] = unhex(digits[2*i])<<4 | unhex(digits[2*i+1])
		}
		w.add(w.dec)
	}
}

// readCodes reads a run of digits and separators as the characters its
// numbers name, where it holds a list of at least six and enough of them
// to spell a needle.
func readCodes[T text](w *viewer, run T) {
	if len(run) < max(17, 3*w.shortest-1) {
		return
	}
	w.run = append(w.run[:0], run...)
	for _, at := range codeList.FindAllIndex(w.run, -1) {
		w.dec = w.dec[:0]
		n, digits := 0, 0
		for _, c := range w.run[at[0]:at[1]] {
			if c >= '0' && c <= '9' {
				n, digits = n*10+int(c-'0'), digits+1
				continue
			}
			if digits > 0 && n >= 32 && n < 127 {
				w.dec = append(w.dec, byte(n))
			}
			n, digits = 0, 0
		}
		if digits > 0 && n >= 32 && n < 127 {
			w.dec = append(w.dec, byte(n))
		}
		w.add(w.dec)
	}
}

var base32NoPad = base32.StdEncoding.WithPadding(base32.NoPadding)

// readBase32 decodes a run of one case at each of a quantum's eight places a
// secret may begin at.
func readBase32[T text](w *viewer, run T) {
	if len(run) < max(16, (8*w.shortest+4)/5) {
		return
	}
	upper, lower := false, false
	w.run = w.run[:0]
	for i := 0; i < len(run); i++ {
		c := run[i]
		switch {
		case c >= 'a' && c <= 'z':
			lower = true
			c -= 'a' - 'A'
		case c >= 'A' && c <= 'Z':
			upper = true
		}
		w.run = append(w.run, c)
	}
	if upper && lower {
		return // base32 is of one case
	}
	for k := 0; k < 8 && !w.done; k++ {
		part := w.run[k:]
		// The longest prefix that ends a quantum or a valid part of one.
		for n := len(part) % 8; n == 1 || n == 3 || n == 6; n = len(part) % 8 {
			part = part[:len(part)-1]
		}
		if len(part)*5/8 < w.shortest {
			break
		}
		w.dec = slices.Grow(w.dec[:0], base32NoPad.DecodedLen(len(part)))[:base32NoPad.DecodedLen(len(part))]
		if n, err := base32NoPad.Decode(w.dec, part); err == nil {
			w.add(printable(w.dec[:n]))
		}
	}
}

// readBase64 decodes a run at each of a quantum's four places a secret may
// begin at, in the one alphabet its characters allow; a run that starts
// as gzip or zlib data is inflated (within the bounds), however short.
func readBase64[T text](w *viewer, run T) {
	if len(run) < 12 {
		return
	}
	std, url := false, false
	for i := 0; i < len(run); i++ {
		switch run[i] {
		case '+', '/':
			std = true
		case '-', '_':
			url = true
		}
	}
	enc := base64.RawStdEncoding
	switch {
	case std && url:
		return // neither alphabet reads it
	case url:
		enc = base64.RawURLEncoding
	}
	w.run = append(w.run[:0], run...)
	var head [3]byte
	if _, err := enc.Decode(head[:], w.run[:4]); err == nil && compressed(head[:]) {
		part := w.run
		if len(part)%4 == 1 {
			part = part[:len(part)-1]
		}
		if b, err := enc.DecodeString(string(part)); err == nil {
			text, whole := inflated(b, max(0, min(maxInflated, maxInflatedTotal-w.inflated)))
			w.inflated += len(text)
			w.undecided = w.undecided || !whole
			w.add([]byte(text))
		}
	}
	for k := 0; k < 4 && !w.done; k++ {
		part := w.run[k:]
		if len(part)%4 == 1 {
			part = part[:len(part)-1]
		}
		if len(part)*3/4 < w.shortest {
			break
		}
		w.dec = slices.Grow(w.dec[:0], enc.DecodedLen(len(part)))[:enc.DecodedLen(len(part))]
		if n, err := enc.Decode(w.dec, part); err == nil {
			w.add(printable(w.dec[:n]))
		}
	}
}

func compressed(b []byte) bool {
	return len(b) > 2 && b[0] == 0x1f && b[1] == 0x8b ||
		len(b) > 2 && b[0] == 0x78 && (b[1] == 0x01 || b[1] == 0x5e || b[1] == 0x9c || b[1] == 0xda)
}

func isASCII[T text](s T) bool {
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
func visible[T text](s T) []byte {
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(string(s[i:min(i+utf8.UTFMax, len(s))]))
		i += size
		switch {
		case r >= 0xE0020 && r <= 0xE007E:
			b = append(b, byte(r-0xE0000))
		case r >= 0xE0000 && r <= 0xE007F, r >= 0xFE00 && r <= 0xFE0F, r >= 0xE0100 && r <= 0xE01EF, unicode.Is(unicode.Cf, r):
		default:
			b = utf8.AppendRune(b, r)
		}
	}
	return b
}

// inflated is b decompressed (gzip or zlib), within limit bytes; "" when
// it is neither. whole is false when there was more than limit.
func inflated(b []byte, limit int) (text string, whole bool) {
	var r io.Reader
	var err error
	switch {
	case !compressed(b):
		return "", true
	case b[0] == 0x1f:
		r, err = gzip.NewReader(bytes.NewReader(b))
	default:
		r, err = zlib.NewReader(bytes.NewReader(b))
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

// printable is b when most of it is text (a secret is), else nil.
func printable(b []byte) []byte {
	if len(b) < minEncoded || !utf8.Valid(b) {
		return nil
	}
	n := 0
	for _, c := range b {
		if c >= 0x20 && c < 0x7f || c == '\n' || c == '\t' {
			n++
		}
	}
	if n*10 < len(b)*9 {
		return nil
	}
	return b
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
	var sk []byte
	hit := false
	found := func(int, int) { hit = true }
	w := viewer{shortest: r.shortest}
	w.visit = func(v []byte) bool {
		findIn(r.literalSet, v, found)
		if !hit && len(r.skeletons) > 0 && len(v) >= minSkeleton {
			sk = appendSkeleton(sk[:0], v)
			findIn(r.skeletonSet, sk, found)
		}
		return hit
	}
	w.views(s)
	return w.done || w.undecided
}
