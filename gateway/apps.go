package gateway

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolshelf/toolshelf/catalog"
	"github.com/toolshelf/toolshelf/upstream"
)

// MCP Apps (the io.modelcontextprotocol/ui extension): a tool names, in
// _meta.ui.resourceUri (or the older flat key "ui/resourceUri"), a ui://
// resource whose HTML the client renders. Through the gateway an app is
// served under a URI that says which server it comes from, by the rule
// tools follow (mcp__<server>__<tool>, unless the server keeps its
// names): ui://<server>/<the server's URI without ui://>. Every reference
// is rewritten to match: on tools listed directly, in search matches, in
// call results; and resources/read maps the served URI back. The HTML is
// pinned like a tool (readApp).

const appFlatKey = "ui/resourceUri"

// isApp reports whether a resource URI is an app's.
// appsExtension is MCP Apps' name among a server's capabilities.
const appsExtension = "io.modelcontextprotocol/ui"

func isApp(uri string) bool { return strings.HasPrefix(uri, upstream.AppScheme) }

// appsOf returns how a tool's server's app URIs are served.
func appsOf(e *catalog.Entry) func(string) string {
	return func(uri string) string { return upstream.AppURI(e.Server, e.Unprefixed, uri) }
}

// withApps returns a tool's definition as listed: its _meta's app
// references rewritten to the URIs the gateway serves them at.
func withApps(e *catalog.Entry, t *mcp.Tool) {
	if t.Meta != nil {
		rewriteAppMeta(t.Meta, appsOf(e))
	}
}

// rewriteAppMeta rewrites the app URIs of a _meta object in place: the
// ui object's resourceUri and the flat key. It reports whether it changed
// anything.
func rewriteAppMeta(meta map[string]any, served func(string) string) bool {
	changed := false
	if ui, ok := meta["ui"].(map[string]any); ok {
		if u, ok := ui["resourceUri"].(string); ok && isApp(u) {
			ui["resourceUri"], changed = served(u), true
		}
	}
	if u, ok := meta[appFlatKey].(string); ok && isApp(u) {
		meta[appFlatKey], changed = served(u), true
	}
	return changed
}

// appOf returns the app a tool's definition names (as the server names
// it), or "".
func appOf(e *catalog.Entry) string {
	if !bytes.Contains(e.Raw, []byte(`resourceUri"`)) {
		return "" // most tools: no need to decode the definition
	}
	var t struct {
		Meta map[string]any `json:"_meta"`
	}
	if json.Unmarshal(e.Raw, &t) != nil || t.Meta == nil {
		return ""
	}
	if ui, ok := t.Meta["ui"].(map[string]any); ok {
		if u, ok := ui["resourceUri"].(string); ok && isApp(u) {
			return u
		}
	}
	if u, ok := t.Meta[appFlatKey].(string); ok && isApp(u) {
		return u
	}
	return ""
}

// appResult rewrites the app references of a tool's result: its _meta,
// and resource links and embedded resources of the server's apps.
func appResult(res *mcp.CallToolResult, served func(string) string) {
	if res == nil {
		return
	}
	if res.Meta != nil {
		rewriteAppMeta(res.Meta, served)
	}
	for _, c := range res.Content {
		switch c := c.(type) {
		case *mcp.ResourceLink:
			if isApp(c.URI) {
				c.URI = served(c.URI)
			}
		case *mcp.EmbeddedResource:
			if c.Resource != nil && isApp(c.Resource.URI) {
				c.Resource.URI = served(c.Resource.URI)
			}
		}
	}
}
