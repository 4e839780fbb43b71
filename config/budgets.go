package config

import (
	"bytes"
	"encoding/json"
	"maps"
	"slices"
	"strings"

	"github.com/toolshelf/toolshelf/catalog"
	"github.com/toolshelf/toolshelf/ledger"
)

// budgetJSON is one of "budgets" as users write it.
type budgetJSON struct {
	For       string  `json:"for"`
	USD       float64 `json:"usd"`
	Tokens    int64   `json:"tokens"`
	Requests  int64   `json:"requests"`
	ToolCalls int64   `json:"toolCalls"`
	Per       string  `json:"per"`
	Calendar  bool    `json:"calendar"`
	WarnAt    float64 `json:"warnAt"`
}

// budgets reads "budgets": a list of limits on what a person, profile,
// group or everyone spends in a window (package ledger).
func (p *configParser) budgets() error {
	raw, ok := p.sections["budgets"]
	if !ok {
		return nil
	}
	at := p.at("budgets")
	var list []json.RawMessage
	if err := json.Unmarshal(raw, &list); err != nil {
		return p.errAt(at, `"budgets" must be a list of budgets, each {"for": "person:alice@example.com", "usd": 5, "per": "day"}`)
	}
	// Each budget's place in the file, for its errors' lines.
	starts := make([]int, len(list))
	if at >= 0 {
		if open := bytes.IndexByte(p.data[at:], '['); open >= 0 {
			dec := json.NewDecoder(bytes.NewReader(p.data[at+open:]))
			dec.Token()
			for i := range starts {
				off := at + open + int(dec.InputOffset())
				for off < len(p.data) && strings.IndexByte(", \t\r\n", p.data[off]) >= 0 {
					off++ // the comma before, and spaces
				}
				starts[i] = off
				var skip json.RawMessage
				if dec.Decode(&skip) != nil {
					break
				}
			}
		}
	}
	for i, one := range list {
		where := max(starts[i], at)
		var j budgetJSON
		dec := json.NewDecoder(bytes.NewReader(one))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&j); err != nil {
			return p.errAt(where, `budget %d: %v: a budget is {"for": ..., "usd"/"tokens"/"requests"/"toolCalls": N, "per": "hour"|"day"|"week"|"month", "calendar": true|false, "warnAt": 0.8}`, i+1, err)
		}
		b := ledger.Budget{For: j.For, USD: j.USD, Tokens: j.Tokens, Requests: j.Requests, ToolCalls: j.ToolCalls, Per: j.Per, Calendar: j.Calendar, WarnAt: j.WarnAt}
		if err := b.Check(); err != nil {
			return p.errAt(where, "budget %d: %v", i+1, err)
		}
		p.cfg.Budgets = append(p.cfg.Budgets, b)
	}
	return nil
}

// prices reads "prices": what models' tokens cost, in US dollars per
// million tokens, over the built-in table.
func (p *configParser) prices() error {
	raw, ok := p.sections["prices"]
	if !ok {
		return nil
	}
	at := p.at("prices")
	var models map[string]json.RawMessage
	if err := json.Unmarshal(raw, &models); err != nil || models == nil {
		return p.errAt(at, `"prices" must be an object of models, each {"input": 3, "output": 15, "cacheRead": 0.3, "cacheWrite": 3.75} (US dollars per million tokens)`)
	}
	p.cfg.Prices = ledger.Prices{}
	for _, name := range slices.Sorted(maps.Keys(models)) {
		where := catalog.KeyOffset(p.data, max(at, 0), name)
		var price ledger.Price
		dec := json.NewDecoder(bytes.NewReader(models[name]))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&price); err != nil {
			return p.errAt(where, `price of %q: %v: want {"input": 3, "output": 15, "cacheRead": 0.3, "cacheWrite": 3.75}`, name, err)
		}
		if price.Input < 0 || price.Output < 0 || price.CacheRead < 0 || price.CacheWrite < 0 {
			return p.errAt(where, "price of %q: a price is negative", name)
		}
		if name == "" {
			return p.errAt(where, "a price for a model without a name")
		}
		p.cfg.Prices[name] = price
	}
	return nil
}
