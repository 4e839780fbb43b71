package shelf

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/toolshelf/toolshelf/catalog"
	"github.com/toolshelf/toolshelf/policy"
	"github.com/toolshelf/toolshelf/search"
)

// Form says what each match of a search answer carries.
type Form string

const (
	// Compact matches carry a name, a server, a purpose and a signature:
	// a line each. The default.
	Compact Form = "compact"
	// Full matches carry the whole description and input schema, as
	// select: does: for a client or operator that wants them in every
	// answer (configuration "search": {"results": "full"}).
	Full Form = "full"
)

// ParseForm reads a form's name; "" is Compact.
func ParseForm(s string) (Form, error) {
	switch Form(s) {
	case "", Compact:
		return Compact, nil
	case Full:
		return Full, nil
	}
	return "", fmt.Errorf("%q is not a form of search results: want %q or %q", s, Compact, Full)
}

// Match is one tool of a search answer.
type Match struct {
	Name   string `json:"name"`
	Server string `json:"server,omitempty"`
	// Purpose and Signature are a compact match's.
	Purpose   string `json:"purpose,omitempty"`
	Signature string `json:"signature,omitempty"`
	// Description and InputSchema are a whole definition's.
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"input_schema,omitempty"`
	// Declaration is the tool as a program calls it (code mode), instead
	// of InputSchema.
	Declaration string `json:"declaration,omitempty"`
	// App is the ui:// resource a client that renders MCP Apps shows
	// for the tool (its _meta.ui.resourceUri, as the gateway serves it).
	App string `json:"app,omitempty"`
	// Companions name the tools that produce what this one needs (its
	// ids, coordinates, the date): steps a task implies but may not say.
	Companions []string `json:"companions,omitempty"`
	// Unverified tools are known from configuration or server output; the
	// server has not listed them and they cannot be called yet.
	Unverified bool `json:"unverified,omitempty"`
	// Asks is the question a rule asks the person before each call of
	// the tool: the model knows a person will be asked.
	Asks string `json:"asks_person,omitempty"`
	// Skill is the URI of a skill's SKILL.md, for a match that is a skill
	// (instructions to read with resources/read, not a tool to call),
	// and Uses the tools it names that can be called here.
	Skill string   `json:"skill,omitempty"`
	Uses  []string `json:"uses,omitempty"`
}

// maxDescription bounds a whole description in ranked results (a server
// can write a megabyte); select: gives it uncut. The longest real tool
// descriptions measured are under 10,000 bytes.
const maxDescription = 10_000

// MatchOf returns e as a match in form f ("" is Compact). A whole
// definition's description is cut at a bound unless uncut (select:).
func MatchOf(e *catalog.Entry, f Form, uncut bool) Match {
	if e.Skill != "" {
		m := Match{Name: e.Title, Server: e.Server, Skill: e.Skill, Uses: e.Uses}
		if f != Full {
			m.Purpose = Purpose(e.Description)
		} else {
			m.Description = clip(e.Description, maxDescription)
		}
		return m
	}
	m := Match{Name: e.Name, Server: e.Server, Unverified: e.Unverified, Asks: e.Asks}
	if f != Full {
		m.Purpose, m.Signature = Purpose(e.Description), Signature(e.InputSchema)
		return m
	}
	m.InputSchema, _ = catalog.NormalizeSchema(e.InputSchema)
	m.Description = e.Description
	if !uncut && len(m.Description) > maxDescription {
		m.Description = clip(m.Description, maxDescription) + fmt.Sprintf(" (cut at %d of %d bytes; select:%s gives the whole text)", maxDescription, len(e.Description), e.Name)
	}
	return m
}

// CompactMatch is a ranked hit as a compact match, with its companions
// named.
func CompactMatch(h search.Hit) Match {
	m := MatchOf(h.Entry, Compact, false)
	for _, c := range h.Companions {
		m.Companions = append(m.Companions, c.Name)
	}
	return m
}

// DefaultBudget is the tokens a ranked answer's compact matches may cost
// unless the operator says otherwise ("search": {"budget": N}), chosen on
// half 0 of the dev sets (docs/search-quality.md).
const DefaultBudget = 1000

// Tokens estimates what a match costs a Claude model: its JSON counted
// with the offline tokenizer (cl100k times the measured factor).
func Tokens(m Match) int {
	b, err := json.Marshal(m)
	if err != nil {
		return 0
	}
	n, err := policy.Tokenizer{}.CountTokens(context.Background(), []json.RawMessage{b})
	if err != nil {
		return len(b) * 2 / 5 // the seed's characters / 2.5
	}
	return n
}

// OldLimit is how many whole definitions a search answered with before
// answers were compact: a compact answer never costs more than that many
// of its best hits' whole definitions would (see WholeCost).
const OldLimit = 5

// WholeCost is what the first OldLimit of hits would cost as whole
// definitions, the answer search_tools gave before compact matches: on a
// catalog of short descriptions, eight compact matches can cost more
// than five whole definitions, and an answer is then held to the latter.
// It is 0 for OldLimit hits or fewer (a compact match costs less than its
// whole definition, so those fit anyway).
func WholeCost(hits []search.Hit) int { return wholeCost(hits, OldLimit) }

// wholeCost is WholeCost for an answer of n whole definitions (the
// limit a request gave, which the old answer kept).
func wholeCost(hits []search.Hit, n int) int {
	if len(hits) <= n {
		return 0
	}
	cost := 0
	for _, h := range hits[:n] {
		cost += Tokens(MatchOf(h.Entry, Full, false))
	}
	return cost
}

// fit cuts a ranked result to the hits whose compact matches (with
// their companions) fit within budget tokens, and within what its best
// hits' whole definitions would cost (WholeCost; of limit hits when the
// request gave one), keeping at least one, and returns how many it cut
// and the budget that held.
func fit(found *search.Result, budget, limit int) (cut, held int) {
	if budget <= 0 || found.Select {
		return 0, budget
	}
	if limit <= 0 {
		limit = OldLimit
	}
	if whole := wholeCost(found.Hits, limit); whole > 0 {
		budget = min(budget, whole)
	}
	spent := 0
	for i, h := range found.Hits {
		spent += Tokens(CompactMatch(h))
		if spent > budget && i > 0 {
			cut := len(found.Hits) - i
			found.Hits = found.Hits[:i]
			return cut, budget
		}
	}
	return 0, budget
}
