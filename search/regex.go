package search

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"regexp/syntax"
	"strings"

	"github.com/toolshelf/toolshelf/catalog"
)

// MaxPatternLen is the longest pattern the regex engine accepts, as the
// Messages API's regex tool search.
const MaxPatternLen = 200

// Regex matches a regular expression, case-insensitively, against each
// tool's name, description, parameter names and parameter descriptions,
// as the Messages API's tool_search_tool_regex does. The syntax is Go's
// RE2: no backreferences or lookaround, unlike Python's re.
//
// A tool scores by the fields that matched: name 4, description 2,
// parameter names 1, parameter descriptions 1. Ties are broken by name.
type Regex struct {
	cat  *catalog.Catalog
	docs []regexDoc
}

type regexDoc struct {
	name, desc, hint string
	params           string // parameter names, one per line
	paramDescs       string // parameter descriptions, one per line
}

var _ Engine = (*Regex)(nil)

// NewRegex builds a regex engine over c.
func NewRegex(c *catalog.Catalog) *Regex {
	x := &Regex{cat: c, docs: make([]regexDoc, c.Len())}
	for i := range x.docs {
		e := c.Entry(i)
		var names, descs []string
		for _, p := range e.Params {
			names = append(names, p.Name)
			if p.Description != "" {
				descs = append(descs, p.Description)
			}
		}
		x.docs[i] = regexDoc{
			name:       e.Name,
			desc:       e.Description,
			hint:       e.SearchHint,
			params:     strings.Join(names, "\n"),
			paramDescs: strings.Join(descs, "\n"),
		}
	}
	return x
}

// CompilePattern compiles a regex search pattern: at most MaxPatternLen
// characters, matched without regard to case.
func CompilePattern(pattern string) (*regexp.Regexp, error) {
	switch {
	case strings.TrimSpace(pattern) == "":
		return nil, errors.New("pattern is empty")
	case len(pattern) > MaxPatternLen:
		return nil, fmt.Errorf("pattern is %d characters long; the limit is %d", len(pattern), MaxPatternLen)
	}
	re, err := regexp.Compile("(?i)" + pattern)
	if err != nil {
		var se *syntax.Error
		if errors.As(err, &se) {
			return nil, fmt.Errorf("invalid pattern %q: %s", pattern, se.Code)
		}
		return nil, fmt.Errorf("invalid pattern %q: %v", pattern, err)
	}
	return re, nil
}

// Search implements Engine: query is a regular expression (select:
// queries are answered by [Find]). The default limit is 5.
func (x *Regex) Search(ctx context.Context, query string, limit int) ([]Hit, error) {
	limit, err := checkLimit(limit, DefaultRegexLimit)
	if err != nil {
		return nil, err
	}
	re, err := CompilePattern(query)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	fields := []struct {
		name   string
		weight float64
		text   func(*regexDoc) string
	}{
		{FieldName, 4, func(d *regexDoc) string { return d.name }},
		{FieldHint, 4, func(d *regexDoc) string { return d.hint }},
		{FieldDescription, 2, func(d *regexDoc) string { return d.desc }},
		{FieldParams, 1, func(d *regexDoc) string { return d.params }},
		{FieldParamDescs, 1, func(d *regexDoc) string { return d.paramDescs }},
	}
	top := topK{limit: limit}
	for i := range x.docs {
		d := &x.docs[i]
		var score float64
		var matched []string
		for _, f := range fields {
			if re.MatchString(f.text(d)) {
				score += f.weight
				matched = append(matched, f.name)
			}
		}
		if score > 0 {
			top.push(Hit{Entry: x.cat.Entry(i), Score: score, Matches: []Match{{Term: query, Fields: matched, Score: score}}})
		}
	}
	return top.sorted(), nil
}
