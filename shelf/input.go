package shelf

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// Default limits of a search tool's results. A face that returns each
// match's full input schema in the result (the gateway's search_tools,
// so that the model can call in the same turn) returns fewer: five
// schemas already cost a turn's worth of tokens. A face that loads what
// it finds by reference (the Messages library's tool_reference blocks,
// the proxy's next round) loads eight, BM25's measured default
// (docs/search-quality.md).
const (
	DefaultLimit            = 8
	DefaultLimitWithSchemas = 5
	// MaxLimit bounds the limit a model may ask for.
	MaxLimit = 50
)

// Input is what a search tool takes, on every face.
type Input struct {
	Query string
	Limit int
}

// InputSchema is the search tool's input schema on every face; def is
// the face's default limit (DefaultLimit or DefaultLimitWithSchemas).
func InputSchema(def int) json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{"type":"object","properties":{`+
		`"query":{"type":"string","description":"What the tool should do, in a few words (\"create a github issue\"), or select:NAME,NAME to load tools by exact name. +word makes a word required; mcp__server lists a server's tools."},`+
		`"limit":{"type":"integer","minimum":1,"maximum":%d,"description":"Most tools to return (default %d)."}},`+
		`"required":["query"],"additionalProperties":false}`, MaxLimit, def))
}

// Errors of ParseInput, worded for the model.
var (
	ErrNoQuery = errors.New(`"query" is required: describe what you want to do, as in {"query": "create a github issue"}`)
)

// ParseInput reads a search tool's input: an object with "query" and an
// optional "limit" (def when absent, at most MaxLimit). Its errors are
// the model's to correct.
func ParseInput(raw json.RawMessage, def int) (Input, error) {
	var in struct {
		Query *string         `json:"query"`
		Limit json.RawMessage `json:"limit"`
	}
	if len(raw) == 0 || string(raw) == "null" {
		raw = json.RawMessage(`{}`)
	}
	if err := json.Unmarshal(raw, &in); err != nil {
		// Go's wording names Go types; the model needs the JSON's.
		what := "not valid JSON"
		var typ *json.UnmarshalTypeError
		if errors.As(err, &typ) {
			if typ.Field == "" {
				what = "not " + article(typ.Value)
			} else {
				what = fmt.Sprintf("%q is %s", typ.Field, article(typ.Value))
			}
		}
		return Input{}, fmt.Errorf(`the input must be an object with "query" (a string) and an optional "limit", %s`, what)
	}
	if in.Query == nil || strings.TrimSpace(*in.Query) == "" {
		return Input{}, ErrNoQuery
	}
	out := Input{Query: *in.Query, Limit: def}
	if len(in.Limit) > 0 && string(in.Limit) != "null" {
		var f float64
		if json.Unmarshal(in.Limit, &f) != nil || f != float64(int(f)) || f < 1 {
			return Input{}, fmt.Errorf(`"limit" must be a positive integer, got %s`, in.Limit)
		}
		out.Limit = min(int(f), MaxLimit)
	}
	return out, nil
}

// article puts "a" or "an" before a JSON kind ("array", "object").
func article(kind string) string {
	if kind != "" && strings.ContainsRune("aeiou", rune(kind[0])) {
		return "an " + kind
	}
	return "a " + kind
}
