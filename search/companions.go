package search

import (
	"encoding/json"
	"regexp"
	"slices"
	"strings"

	"github.com/toolshelf/toolshelf/catalog"
)

// A task often needs a step it does not name: a forecast by latitude
// and longitude needs the place's coordinates first, closing an issue by
// its number needs the issue found, "tomorrow" needs today's date. A
// tool's required parameters say what it needs; Companions finds, from
// the catalog's own names, parameter names and descriptions, the tools
// that produce it, so that an answer can name them beside the match (a
// line each, not expanded).

// MaxCompanions bounds the companions named for one tool.
const MaxCompanions = 3

// Companions are the producers of what a catalog's tools need. Build one
// per catalog snapshot (NewCompanions); it is immutable, and Of is safe
// for concurrent use.
type Companions struct {
	geocoders []*catalog.Entry
	clocks    []*catalog.Entry
	// listers are the tools that list, search or find things, by the
	// singular words of their names ("issue" for list_issues).
	listers map[string][]*catalog.Entry
}

// NewCompanions indexes c's producers.
func NewCompanions(c *catalog.Catalog) *Companions {
	cs := &Companions{listers: map[string][]*catalog.Entry{}}
	for e := range c.All() {
		words := Tokenize(e.Tool)
		desc := strings.ToLower(e.Description)
		// A tool that needs coordinates (or a date) to run is their
		// consumer, not their producer, whatever its description says
		// around them: a reverse geocoder, a search near a point.
		var needsCoords, needsDay bool
		for _, p := range requiredParams(e) {
			name, pw, pd := strings.ToLower(p.name), Tokenize(p.name), strings.ToLower(p.description)
			needsCoords = needsCoords || needsCoordinates(name, pw, pd)
			needsDay = needsDay || needsDate(name, pw, pd)
		}
		if !needsCoords && isGeocoder(words, desc) && outputHas(e, "latitude", "lat", "coordinates", "location", "geometry") {
			cs.geocoders = append(cs.geocoders, e)
		}
		if !needsDay && isClock(words, desc) {
			cs.clocks = append(cs.clocks, e)
		}
		if len(words) > 1 && finders[words[0]] {
			for _, w := range words[1:] {
				w = singular(w)
				if !stopNouns[w] {
					cs.listers[w] = append(cs.listers[w], e)
				}
			}
		}
	}
	return cs
}

// Of returns the companions of e: the producers of what its required
// parameters need, at most n. Coordinates and dates may come from any
// server's tool (its own first); an identifier only from its own: one
// server's ids mean nothing to another.
func (cs *Companions) Of(e *catalog.Entry, n int) []*catalog.Entry {
	var out []*catalog.Entry
	// add names up to limit of candidates: the same server's first (its
	// formats fit), and only its own when others' cannot fit (an id).
	add := func(candidates []*catalog.Entry, limit int, ownOnly bool) {
		sorted := make([]*catalog.Entry, 0, len(candidates))
		for _, c := range candidates {
			if c != e && c.Server == e.Server {
				sorted = append(sorted, c)
			}
		}
		for _, c := range candidates {
			if c != e && c.Server != e.Server && !ownOnly {
				sorted = append(sorted, c)
			}
		}
		added := 0
		for _, c := range sorted {
			if added == limit || len(out) == n {
				return
			}
			if !containsEntryPtr(out, c) {
				out = append(out, c)
				added++
			}
		}
	}
	for _, p := range requiredParams(e) {
		name := strings.ToLower(p.name)
		words := Tokenize(p.name)
		desc := strings.ToLower(p.description)
		switch {
		case needsCoordinates(name, words, desc):
			add(cs.geocoders, 1, false)
		case needsDate(name, words, desc):
			add(cs.clocks, 1, false)
		default:
			thing := identifies(words, e)
			if thing == "" && len(words) == 1 && namesOne(desc) {
				// A parameter named for the thing it names
				// ("subscription": "The subscription ID or name").
				thing = singular(words[0])
			}
			if thing != "" {
				add(cs.listers[thing], 1, true)
			}
		}
	}
	return out
}

// finders are the verbs of a tool that produces identifiers of things.
var finders = map[string]bool{"list": true, "search": true, "find": true, "query": true, "lookup": true, "browse": true, "enumerate": true}

// stopNouns are words of a finder's name that name no thing.
var stopNouns = map[string]bool{"all": true, "by": true, "for": true, "my": true, "the": true, "of": true, "in": true, "and": true, "with": true, "from": true, "recent": true, "available": true, "latest": true, "new": true}

// isGeocoder reports whether a tool's name or description says it turns
// a place into coordinates: a geocoder by name, or a description that
// says it gives coordinates (not one that merely mentions them beside an
// address, as a search near a point does).
func isGeocoder(words []string, desc string) bool {
	for _, w := range words {
		if strings.HasPrefix(w, "geocod") && !slices.Contains(words, "reverse") {
			return true
		}
	}
	if strings.Contains(desc, "reverse geocod") || strings.Contains(desc, "given coordinates") || strings.Contains(desc, "from coordinates") {
		return false
	}
	if strings.Contains(desc, "geocod") {
		return true
	}
	place := strings.Contains(desc, "address") || strings.Contains(desc, "place name") || strings.Contains(desc, "city name") || strings.Contains(desc, "location name")
	return place && producesCoordinates.MatchString(desc)
}

// producesCoordinates matches a description that says a tool gives
// coordinates: "returns the latitude and longitude", "into geographic
// coordinates", "get the coordinates of".
var producesCoordinates = regexp.MustCompile(`(?:return|returns|get|gets|fetch|fetches|retrieve|retrieves|find|finds|look up|looks up|into|to|convert|converts|obtain|obtains|provide|provides|resolve|resolves)\s+(?:the\s+|its\s+|their\s+|a\s+)?(?:geographic(?:al)?\s+|gps\s+|exact\s+)?(?:coordinates|latitude|lat/lon|lat/lng)`)

// outputHas reports whether e's output schema, when it has one, names one
// of the properties (at any depth); a tool without an output schema is
// judged by its description alone.
func outputHas(e *catalog.Entry, props ...string) bool {
	var t struct {
		OutputSchema json.RawMessage `json:"outputSchema"`
	}
	if json.Unmarshal(e.Raw, &t) != nil || len(t.OutputSchema) == 0 || string(t.OutputSchema) == "null" {
		return true
	}
	text := strings.ToLower(string(t.OutputSchema))
	for _, p := range props {
		if strings.Contains(text, `"`+p) {
			return true
		}
	}
	return false
}

func isClock(words []string, desc string) bool {
	has := func(w string) bool {
		for _, x := range words {
			if x == w {
				return true
			}
		}
		return false
	}
	return (has("time") || has("date") || has("now") || has("datetime")) && (has("current") || has("get") || has("now") || len(words) <= 2) &&
		(strings.Contains(desc, "current") || strings.Contains(desc, "now") || strings.Contains(desc, "today"))
}

func needsCoordinates(name string, words []string, desc string) bool {
	switch name {
	case "latitude", "longitude", "lat", "lon", "lng", "coordinates", "coords", "latlng", "lat_lng", "latlon":
		return true
	}
	for _, w := range words {
		if w == "latitude" || w == "longitude" || w == "lat" || w == "lng" {
			return true
		}
	}
	return strings.Contains(desc, "latitude") && strings.Contains(desc, "longitude")
}

func needsDate(name string, words []string, desc string) bool {
	for _, w := range words {
		switch w {
		case "date", "datetime", "day", "timestamp":
			return true
		}
	}
	return strings.Contains(desc, "yyyy-mm-dd") || strings.Contains(desc, "iso 8601") || strings.Contains(desc, "iso8601")
}

// identifies returns the thing a parameter identifies ("issue" for
// issue_number, repoId or issue_ids; e's own object for a bare "id").
func identifies(words []string, e *catalog.Entry) string {
	if len(words) == 0 {
		return ""
	}
	last := words[len(words)-1]
	switch last {
	case "id", "ids", "number", "num", "key", "slug", "uuid", "handle", "sha":
	default:
		return ""
	}
	if len(words) > 1 {
		return singular(words[len(words)-2])
	}
	// A bare "id": the thing the tool acts on, the last word of its name
	// (get_issue → issue).
	own := Tokenize(e.Tool)
	if len(own) < 2 {
		return ""
	}
	return singular(own[len(own)-1])
}

// namesOne reports whether a parameter's description says it names one
// thing: by its id, its name or its key.
func namesOne(desc string) bool {
	return identifierWords.MatchString(desc)
}

var identifierWords = regexp.MustCompile(`\b(?:id|ids|identifier|uuid|name or id|id or name|slug|key)\b`)

type param struct{ name, description string }

// requiredParams returns e's required parameters, in the order of its
// schema's "required".
func requiredParams(e *catalog.Entry) []param {
	var s struct {
		Required []string `json:"required"`
	}
	if len(e.InputSchema) == 0 || json.Unmarshal(e.InputSchema, &s) != nil {
		return nil
	}
	var out []param
	for _, r := range s.Required {
		for _, p := range e.Params {
			if p.Name == r {
				out = append(out, param{p.Name, p.Description})
			}
		}
	}
	return out
}

// singular drops a plural's ending: issues → issue, repositories →
// repository, addresses → address.
func singular(w string) string {
	switch {
	case strings.HasSuffix(w, "ies") && len(w) > 4:
		return w[:len(w)-3] + "y"
	case strings.HasSuffix(w, "sses"), strings.HasSuffix(w, "xes"), strings.HasSuffix(w, "ches"), strings.HasSuffix(w, "shes"):
		return w[:len(w)-2]
	case strings.HasSuffix(w, "s") && !strings.HasSuffix(w, "ss") && len(w) > 3:
		return w[:len(w)-1]
	}
	return w
}

func containsEntryPtr(es []*catalog.Entry, e *catalog.Entry) bool {
	for _, x := range es {
		if x == e {
			return true
		}
	}
	return false
}
