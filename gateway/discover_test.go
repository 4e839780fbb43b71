package gateway

import (
	"context"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolshelf/toolshelf/config"
)

// A client of MCP 2026-07-28 discovers what the gateway serves end to
// end: prompts, resources, completions and MCP Apps only when a server
// offers them; tasks always (the gateway runs them). A client with a
// session is told all of them at initialize, as servers may come later.
func TestDiscoverNarrowed(t *testing.T) {
	discovered := func(t *testing.T, servers ...config.ServerConfig) (modern, session *mcp.ServerCapabilities) {
		t.Helper()
		g, _ := gatewayFor(t, nil, servers...)
		url := httpGateway(t, g, nil)
		return httpClient(t, url, nil, nil).InitializeResult().Capabilities, httpSessionClient(t, url, nil, nil).InitializeResult().Capabilities
	}
	modern, session := discovered(t, standardUpstreams(t)...)
	if modern.Prompts != nil || modern.Resources != nil || modern.Completions != nil || modern.Extensions[appsExtension] != nil {
		t.Errorf("servers with tools only: discovered %+v", modern)
	}
	if modern.Tools == nil || modern.Extensions[tasksExtension] == nil {
		t.Errorf("tools and tasks are served: %+v", modern)
	}
	if session.Prompts == nil || session.Resources == nil || session.Extensions[appsExtension] == nil {
		t.Errorf("initialize declares everything a session may see later: %+v", session)
	}

	srv := mcp.NewServer(&mcp.Implementation{Name: "weather", Version: "1"}, nil)
	srv.AddPrompt(&mcp.Prompt{Name: "forecast_summary"}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{}, nil
	})
	srv.AddTool(&mcp.Tool{Name: "show_forecast", Description: "Show the forecast", InputSchema: map[string]any{"type": "object"},
		Meta: mcp.Meta{"ui": map[string]any{"resourceUri": "ui://weather/forecast.html"}}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{}, nil
		})
	srv.AddResource(&mcp.Resource{URI: "ui://weather/forecast.html", Name: "forecast", MIMEType: "text/html;profile=mcp-app"},
		func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, MIMEType: "text/html;profile=mcp-app", Text: "<h1>Forecast</h1>"}}}, nil
		})
	modern, _ = discovered(t, inMemory("weather", srv))
	if modern.Prompts == nil || modern.Resources == nil || modern.Completions == nil || modern.Extensions[appsExtension] == nil {
		t.Errorf("a server with a prompt and an app: discovered %+v", modern)
	}
}
