package search

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// Tokenize splits text into lower-case search tokens.
//
// The text is NFKD-normalised and combining marks are dropped, so "café"
// and "cafe" are the same token. Every character that is not a letter or a
// digit separates tokens. Inside a run of letters and digits, identifier
// boundaries split too: lower to upper ("listIssues" → list, issues),
// the end of an acronym ("MCPTool" → mcp, tool) and digit to upper
// ("v2Beta" → v2, beta). Letters followed by digits stay together, so
// "s3", "ec2" and "base64" survive as tokens.
func Tokenize(text string) []string {
	return appendTokens(nil, text)
}

// appendTokens appends the tokens of text to dst.
func appendTokens(dst []string, text string) []string {
	n := len(dst)
	if scanASCII(text, func(start, end int) { dst = append(dst, lower(text[start:end])) }) {
		return dst
	}
	dst = dst[:n]
	text = foldMarks(text)
	scanTokens(text, func(start, end int) { dst = append(dst, lower(text[start:end])) })
	return dst
}

// Byte classes of ASCII text, for scanASCII.
const (
	other = iota
	lowerLetter
	upperLetter
	digit
)

var asciiClass = func() (t [128]uint8) {
	for c := 'a'; c <= 'z'; c++ {
		t[c] = lowerLetter
	}
	for c := 'A'; c <= 'Z'; c++ {
		t[c] = upperLetter
	}
	for c := '0'; c <= '9'; c++ {
		t[c] = digit
	}
	return t
}()

// scanASCII is scanTokens for ASCII text, a byte at a time: most tool
// text is ASCII, and indexing spends its time here. It stops and returns
// false at the first byte that is not ASCII, having reported the tokens
// before it; the caller starts over with scanTokens.
func scanASCII(text string, token func(start, end int)) bool {
	start := -1
	prev := uint8(other)
	for i := 0; i < len(text); i++ {
		b := text[i]
		if b >= utf8.RuneSelf {
			return false
		}
		c := asciiClass[b]
		if c == other {
			if start >= 0 {
				token(start, i)
				start = -1
			}
			prev = other
			continue
		}
		if start >= 0 && c == upperLetter {
			// camelCase, v2Beta; and the end of an acronym: the upper-case
			// letter before a lower-case one starts a word (MCPTool).
			if prev == lowerLetter || prev == digit ||
				prev == upperLetter && i+1 < len(text) && text[i+1] < utf8.RuneSelf && asciiClass[text[i+1]] == lowerLetter {
				token(start, i)
				start = -1
			}
		}
		if start < 0 {
			start = i
		}
		prev = c
	}
	if start >= 0 {
		token(start, len(text))
	}
	return true
}

// scanTokens calls token with the bounds of each token of text, which is
// already folded: runs of letters and digits, split at camelCase and
// acronym boundaries. Chinese, Japanese and Korean are written without
// spaces between words: a run of their characters gives its overlapping
// pairs of characters (東京都 → 東京, 京都), as Lucene's CJK analyzer
// does, and a character on its own gives itself. A query and a tool that
// share a word then share its pairs.
func scanTokens(text string, token func(start, end int)) {
	start := -1 // start of the current token in text, or -1
	var prev rune
	flush := func(end int) {
		if start >= 0 && end > start {
			token(start, end)
		}
		start = -1
	}
	// The CJK run being read: the last character's bounds, and how many
	// characters the run has had.
	cjkAt, cjkEnd, cjkRun := 0, 0, 0
	endRun := func() {
		if cjkRun == 1 {
			token(cjkAt, cjkEnd)
		}
		cjkRun = 0
	}
	for i, r := range text {
		if isCJK(r) {
			flush(i)
			end := i + utf8.RuneLen(r)
			if cjkRun > 0 {
				token(cjkAt, end)
			}
			cjkAt, cjkEnd = i, end
			cjkRun++
			prev = 0
			continue
		}
		if cjkRun > 0 {
			endRun()
		}
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			flush(i)
			prev = 0
			continue
		}
		if start >= 0 && boundary(prev, r, text[i+utf8.RuneLen(r):]) {
			flush(i)
		}
		if start < 0 {
			start = i
		}
		prev = r
	}
	endRun()
	flush(len(text))
}

// isCJK reports the characters of scripts written without spaces between
// words, which scanTokens splits into pairs: Han, Hiragana, Katakana
// (with its long-vowel mark) and Hangul.
func isCJK(r rune) bool {
	if r < 0x1100 {
		return false
	}
	return unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Hangul) || r == 0x30FC
}

// boundary reports whether a token ends between prev and r, where rest is
// the text after r.
func boundary(prev, r rune, rest string) bool {
	if !unicode.IsUpper(r) {
		return false
	}
	switch {
	case unicode.IsLower(prev), unicode.IsDigit(prev):
		return true // camelCase, v2Beta
	case unicode.IsUpper(prev):
		// End of an acronym: the upper-case letter before a lower-case one
		// starts a new word (MCPTool → MCP Tool).
		next, _ := utf8.DecodeRuneInString(rest)
		return unicode.IsLower(next)
	}
	return false
}

// foldMarks applies NFKD and drops combining marks. Hangul, which NFKD
// splits into its letters (jamo), is put back together into syllables.
func foldMarks(s string) string {
	s = norm.NFKD.String(s)
	jamo := false
	s = strings.Map(func(r rune) rune {
		if unicode.Is(unicode.Mn, r) {
			return -1
		}
		jamo = jamo || (r >= 0x1100 && r <= 0x11FF)
		return r
	}, s)
	if jamo {
		s = norm.NFC.String(s)
	}
	return s
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// lower is strings.ToLower without an allocation for tokens that are
// already lower case, which most are.
func lower(s string) string {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= utf8.RuneSelf || ('A' <= c && c <= 'Z') {
			return strings.ToLower(s)
		}
	}
	return s
}

// hasLetterOrDigit reports whether s contains a letter or a digit.
func hasLetterOrDigit(s string) bool {
	for _, r := range s {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			return true
		}
	}
	return false
}
