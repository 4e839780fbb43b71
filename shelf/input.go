package shelf

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/toolshelf/toolshelf/search"
)

// Limits of a search tool's results, the same on every face. Without a
// limit from the model, an answer keeps as many matches as the ranking
// is sure of (search.DefaultDepth), up to DefaultLimit, within the
// shelf's token budget.
const (
	DefaultLimit = 10
	// MaxLimit bounds the limit a model may ask for.
	MaxLimit = 50
)

// Input is what a search tool takes, on every face.
type Input struct {
	Query string
	Limit int
	// Auto is set when the model gave no limit: the depth follows the
	// ranking's confidence (Request).
	Auto bool
}

// Request is the search request of an input: with no limit given, the
// depth follows the ranking's confidence.
func (in Input) Request() search.Request {
	r := search.Request{Query: in.Query, Limit: in.Limit}
	if in.Auto {
		d := search.DefaultDepth
		r.Depth = &d
	}
	return r
}

// InputSchema is the search tool's input schema on every face.
func InputSchema() json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{"type":"object","properties":{`+
		`"query":{"type":"string","description":"What the tool should do, in a few words (\"create a github issue\"), or select:NAME,NAME for whole definitions by exact name. +word makes a word required; mcp__server lists a server's tools."},`+
		`"limit":{"type":"integer","minimum":1,"maximum":%d,"description":"Most tools to return (default: as many as the search is sure of, up to %d)."}},`+
		`"required":["query"],"additionalProperties":false}`, MaxLimit, DefaultLimit))
}

// Errors of ParseInput, worded for the model.
var (
	ErrNoQuery = errors.New(`"query" is required: describe what you want to do, as in {"query": "create a github issue"}`)
)

// ParseInput reads a search tool's input: an object with "query" and an
// optional "limit" (at most MaxLimit; when absent, Auto with
// DefaultLimit). Its errors are the model's to correct.
func ParseInput(raw json.RawMessage) (Input, error) {
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
	out := Input{Query: *in.Query, Limit: DefaultLimit, Auto: true}
	if len(in.Limit) > 0 && string(in.Limit) != "null" {
		out.Auto = false
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
