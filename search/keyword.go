package search

import (
	"context"
	"strings"

	"github.com/toolshelf/toolshelf/catalog"
)

// Keyword scores tools by where query terms appear, the way Claude Code's
// tool search does. For each term:
//
//	the term is a part of the tool's name        +12 (MCP tool) / +10
//	else it is inside a part                      +6 / +5
//	else it is inside the full name, and the
//	  tool has scored nothing so far              +3
//	it is a word of the search hint               +4
//	it is a word of the description               +2
//
// Name parts come from splitting the qualified name (without "mcp__") on
// underscores, hyphens and identifier boundaries; "word" means a
// word-boundary match, so "read" does not match "already". Tools scoring
// zero are not returned; ties are broken by name.
//
// Query terms are the tokens of [ParseQuery], so punctuation and case in a
// query do not matter, and every term is a run of letters and digits.
type Keyword struct {
	cat  *catalog.Catalog
	docs []keywordDoc
}

type keywordDoc struct {
	parts []string // name parts
	name  string   // lower-case qualified name
	desc  string   // lower-case description
	hint  string   // lower-case search hint
	mcp   bool
}

var _ Engine = (*Keyword)(nil)

// NewKeyword builds a keyword engine over c.
func NewKeyword(c *catalog.Catalog) *Keyword {
	k := &Keyword{cat: c, docs: make([]keywordDoc, c.Len())}
	for i := range k.docs {
		e := c.Entry(i)
		k.docs[i] = keywordDoc{
			parts: Tokenize(strings.TrimPrefix(e.Name, catalog.Prefix)),
			name:  strings.ToLower(e.Name),
			desc:  foldText(e.Description),
			hint:  foldText(e.SearchHint),
			mcp:   e.IsMCP(),
		}
	}
	return k
}

// keywordTerm is a distinct query term.
type keywordTerm struct {
	text     string
	required bool
}

// Search implements Engine. The default limit is 5.
func (k *Keyword) Search(ctx context.Context, query string, limit int) ([]Hit, error) {
	q, limit, hits, done, err := begin(ctx, k.cat, query, limit, DefaultKeywordLimit)
	if done {
		return hits, err
	}
	if e, ok := k.cat.Lookup(q.Text); ok {
		return []Hit{{Entry: e, Score: 1, Matches: []Match{{Term: q.Text, Fields: []string{FieldName}, Score: 1}}}}, nil
	}

	var terms []keywordTerm
	for _, t := range q.Terms {
		i := indexTerm(terms, t.Text)
		if i < 0 {
			terms = append(terms, keywordTerm{text: t.Text})
			i = len(terms) - 1
		}
		terms[i].required = terms[i].required || t.Required
	}

	top := topK{limit: limit}
	for i := range k.docs {
		d := &k.docs[i]
		if !d.hasRequired(terms) {
			continue
		}
		if score := d.score(terms, nil); score > 0 {
			top.push(Hit{Entry: k.cat.Entry(i), Score: score})
		}
	}
	hits = top.sorted()
	for i := range hits {
		k.docs[k.cat.Index(hits[i].Entry.Name)].score(terms, &hits[i].Matches)
	}
	return hits, nil
}

func indexTerm(terms []keywordTerm, text string) int {
	for i := range terms {
		if terms[i].text == text {
			return i
		}
	}
	return -1
}

// hasRequired reports whether every required term appears in the tool's
// name, description or search hint.
func (d *keywordDoc) hasRequired(terms []keywordTerm) bool {
	for i := range terms {
		t := &terms[i]
		if t.required && !strings.Contains(d.name, t.text) && !containsWord(d.desc, t.text) && !containsWord(d.hint, t.text) {
			return false
		}
	}
	return true
}

// containsWord reports whether term occurs in text with no ASCII word
// character ([A-Za-z0-9_]) on either side: what the regular expression
// \bterm\b matches for a term of word characters, without running one per
// tool and term.
func containsWord(text, term string) bool {
	for i := 0; i+len(term) <= len(text); {
		j := strings.Index(text[i:], term)
		if j < 0 {
			return false
		}
		j += i
		end := j + len(term)
		if (j == 0 || !isWordByte(text[j-1])) && (end == len(text) || !isWordByte(text[end])) {
			return true
		}
		i = j + 1
	}
	return false
}

func isWordByte(c byte) bool {
	return c == '_' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
}

// foldText lower-cases text and drops combining marks, as Tokenize does,
// so that descriptions compare with query terms.
func foldText(s string) string {
	if !isASCII(s) {
		s = foldMarks(s)
	}
	return strings.ToLower(s)
}

// score computes the tool's score. When matches is not nil it also records
// what each term matched.
func (d *keywordDoc) score(terms []keywordTerm, matches *[]Match) float64 {
	exact, partial := 10.0, 5.0
	if d.mcp {
		exact, partial = 12, 6
	}
	total := 0.0
	for i := range terms {
		t := &terms[i]
		var got float64
		var in fieldSet
		switch {
		case contains(d.parts, t.text):
			got, in = exact, inName
		case partInParts(d.parts, t.text):
			got, in = partial, inName
		case total == 0 && strings.Contains(d.name, t.text):
			got, in = 3, inName
		}
		if containsWord(d.hint, t.text) {
			got += 4
			in |= inHint
		}
		if containsWord(d.desc, t.text) {
			got += 2
			in |= inDescription
		}
		total += got
		if matches != nil && got > 0 {
			*matches = append(*matches, Match{Term: t.text, Fields: in.names(), Score: got})
		}
	}
	return total
}

func partInParts(parts []string, term string) bool {
	for _, p := range parts {
		if strings.Contains(p, term) {
			return true
		}
	}
	return false
}
