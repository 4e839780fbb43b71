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
	if !isASCII(text) {
		text = foldMarks(text)
	}
	start := -1 // start of the current token in text, or -1
	var prev rune
	flush := func(end int) {
		if start >= 0 && end > start {
			dst = append(dst, lower(text[start:end]))
		}
		start = -1
	}
	for i, r := range text {
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
	flush(len(text))
	return dst
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

// foldMarks applies NFKD and drops combining marks.
func foldMarks(s string) string {
	s = norm.NFKD.String(s)
	return strings.Map(func(r rune) rune {
		if unicode.Is(unicode.Mn, r) {
			return -1
		}
		return r
	}, s)
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
