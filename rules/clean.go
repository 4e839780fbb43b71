package rules

import (
	"fmt"
	"path"
	"strings"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// context.clean is the arguments with every string that names a path or
// a URL in one canonical form, the form a rule tests paths in. It is read
// as the most lenient server would read the string, and what cannot be
// read so is refused, never passed as it came:
//
//   - compatibility forms folded (NFKC): a fullwidth solidus or full
//     stop is the ASCII one;
//   - "\" and the other slashes (U+2215, U+2044, U+29F8, U+2216, U+FE68)
//     are separators, "/";
//   - percent-escapes undone, up to maxDecodes times (a double encoding
//     is a rewording too); an escape that does not decode ("%zz", "%")
//     in a string that holds a separator refuses the call, and so does
//     one still there after maxDecodes rounds;
//   - a URL keeps its scheme and host (lower-cased) and its query; its
//     path is cleaned. A file URL in any case or form (file:///x,
//     FILE://host/x, file:/x) is its path;
//   - a path is cleaned: "..", "." and repeated separators resolved
//     ("/srv/ci/../../etc" is "/etc"), no trailing separator.
//
// A string with no separator is left as it is.

// maxDecodes bounds the rounds of percent-decoding.
const maxDecodes = 3

// separators are the characters a lenient reader takes for "/", beside
// it, after NFKC.
var separators = strings.NewReplacer(`\`, "/", "\u2215", "/", "\u2044", "/", "\u29f8", "/", "\u2216", "/", "\ufe68", "/")

// cleanValue is s in context.clean's form, or an *ArgsError saying why
// it has none.
func cleanValue(s string) (string, error) {
	if !strings.ContainsAny(s, "%/\\") && s == norm.NFKC.String(s) && s == separators.Replace(s) {
		return s, nil // no separator, no escape: a plain word
	}
	v := separators.Replace(norm.NFKC.String(s))
	for round := 0; strings.Contains(v, "%"); round++ {
		decoded, complete := percentDecode(v)
		if !complete {
			if !strings.Contains(decoded, "/") {
				return s, nil // "100% sure": no path, no escape to read
			}
			return "", &ArgsError{Reason: fmt.Sprintf("%q holds a percent sign that is no escape, which servers read differently", clipArg(s))}
		}
		if decoded == v {
			break
		}
		if round == maxDecodes {
			return "", &ArgsError{Reason: fmt.Sprintf("%q is still percent-encoded after %d decodings", clipArg(s), maxDecodes)}
		}
		v = separators.Replace(norm.NFKC.String(decoded))
	}
	if !strings.Contains(v, "/") {
		return v, nil
	}
	if scheme, rest, ok := urlParts(v); ok {
		if scheme == "file" {
			return fileURLPath(rest), nil
		}
		if strings.HasPrefix(rest, "//") {
			return cleanURL(scheme, rest[2:]), nil
		}
	}
	return cleanSlashPath(v), nil
}

// percentDecode undoes every %XX escape of s; complete is false when a
// "%" is not the start of one (it is kept as it is).
func percentDecode(s string) (out string, complete bool) {
	var b strings.Builder
	complete = true
	for i := 0; i < len(s); i++ {
		if s[i] == '%' {
			if i+2 < len(s) && unhex(s[i+1]) >= 0 && unhex(s[i+2]) >= 0 {
				b.WriteByte(byte(unhex(s[i+1])<<4 | unhex(s[i+2])))
				i += 2
				continue
			}
			complete = false
		}
		b.WriteByte(s[i])
	}
	out = b.String()
	if !utf8.ValidString(out) {
		out = strings.ToValidUTF8(out, "\ufffd")
	}
	return out, complete
}

func unhex(c byte) int {
	switch {
	case '0' <= c && c <= '9':
		return int(c - '0')
	case 'a' <= c && c <= 'f':
		return int(c-'a') + 10
	case 'A' <= c && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}

// urlParts splits "scheme:rest" where scheme is a URL scheme (a letter,
// then letters, digits, "+", "-" or "."; more than one character, so
// that a drive letter "C:/x" is a path), lower-cased.
func urlParts(s string) (scheme, rest string, ok bool) {
	i := strings.IndexByte(s, ':')
	if i < 2 {
		return "", "", false
	}
	for j := 0; j < i; j++ {
		c := s[j]
		letter := 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
		if !letter && (j == 0 || !('0' <= c && c <= '9' || c == '+' || c == '-' || c == '.')) {
			return "", "", false
		}
	}
	return strings.ToLower(s[:i]), s[i+1:], true
}

// fileURLPath is a file URL's path: file:///x, file://host/x and file:/x
// are /x; file:x is x.
func fileURLPath(rest string) string {
	if after, ok := strings.CutPrefix(rest, "//"); ok {
		if i := strings.IndexByte(after, '/'); i >= 0 {
			rest = after[i:] // the host, if any, goes
		} else {
			rest = "/"
		}
	}
	rest, _, _ = strings.Cut(rest, "?")
	rest, _, _ = strings.Cut(rest, "#")
	return cleanSlashPath(rest)
}

// cleanURL is scheme://authority/path?query with the scheme and host
// lower-cased, the path cleaned, the query and fragment kept.
func cleanURL(scheme, rest string) string {
	authority, p := rest, ""
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		authority, p = rest[:i], rest[i:]
	}
	tail := ""
	if i := strings.IndexAny(p, "?#"); i >= 0 {
		p, tail = p[:i], p[i:]
	}
	if p != "" {
		p = cleanSlashPath(p)
	}
	if p == "/" && tail == "" {
		p = "/"
	}
	return scheme + "://" + strings.ToLower(authority) + p + tail
}

// cleanSlashPath is path.Clean of a path that holds a separator.
func cleanSlashPath(p string) string {
	if p == "" {
		return ""
	}
	return path.Clean(p)
}

// clipArg cuts an argument for a message.
func clipArg(s string) string {
	if len(s) <= 80 {
		return s
	}
	i := 80
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + "…"
}
