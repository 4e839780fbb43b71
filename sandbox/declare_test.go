package sandbox

import (
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"
)

func TestDeclaration(t *testing.T) {
	input := json.RawMessage(`{"type":"object","properties":{
		"entities":{"type":"array","description":"An array of entities to create","items":{"type":"object","properties":{"name":{"type":"string"},"observations":{"type":"array","items":{"type":"string"}}},"required":["name"]}},
		"mode":{"type":"string","enum":["fast","careful"]},
		"limit":{"type":["integer","null"]},
		"where":{"$ref":"#/$defs/place"},
		"odd-name":{"description":"a */ comment closer"}},
		"required":["entities"],"$defs":{"place":{"type":"object","properties":{"city":{"type":"string"}}}}}`)
	output := json.RawMessage(`{"type":"object","properties":{"created":{"type":"integer"}},"required":["created"]}`)
	got := Declaration("memory", "create_entities", "Create entities\nin the graph.", input, output)
	want := `/** Create entities in the graph. */
tools.memory.create_entities(args: {
  /** An array of entities to create */
  entities: { name: string; observations?: string[] }[];
  limit?: number | null;
  mode?: "fast" | "careful";
  /** a * / comment closer */
  "odd-name"?: any;
  where?: { city?: string };
}): Promise<{ created: number }>`
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if got := Declaration("server-everything", "get-sum", "", nil, nil); got != `tools["server-everything"]["get-sum"](args?: {}): Promise<any>` {
		t.Errorf("names that are not identifiers: %s", got)
	}
}

var comments = regexp.MustCompile(`/\*\*.*?\*/`)

// Every tool of the built-in catalog (519 real tools of 20 npm servers)
// has a declaration that names each required argument, closes every
// bracket it opens, and is shorter than its input schema.
func TestDeclarationsOfRealTools(t *testing.T) {
	data, err := os.ReadFile("../internal/builtin/catalog.json")
	if err != nil {
		t.Fatal(err)
	}
	var cat struct {
		Servers []struct {
			Name  string
			Tools []struct {
				Name         string
				Description  string
				InputSchema  json.RawMessage
				OutputSchema json.RawMessage
			}
		}
	}
	if err := json.Unmarshal(data, &cat); err != nil {
		t.Fatal(err)
	}
	var tools, declared, schemas int
	for _, srv := range cat.Servers {
		for _, tool := range srv.Tools {
			tools++
			d := Declaration(srv.Name, tool.Name, tool.Description, tool.InputSchema, tool.OutputSchema)
			declared += len(d)
			schemas += len(tool.InputSchema) + len(tool.OutputSchema) + len(tool.Description)
			code := comments.ReplaceAllString(d, "")
			for _, pair := range []string{"{}", "()", "[]", "<>"} {
				if strings.Count(code, pair[:1]) != strings.Count(code, pair[1:]) {
					t.Errorf("%s/%s: unbalanced %s:\n%s", srv.Name, tool.Name, pair, d)
				}
			}
			var in struct{ Required []string }
			json.Unmarshal(tool.InputSchema, &in)
			for _, r := range in.Required {
				if !strings.Contains(d, property(r)+":") {
					t.Errorf("%s/%s: required %q missing:\n%s", srv.Name, tool.Name, r, d)
				}
			}
		}
	}
	if tools < 500 {
		t.Fatalf("%d tools", tools)
	}
	t.Logf("%d tools: declarations %d bytes, schemas and descriptions %d bytes (%.0f%%)", tools, declared, schemas, 100*float64(declared)/float64(schemas))
	if declared >= schemas {
		t.Errorf("declarations (%d bytes) are not shorter than the schemas (%d)", declared, schemas)
	}
}
