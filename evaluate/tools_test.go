package evaluate

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/toolshelf/toolshelf/catalog"
)

func TestReadTools(t *testing.T) {
	in := `{"id": "srv::a", "server": "srv", "name": "a", "description": "does a", "input_schema": {"type": "object", "properties": {"p": {"type": "string"}}}}

{"server": "math", "name": "math.factorial", "description": "Factorial."}
`
	entries, err := ReadTools(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	c := catalog.New(entries, nil)
	if diff := cmp.Diff([]string{"mcp__math__math_factorial", "mcp__srv__a"}, c.Names()); diff != "" {
		t.Errorf("names (-want +got):\n%s", diff)
	}
	e, _ := c.Lookup("mcp__srv__a")
	if e.ID != "srv::a" || len(e.Params) != 1 || e.Description != "does a" {
		t.Errorf("entry = %+v", e)
	}
	if e, _ := c.Lookup("mcp__math__math_factorial"); e.ID != "math.factorial" {
		t.Errorf("id defaults to the name; got %q", e.ID)
	}

	bad := []struct {
		in   string
		line int
		want string
	}{
		{"{\"name\": \"a\"}\n{\"name\": 3}\n", 2, "wrong type"},
		{"{\"name\": \"a\"}\n\n{oops}\n", 3, "invalid character"},
		{"{\"id\": \"x\", \"name\": \"a\"}\n{\"id\": \"x\", \"name\": \"b\"}\n", 2, `duplicate tool id "x"`},
		{"{\"server\": \"s\"}\n", 1, `no "name"`},
	}
	for _, b := range bad {
		_, err := ReadTools(strings.NewReader(b.in))
		var le *catalog.FileError
		if !errors.As(err, &le) || le.Line != b.line || !strings.Contains(err.Error(), b.want) {
			t.Errorf("ReadTools(%q) error = %v, want line %d mentioning %q", b.in, err, b.line, b.want)
		}
	}
}

func TestReadServers(t *testing.T) {
	servers, err := ReadServers(strings.NewReader(`{"server": "heroku", "description": "Heroku platform", "categories": ["cloud"]}` + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]catalog.Server{{Name: "heroku", Description: "Heroku platform"}}, servers); diff != "" {
		t.Errorf("servers (-want +got):\n%s", diff)
	}
	if _, err := ReadServers(strings.NewReader(`{"description": "x"}`)); err == nil {
		t.Error("a server without a name was accepted")
	}
}
