package upstream

import (
	"encoding/base64"
	"encoding/hex"
	"slices"
	"strings"
	"unicode/utf8"
)

// A server that holds a secret (or a program that rebuilt one) can write
// it in another form to get past a literal match: base64, hex, reversed,
// or with spaces, dashes or line breaks between its characters, or split
// over two content blocks. Containment keeps secrets out of a server's
// reach in the first place; these forms are the second wall, for an
// uncontained server and for secrets a server was given itself.

// minSkeleton is the shortest secret matched by its letters and digits
// alone: shorter ones would match ordinary words run together.
const minSkeleton = 12

// minEncoded is the shortest encoded core matched.
const minEncoded = 8

// forms returns the literal forms of a secret besides itself: its
// base64 (standard and URL alphabets, at each of the three alignments it
// can have inside a longer encoded text, without the characters that
// depend on its neighbours), its hex in both cases, and its reverse.
func forms(secret string) []string {
	b := []byte(secret)
	var out []string
	add := func(f string) {
		if len(f) >= minEncoded && f != secret && !slices.Contains(out, f) {
			out = append(out, f)
		}
	}
	for k := range 3 {
		padded := append(make([]byte, k), b...)
		lo, hi := (8*k+5)/6, (8*k+8*len(b))/6
		for _, enc := range []*base64.Encoding{base64.RawStdEncoding, base64.RawURLEncoding} {
			if e := enc.EncodeToString(padded); hi <= len(e) && lo < hi {
				add(e[lo:hi])
			}
		}
	}
	add(hex.EncodeToString(b))
	add(strings.ToUpper(hex.EncodeToString(b)))
	if utf8.ValidString(secret) {
		r := []rune(secret)
		slices.Reverse(r)
		add(string(r))
	}
	add(rot13(secret))
	return out
}

// skeleton is a text's letters and digits, lower-cased.
func skeleton[T text](s T) []byte {
	return appendSkeleton(make([]byte, 0, len(s)), s)
}

// appendSkeleton appends the letters and digits of s, lower-cased, to dst.
func appendSkeleton[T text](dst []byte, s T) []byte {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= 'A' && c <= 'Z':
			dst = append(dst, c+'a'-'A')
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
			dst = append(dst, c)
		}
	}
	return dst
}

// skeletonAt is the index in s of each byte of its skeleton.
func skeletonAt(s string) []int {
	at := make([]int, 0, len(s))
	for i := 0; i < len(s); i++ {
		if c := s[i] | 0x20; c >= 'a' && c <= 'z' || s[i] >= '0' && s[i] <= '9' {
			at = append(at, i)
		}
	}
	return at
}

// cutTexts replaces every form of the redactor's secrets in texts, read
// as one text (the blocks of one answer), with Redacted: a secret split
// over two blocks is cut from both.
func (r *Redactor) cutTexts(texts []string) []string {
	if r == nil || len(r.secrets) == 0 {
		return texts
	}
	out := r.cutLiteral(texts)
	// A block a decoded view of which holds a secret is cut whole.
	for i, t := range out {
		if r.holdsEncoded(t) {
			out[i] = Redacted
		}
	}
	return out
}

// cutLiteral replaces the forms of the redactor's secrets that are
// matched in the text itself (see forms and skeleton).
func (r *Redactor) cutLiteral(texts []string) []string {
	joined := strings.Join(texts, "")
	var spans [][2]int
	findIn(r.literalSet, joined, func(start, end int) { spans = append(spans, [2]int{start, end}) })
	if len(r.skeletons) > 0 {
		// Where a match lies in the text is worked out only for a text
		// that holds one.
		var hits [][2]int
		findIn(r.skeletonSet, skeleton(joined), func(start, end int) { hits = append(hits, [2]int{start, end}) })
		if len(hits) > 0 {
			at := skeletonAt(joined)
			for _, h := range hits {
				spans = append(spans, [2]int{at[h[0]], at[h[1]-1] + 1})
			}
		}
	}
	if len(spans) == 0 {
		return texts
	}
	slices.SortFunc(spans, func(a, b [2]int) int { return a[0] - b[0] })
	merged := spans[:1]
	for _, s := range spans[1:] {
		if last := &merged[len(merged)-1]; s[0] <= last[1] {
			last[1] = max(last[1], s[1])
		} else {
			merged = append(merged, s)
		}
	}
	out := make([]string, len(texts))
	base := 0
	for i, t := range texts {
		end := base + len(t)
		var b strings.Builder
		pos := base
		for _, s := range merged {
			if s[1] <= pos || s[0] >= end {
				continue
			}
			b.WriteString(joined[pos:max(pos, s[0])])
			b.WriteString(Redacted)
			pos = min(s[1], end)
		}
		b.WriteString(joined[pos:end])
		out[i] = b.String()
		base = end
	}
	return out
}

// patterns finds many strings of at least four bytes in a text in one
// pass: each is filed under its first four bytes, so a position costs a
// bit test on its first two (most fail there) and then a map lookup, not
// a comparison with every pattern (40 secrets have some 400 forms).
type patterns struct {
	by4 map[uint32][]string
	two *[1 << 13]byte // a bit for each first two bytes in use
}

func newPatterns(list []string) patterns {
	p := patterns{by4: map[uint32][]string{}, two: new([1 << 13]byte)}
	for _, s := range list {
		if len(s) >= 4 {
			k := key4(s)
			p.by4[k] = append(p.by4[k], s)
			b := uint16(k)
			p.two[b>>3] |= 1 << (b & 7)
		}
	}
	return p
}

func key4[T text](s T) uint32 {
	return uint32(s[0]) | uint32(s[1])<<8 | uint32(s[2])<<16 | uint32(s[3])<<24
}

// findIn calls found with the start and end of every match of p in text.
func findIn[T text](p patterns, text T, found func(start, end int)) {
	if len(p.by4) == 0 {
		return
	}
	for i := 0; i+4 <= len(text); i++ {
		b := uint16(text[i]) | uint16(text[i+1])<<8
		if p.two[b>>3]&(1<<(b&7)) == 0 {
			continue
		}
		for _, s := range p.by4[key4(text[i:])] {
			if len(text)-i >= len(s) && string(text[i:i+len(s)]) == s {
				found(i, i+len(s))
			}
		}
	}
}
