package gateway

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolshelf/toolshelf/catalog"
	"github.com/toolshelf/toolshelf/upstream"
)

// CatalogOnly serves a fixed catalog without servers behind it: its tools
// can be searched, and calling one is a tool error that says why. The
// gateway uses it for a catalog file or the built-in catalog.
type CatalogOnly struct {
	Cat *catalog.Catalog
	// Source names where the catalog came from, for the error.
	Source string
}

func (c CatalogOnly) Catalog() *catalog.Catalog { return c.Cat }
func (c CatalogOnly) Pending() []string         { return nil }
func (c CatalogOnly) Changed() <-chan struct{}  { return nil }
func (c CatalogOnly) Status() []upstream.Status { return nil }
func (c CatalogOnly) Held() []upstream.Held     { return nil }

func (c CatalogOnly) Call(context.Context, string, json.RawMessage) (*mcp.CallToolResult, error) {
	return nil, fmt.Errorf("toolshelf is serving %s, which has no servers to call; configure your MCP servers to call tools", c.Source)
}

func (c CatalogOnly) Offers() []upstream.Offer                      { return nil }
func (c CatalogOnly) Notices() <-chan upstream.Notice               { return nil }
func (c CatalogOnly) SetLogLevel(context.Context, mcp.LoggingLevel) {}
func (c CatalogOnly) Progress(context.Context, *mcp.ProgressNotificationParams) bool {
	return false
}

func (c CatalogOnly) Session(context.Context, string, func(context.Context, *mcp.ClientSession) error) error {
	return fmt.Errorf("toolshelf is serving %s, which has no servers", c.Source)
}

func (c CatalogOnly) Subscribe(context.Context, string, string) error {
	return fmt.Errorf("toolshelf is serving %s, which has no servers", c.Source)
}

func (c CatalogOnly) Unsubscribe(context.Context, string, string) error { return nil }

func (c CatalogOnly) Redact(s string) string { return s }
