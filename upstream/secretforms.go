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
	return out
}

// skeleton is a text's letters and digits, lowercased, with the index in
// the text of each.
func skeleton(s string) (sk []byte, at []int) {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'A' && c <= 'Z':
			c += 'a' - 'A'
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
		default:
			continue
		}
		sk = append(sk, c)
		at = append(at, i)
	}
	return sk, at
}

// cutTexts replaces every form of the redactor's secrets in texts, read
// as one text (the blocks of one answer), with Redacted: a secret split
// over two blocks is cut from both.
func (r *Redactor) cutTexts(texts []string) []string {
	if r == nil || len(r.secrets) == 0 {
		return texts
	}
	joined := strings.Join(texts, "")
	var spans [][2]int
	for _, f := range r.literal {
		for i := 0; ; {
			j := strings.Index(joined[i:], f)
			if j < 0 {
				break
			}
			spans = append(spans, [2]int{i + j, i + j + len(f)})
			i += j + 1
		}
	}
	if len(r.skeletons) > 0 {
		sk, at := skeleton(joined)
		for _, f := range r.skeletons {
			for i := 0; ; {
				j := strings.Index(string(sk[i:]), f)
				if j < 0 {
					break
				}
				spans = append(spans, [2]int{at[i+j], at[i+j+len(f)-1] + 1})
				i += j + 1
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
