package search

import (
	"errors"
	"strings"
	"unicode"
	"unicode/utf8"
)

// ErrNoLetters is returned for a query with no letter or digit in it. Its
// words are the ones Anthropic's tool search answers with, which models
// have seen.
//
//lint:ignore ST1005 the message is the API's, capital and period included
var ErrNoLetters = errors.New("Query must contain at least one letter or number.")

// ErrEmptyQuery is returned for a query that is empty after trimming.
var ErrEmptyQuery = errors.New("query is empty")

// Query is a parsed search query. The grammar, shared by the lexical
// engines:
//
//	select:a,b,c       fetch these tools by name; no ranking (describe:a,b
//	                   is the same: whole definitions)
//	mcp__github        a query starting with mcp__ first matches name prefixes
//	+slack send        a term starting with + and a letter is required: every
//	                   result mentions it in its name, description or search
//	                   hint ("+1 555 0100" is a phone number, not a term)
//	anything else      words, ranked by the engine
type Query struct {
	// Text is the query, trimmed.
	Text string
	// Select holds the names of a select: query, in the order given.
	Select []string
	// Prefix is the lower-cased first word of a query that starts with
	// "mcp__".
	Prefix string
	// Terms are the query's tokens, in order, with repeats.
	Terms []Term
}

// Term is one token of a query.
type Term struct {
	Text     string
	Required bool
}

// ParseQuery parses a query string.
func ParseQuery(s string) (Query, error) {
	q := Query{Text: strings.TrimSpace(s)}
	if q.Text == "" {
		return q, ErrEmptyQuery
	}
	rest, ok := cutPrefixFold(q.Text, "select:")
	if !ok {
		rest, ok = cutPrefixFold(q.Text, "describe:")
	}
	if ok {
		for _, name := range strings.Split(rest, ",") {
			if name = strings.TrimSpace(name); name != "" {
				q.Select = append(q.Select, name)
			}
		}
		if len(q.Select) == 0 {
			return q, errors.New("select: needs at least one tool name, as in select:mcp__github__create_issue")
		}
		return q, nil
	}
	for _, word := range strings.Fields(q.Text) {
		required := len(word) > 1 && word[0] == '+' && startsWithLetter(word[1:])
		if required {
			word = word[1:]
		}
		for _, tok := range Tokenize(word) {
			q.Terms = append(q.Terms, Term{Text: tok, Required: required})
		}
	}
	if len(q.Terms) == 0 {
		return q, ErrNoLetters
	}
	if _, ok := cutPrefixFold(q.Text, "mcp__"); ok {
		q.Prefix = strings.ToLower(strings.Fields(q.Text)[0])
	}
	return q, nil
}

func startsWithLetter(s string) bool {
	r, _ := utf8.DecodeRuneInString(s)
	return unicode.IsLetter(r)
}

// cutPrefixFold is strings.CutPrefix ignoring ASCII case.
func cutPrefixFold(s, prefix string) (string, bool) {
	if len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix) {
		return s[len(prefix):], true
	}
	return s, false
}

// required returns the distinct required terms of q.
func (q Query) required() []string {
	var req []string
	for _, t := range q.Terms {
		if t.Required && !contains(req, t.Text) {
			req = append(req, t.Text)
		}
	}
	return req
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
