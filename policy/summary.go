package policy

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"unicode"

	"github.com/toolshelf/toolshelf/catalog"
)

// Budgets of the servers' summaries, in cl100k tokens: what a model is
// told is behind the search tool. Without it the model does not know what
// it could find, and often does not search at all.
const (
	SummaryServerTokens = 25
	SummaryTotalTokens  = 600
)

// Summaries returns one line per server of the catalog saying what its
// tools do, largest servers first, within SummaryServerTokens a line and
// SummaryTotalTokens in all; the servers past the budget are named on a
// last line ("and N more: ..."). A summary comes from the server's
// description, else from the first sentence of its instructions when that
// sentence describes the server, else from the words of its tools'
// names. Tools without a server are left out.
func Summaries(c *catalog.Catalog) []string {
	type srv struct {
		name  string
		tools []*catalog.Entry
		info  catalog.Server
	}
	by := map[string]*srv{}
	var order []*srv
	for e := range c.All() {
		if e.Server == "" {
			continue
		}
		s := by[e.Server]
		if s == nil {
			s = &srv{name: e.Server}
			s.info, _ = c.Server(e.Server)
			by[e.Server] = s
			order = append(order, s)
		}
		s.tools = append(s.tools, e)
	}
	slices.SortStableFunc(order, func(a, b *srv) int {
		if n := cmp.Compare(len(b.tools), len(a.tools)); n != 0 {
			return n
		}
		return strings.Compare(a.name, b.name)
	})
	names := make([]string, len(order))
	for i, s := range order {
		names[i] = s.name
	}
	// The line naming the servers from k on costs about its head and each
	// name's tokens: counted once, not once for every k.
	restTokens := make([]int, len(order)+1)
	for k := len(order) - 1; k >= 0; k-- {
		restTokens[k] = restTokens[k+1] + tokens(", "+names[k])
	}
	more := func(k int) int {
		if k == len(order) {
			return 0
		}
		return tokens(fmt.Sprintf("and %d more: ", len(order)-k)) + restTokens[k]
	}
	var lines []string
	total := 0
	for k, s := range order {
		line := summaryLine(s.name, s.info, s.tools)
		n := tokens(line)
		// Keep room for the last line naming the servers left out.
		if total+n+more(k+1) > SummaryTotalTokens && k > 0 {
			return append(lines, moreLine(names[k:]))
		}
		lines = append(lines, line)
		total += n
	}
	return lines
}

// moreLine names the servers that did not fit.
func moreLine(names []string) string {
	return fmt.Sprintf("and %d more: %s", len(names), strings.Join(names, ", "))
}

// tokens counts cl100k tokens, or estimates them from the length when the
// tokenizer cannot be loaded.
func tokens(s string) int {
	n, err := CL100K(s)
	if err != nil {
		return len(s)/4 + 1
	}
	return n
}

// summaryLine is "name (N tools): what they do", cut to the budget.
func summaryLine(name string, info catalog.Server, tools []*catalog.Entry) string {
	head := fmt.Sprintf("%s (%d tools): ", name, len(tools))
	if len(tools) == 1 {
		head = fmt.Sprintf("%s (1 tool): ", name)
	}
	var words []string
	if text := describing(info); text != "" {
		words = strings.Fields(text)
	} else if len(tools) <= 2 {
		// Too few names to say much: the first tool's own words.
		words = strings.Fields(firstSentence(strings.TrimSpace(tools[0].Description)))
	} else {
		terms := toolTerms(name, tools)
		for i, t := range terms {
			if i < len(terms)-1 {
				t += ","
			}
			words = append(words, t)
		}
	}
	line := head
	for i, w := range words {
		next := line + w
		if i < len(words)-1 {
			next += " "
		}
		if tokens(next) > SummaryServerTokens {
			return strings.TrimRight(strings.TrimSpace(line), ",") + " …"
		}
		line = next
	}
	return strings.TrimSpace(line)
}

// describing returns the server's description, or the first sentence of
// its instructions when it says what the server is for rather than
// introducing rules ("Usage rules:") or a heading ("# Server").
func describing(info catalog.Server) string {
	if d := strings.TrimSpace(info.Description); d != "" {
		return firstSentence(d)
	}
	s := firstSentence(strings.TrimSpace(info.Instructions))
	if s == "" || strings.HasPrefix(s, "#") || strings.HasSuffix(s, ":") {
		return ""
	}
	return s
}

// firstSentence returns text up to its first sentence end or line break.
func firstSentence(text string) string {
	if i := strings.IndexByte(text, '\n'); i >= 0 {
		text = text[:i]
	}
	for i := 0; i+1 < len(text); i++ {
		if (text[i] == '.' || text[i] == '!' || text[i] == '?') && text[i+1] == ' ' {
			return text[:i+1]
		}
	}
	return strings.TrimSpace(text)
}

// summaryStop are words of tool names that say how, not what: verbs and
// glue. What is left names the things the tools work on.
var summaryStop = map[string]bool{
	"get": true, "list": true, "create": true, "update": true, "delete": true, "search": true, "read": true,
	"write": true, "set": true, "add": true, "remove": true, "find": true, "fetch": true, "run": true,
	"execute": true, "new": true, "edit": true, "move": true, "query": true, "put": true, "post": true,
	"patch": true, "make": true, "by": true, "for": true, "of": true, "or": true, "and": true, "to": true,
	"from": true, "in": true, "on": true, "a": true, "the": true, "all": true, "info": true, "details": true,
	"retrieve": true, "apply": true, "check": true, "do": true, "use": true, "send": true, "show": true,
	"view": true, "open": true, "close": true, "start": true, "stop": true, "with": true, "mcp": true,
	"tool": true, "tools": true, "is": true, "my": true, "me": true, "item": true, "items": true,
	"api": true, "azmcp": true,
}

// toolTerms returns the things a server's tools work on, most common
// first: the words of their names but verbs and glue, with plurals folded
// and pairs that go together kept together ("pull request").
func toolTerms(server string, tools []*catalog.Entry) []string {
	own := map[string]bool{}
	for _, w := range nameWords(server) {
		own[w] = true
	}
	count := map[string]int{}
	pairs := map[string]int{}
	first := map[string]int{}
	seen := 0
	for _, e := range tools {
		var ws []string
		for _, w := range nameWords(e.Tool) {
			if !summaryStop[w] && !own[w] && len(w) > 1 {
				ws = append(ws, w)
			}
		}
		inTool := map[string]bool{}
		for i, w := range ws {
			if !inTool[w] {
				inTool[w] = true
				count[w]++
			}
			if _, ok := first[w]; !ok {
				first[w] = seen
				seen++
			}
			if i > 0 && !inTool[ws[i-1]+" "+w] {
				inTool[ws[i-1]+" "+w] = true
				pairs[ws[i-1]+" "+w]++
			}
		}
	}
	// Fold plurals into singulars the tools also use.
	singular := func(w string) string {
		if s, ok := strings.CutSuffix(w, "ies"); ok && count[s+"y"] > 0 {
			return s + "y"
		}
		if s, ok := strings.CutSuffix(w, "s"); ok && count[s] > 0 {
			return s
		}
		return w
	}
	for w, n := range count {
		if s := singular(w); s != w {
			count[s] += n
			delete(count, w)
		}
	}
	// A pair that (nearly) always goes together is one term.
	inPair := map[string]bool{}
	for p, n := range pairs {
		a, b, _ := strings.Cut(p, " ")
		a, b = singular(a), singular(b)
		if a == b {
			continue
		}
		if (n >= 2 && n*5 >= 4*min(count[a], count[b])) || (n == count[a] && n == count[b]) {
			p = a + " " + b
			count[p], first[p] = n, first[a]
			inPair[a], inPair[b] = true, true
		}
	}
	var terms []string
	for t, n := range count {
		if n > 0 && !inPair[t] {
			terms = append(terms, t)
		}
	}
	slices.SortFunc(terms, func(a, b string) int {
		if n := cmp.Compare(count[b], count[a]); n != 0 {
			return n
		}
		if n := cmp.Compare(first[a], first[b]); n != 0 {
			return n
		}
		return strings.Compare(a, b)
	})
	return terms
}

// nameWords splits a tool or server name into lower-case words at
// underscores, hyphens, dots, digits and camelCase humps.
func nameWords(name string) []string {
	var words []string
	var cur []rune
	flush := func() {
		if len(cur) > 0 {
			words = append(words, strings.ToLower(string(cur)))
			cur = cur[:0]
		}
	}
	rs := []rune(name)
	for i, r := range rs {
		switch {
		case !unicode.IsLetter(r):
			flush()
		case unicode.IsUpper(r) && i > 0 && unicode.IsLower(rs[i-1]):
			flush()
			cur = append(cur, r)
		default:
			cur = append(cur, r)
		}
	}
	flush()
	return words
}
