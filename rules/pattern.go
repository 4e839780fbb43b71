package rules

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/cedar-policy/cedar-go/x/exp/ast"
	"golang.org/x/text/unicode/norm"
)

// likePattern checks a like's pattern against what it is matched with.
// On context.clean a pattern that no cleaned value can match (a "\",
// "/./", "/../", "//" but after a URL's scheme, a trailing "/", a
// percent-escape, a fullwidth form, an upper-case URL scheme) is an
// error: the rule would never apply, and a forbid that never applies
// passes everything. On context.args a pattern with a "/" is a warning:
// the raw argument is compared as the client wrote it, and
// "/srv/ci/../../etc" matches "/srv/ci/*"; context.clean is what paths
// are tested on.
func likePattern(n ast.NodeTypeLike) (warning string, err error) {
	onClean, onArgs := under(n.Arg, "clean"), under(n.Arg, "args")
	if !onClean && !onArgs {
		return "", nil
	}
	lit := patternText(n)
	if onArgs {
		if strings.ContainsAny(lit, `/\`) {
			return fmt.Sprintf("%s like %q compares the argument as the client wrote it (\"/srv/ci/../../etc\" matches \"/srv/ci/*\"): test paths on context.clean", describe(n.Arg), lit), nil
		}
		return "", nil
	}
	if why := neverClean(lit); why != "" {
		return "", fmt.Errorf("%s like %q can never match: %s", describe(n.Arg), lit, why)
	}
	return "", nil
}

// under reports whether n reads context.<attr> or below it.
func under(n ast.IsNode, attr string) bool {
	for {
		a, ok := n.(ast.NodeTypeAccess)
		if !ok {
			return false
		}
		if isVar(a.Arg, "context") {
			return string(a.Value) == attr
		}
		n = a.Arg
	}
}

// patternText is a pattern's text, each wildcard as "*".
func patternText(n ast.NodeTypeLike) string {
	b, err := n.Value.MarshalJSON()
	if err != nil {
		return ""
	}
	var comps []json.RawMessage
	json.Unmarshal(b, &comps)
	var out strings.Builder
	for _, c := range comps {
		var lit struct{ Literal string }
		if json.Unmarshal(c, &lit) == nil && lit.Literal != "" {
			out.WriteString(lit.Literal)
		} else {
			out.WriteByte('*')
		}
	}
	return out.String()
}

var (
	escapeRe  = regexp.MustCompile(`%[0-9A-Fa-f]{2}`)
	schemeRe  = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]+://`)
	dotSegRe  = regexp.MustCompile(`(^|/)\.\.?(/|$)`)
	doubleSep = regexp.MustCompile(`//`)
)

// neverClean says why no value of context.clean can hold the pattern's
// text, or "".
func neverClean(lit string) string {
	body := lit
	if m := schemeRe.FindString(lit); m != "" {
		if m != strings.ToLower(m) {
			return "a URL's scheme is lower case in context.clean"
		}
		body = lit[len(m):]
	}
	switch {
	case strings.ContainsAny(lit, "\\\u2215\u2044\u29f8\u2216\ufe68"):
		return `every slash is "/" in context.clean`
	case norm.NFKC.String(lit) != lit:
		return "context.clean holds no fullwidth or other compatibility form (it is NFKC)"
	case escapeRe.MatchString(lit):
		return "percent-escapes are decoded in context.clean"
	case !strings.Contains(lit, "/"):
		return ""
	case doubleSep.MatchString(body) && !strings.Contains(body, "?"):
		return `a path in context.clean has no "//" (but after a URL's scheme)`
	case dotSegRe.MatchString(strings.ReplaceAll(body, "*", "x")) && !strings.Contains(body, "?"):
		return `a path in context.clean has no "." or ".." segment`
	case strings.HasSuffix(lit, "/") && lit != "/" && !strings.HasSuffix(body, "://"):
		return `a path in context.clean has no trailing "/" (write "/srv/ci/*", or "/srv/ci" for the folder itself)`
	}
	return ""
}
