package gateway

import (
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolshelf/toolshelf/catalog"
)

// Every reference to an app is rewritten to the URI the gateway serves
// it at: the tool's _meta.ui.resourceUri and the older flat key when the
// tool is listed directly, and in a call's result (its _meta, resource
// links, embedded resources); other URIs are left alone, and a server
// that keeps its names keeps its apps' URIs.
func TestAppReferencesRewritten(t *testing.T) {
	raw := json.RawMessage(`{"name":"show_forecast","description":"Show a forecast","inputSchema":{"type":"object"},
		"_meta":{"ui":{"resourceUri":"ui://weather/forecast.html","visibility":["model"]},"ui/resourceUri":"ui://weather/forecast.html","other":"ui://x"}}`)
	e, err := catalog.ParseTool("meteo", raw)
	if err != nil {
		t.Fatal(err)
	}
	tool := directTool(&e)
	if ui := tool.Meta["ui"].(map[string]any); ui["resourceUri"] != "ui://meteo/weather/forecast.html" || tool.Meta[appFlatKey] != "ui://meteo/weather/forecast.html" || tool.Meta["other"] != "ui://x" {
		t.Errorf("listed tool's _meta: %v", tool.Meta)
	}
	if got := appOf(&e); got != "ui://weather/forecast.html" {
		t.Errorf("appOf = %q", got)
	}
	res := &mcp.CallToolResult{
		Meta: mcp.Meta{"ui": map[string]any{"resourceUri": "ui://weather/forecast.html"}},
		Content: []mcp.Content{
			&mcp.ResourceLink{URI: "ui://weather/radar.html", Name: "radar"},
			&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "ui://weather/forecast.html", Text: "<html>"}},
			&mcp.ResourceLink{URI: "file:///tmp/a", Name: "a file"},
		},
	}
	appResult(res, appsOf(&e))
	if res.Meta["ui"].(map[string]any)["resourceUri"] != "ui://meteo/weather/forecast.html" ||
		res.Content[0].(*mcp.ResourceLink).URI != "ui://meteo/weather/radar.html" ||
		res.Content[1].(*mcp.EmbeddedResource).Resource.URI != "ui://meteo/weather/forecast.html" ||
		res.Content[2].(*mcp.ResourceLink).URI != "file:///tmp/a" {
		b, _ := json.Marshal(res)
		t.Errorf("result: %s", b)
	}
	e.Unprefixed = true
	if tool := directTool(&e); tool.Meta["ui"].(map[string]any)["resourceUri"] != "ui://weather/forecast.html" {
		t.Errorf("a server that keeps its names: %v", tool.Meta)
	}
}
