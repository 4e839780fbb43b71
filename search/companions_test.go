package search

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/toolshelf/toolshelf/catalog"
)

// schemaCatalog builds a catalog of tools with required parameters:
// server, name, description, then parameter name and description pairs.
func schemaCatalog(t *testing.T, tools ...[]string) *catalog.Catalog {
	t.Helper()
	var entries []catalog.Entry
	for _, tl := range tools {
		props := map[string]any{}
		var required []string
		for i := 3; i+1 < len(tl); i += 2 {
			props[tl[i]] = map[string]any{"type": "string", "description": tl[i+1]}
			required = append(required, tl[i])
		}
		raw, _ := json.Marshal(map[string]any{"name": tl[1], "description": tl[2],
			"inputSchema": map[string]any{"type": "object", "properties": props, "required": required}})
		e, err := catalog.ParseTool(tl[0], raw)
		if err != nil {
			t.Fatal(err)
		}
		entries = append(entries, e)
	}
	return catalog.New(entries, nil)
}

// A tool's required parameters name what it needs; the producers of it
// are its companions: coordinates from a geocoder (any server), a date
// from a clock (any server), an id from a tool of its own server that
// lists or searches those things (never another server's).
func TestCompanions(t *testing.T) {
	c := schemaCatalog(t,
		[]string{"weather", "get_forecast", "Forecast for a point", "latitude", "", "longitude", ""},
		[]string{"weather", "get_events", "Events on a day", "date", "The day, YYYY-MM-DD"},
		[]string{"places", "geocode_address", "Turn an address into coordinates"},
		[]string{"clock", "get_current_time", "Get the current time in a time zone"},
		[]string{"tracker", "close_issue", "Close an issue", "issue_number", "The issue's number"},
		[]string{"tracker", "listIssues", "List the issues of a project"},
		[]string{"other", "search_issues", "Search issues in another tracker"},
		[]string{"tracker", "get_project", "Get a project", "id", "The project's id"},
		[]string{"tracker", "find_projects", "Find projects by name"},
		[]string{"tracker", "rename", "Rename something", "name", "The new name"},
		// Consumers of coordinates and dates that speak of them are not
		// their producers.
		[]string{"maps", "explore_area", "Explore the places around coordinates or an address", "latitude", "", "longitude", ""},
		[]string{"maps", "find_ev_charging_stations", "Find EV charging stations near the coordinates of an address or city name", "lat", "Latitude", "lng", "Longitude"},
		[]string{"maps", "reverse_geocode", "Turn coordinates into an address", "latitude", "", "longitude", ""},
		[]string{"weather", "weather_by_city", "Weather for a city name: returns the temperature at its coordinates", "city", "The city name"},
		[]string{"cal", "events_of_day", "The events of today or of a given date", "date", "YYYY-MM-DD"},
		// An identifier named for its thing alone.
		[]string{"azure", "list_subscriptions", "List the Azure subscriptions"},
		[]string{"azure", "list_groups", "List resource groups", "subscription", "The subscription ID or name"},
		[]string{"azure", "set_theme", "Set the theme", "theme", "dark or light"},
	)
	cs := NewCompanions(c)
	of := func(name string) []string {
		e, ok := c.Find(name)
		if !ok {
			t.Fatalf("no %s", name)
		}
		return sortedNames(cs.Of(e, MaxCompanions))
	}
	for tool, want := range map[string][]string{
		"mcp__weather__get_forecast": {"mcp__places__geocode_address"},
		"mcp__weather__get_events":   {"mcp__clock__get_current_time"},
		"mcp__tracker__close_issue":  {"mcp__tracker__listIssues"}, // not other's search_issues
		"mcp__tracker__get_project":  {"mcp__tracker__find_projects"},
		"mcp__tracker__rename":       {},
		"mcp__tracker__listIssues":   {},
		"mcp__maps__explore_area":    {"mcp__places__geocode_address"}, // not the other consumers
		"mcp__maps__reverse_geocode": {"mcp__places__geocode_address"},
		"mcp__azure__list_groups":    {"mcp__azure__list_subscriptions"},
		"mcp__azure__set_theme":      {},
	} {
		if got := of(tool); !slices.Equal(got, want) && !(len(got) == 0 && len(want) == 0) {
			t.Errorf("companions of %s: %v, want %v", tool, got, want)
		}
	}
}

// On the built-in catalog: GitHub's issue tools name list_issues, the
// reverse geocoder names the geocoder.
func TestCompanionsOfTheBuiltInCatalog(t *testing.T) {
	c := realCatalog(t)
	cs := NewCompanions(c)
	for tool, want := range map[string]string{
		"mcp__github__get_issue":                 "mcp__github__list_issues",
		"mcp__github__merge_pull_request":        "mcp__github__list_pull_requests",
		"mcp__google-maps__maps_reverse_geocode": "mcp__google-maps__maps_geocode",
	} {
		e, ok := c.Find(tool)
		if !ok {
			t.Fatalf("no %s", tool)
		}
		if got := sortedNames(cs.Of(e, MaxCompanions)); !slices.Contains(got, want) {
			t.Errorf("companions of %s: %v, want %s among them", tool, got, want)
		}
	}
}

// A name's words, as companions and findability read them (Tokenize),
// are split every way names are written.
func TestNameWords(t *testing.T) {
	for in, want := range map[string][]string{
		"getIssueNumber":     {"get", "issue", "number"},
		"list_pull-requests": {"list", "pull", "requests"},
		"API-get-user":       {"api", "get", "user"},
		"HTMLParser":         {"html", "parser"},
	} {
		if got := Tokenize(in); !slices.Equal(got, want) {
			t.Errorf("Tokenize(%q) = %v, want %v", in, got, want)
		}
	}
}

// sortedNames returns the names of es, sorted.
func sortedNames(es []*catalog.Entry) []string {
	names := make([]string, len(es))
	for i, e := range es {
		names[i] = e.Name
	}
	slices.Sort(names)
	return names
}
