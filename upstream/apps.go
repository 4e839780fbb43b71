package upstream

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolshelf/toolshelf/pin"
)

// MCP Apps (io.modelcontextprotocol/ui): a tool names in its _meta a
// ui:// resource, HTML that the client renders. What a client renders
// can do as much harm as a tool's description, so an app is pinned like
// a tool: the pool reads a server's apps when it lists its tools, judges
// each against the lock file under its ui:// URI (trusted on first use,
// held when it changed, approved with `toolshelf tools approve
// SERVER/ui://...`), and serves the copy it judged (App), never a later
// one the lock file has not seen.

// Bounds of the apps read of one server.
const (
	maxApps     = 32
	maxAppBytes = 4 << 20
)

// AppScheme begins an app's URI.
const AppScheme = "ui://"

// AppURI is the URI under which a server's app is served: the server's
// name after ui://, as tools are prefixed with theirs, unless the
// server's tools keep their own names.
func AppURI(server string, unprefixed bool, uri string) string {
	if unprefixed || !strings.HasPrefix(uri, AppScheme) {
		return uri
	}
	return AppScheme + server + "/" + strings.TrimPrefix(uri, AppScheme)
}

// appsNamed returns the ui:// URIs a tool list's _meta names (ui's
// resourceUri, or the older flat "ui/resourceUri") and the listed ui://
// resources, in order, each once.
func appsNamed(tools []json.RawMessage, resources []*mcp.Resource) []string {
	var uris []string
	add := func(u string) {
		if strings.HasPrefix(u, AppScheme) && !slices.Contains(uris, u) {
			uris = append(uris, u)
		}
	}
	for _, raw := range tools {
		var t struct {
			Meta struct {
				UI struct {
					ResourceURI string `json:"resourceUri"`
				} `json:"ui"`
				Flat string `json:"ui/resourceUri"`
			} `json:"_meta"`
		}
		if json.Unmarshal(raw, &t) == nil {
			add(t.Meta.UI.ResourceURI)
			add(t.Meta.Flat)
		}
	}
	for _, r := range resources {
		if r != nil {
			add(r.URI)
		}
	}
	return uris
}

// readApps reads the apps a server's tools and resources name, at most
// maxApps of them, each within maxAppBytes; one that cannot be read is
// left out (and cannot be served).
func (c *conn) readApps(ctx context.Context, tools []json.RawMessage, resources []*mcp.Resource) (map[string]*mcp.ReadResourceResult, error) {
	uris := appsNamed(tools, resources)
	if len(uris) == 0 || c.caps == nil || c.caps.Resources == nil {
		return nil, nil
	}
	var errs []error
	if len(uris) > maxApps {
		errs = append(errs, fmt.Errorf("%d apps; the first %d are served", len(uris), maxApps))
		uris = uris[:maxApps]
	}
	apps := map[string]*mcp.ReadResourceResult{}
	for _, u := range uris {
		res, err := c.session.ReadResource(ctx, &mcp.ReadResourceParams{URI: u})
		if err != nil {
			errs = append(errs, fmt.Errorf("reading the app %s: %w", u, err))
			continue
		}
		if n := appSize(res); n > maxAppBytes {
			errs = append(errs, fmt.Errorf("the app %s is %d bytes, over %d; left out", u, n, maxAppBytes))
			continue
		}
		apps[u] = res
	}
	return apps, errors.Join(errs...)
}

func appSize(res *mcp.ReadResourceResult) int {
	n := 0
	for _, c := range res.Contents {
		if c != nil {
			n += len(c.Text) + len(c.Blob)
		}
	}
	return n
}

// appDefinition is what the lock file pins of an app: its URI, and each
// content's type and text (or blob, as base64) and _meta (an app's
// _meta.ui says what the client grants it: its domains, its sandbox).
func appDefinition(uri string, res *mcp.ReadResourceResult) (pin.Definition, error) {
	var contents []map[string]any
	for _, c := range res.Contents {
		if c == nil {
			continue
		}
		m := map[string]any{"mimeType": c.MIMEType}
		if c.Text != "" {
			m["text"] = c.Text
		}
		if len(c.Blob) > 0 {
			m["blob"] = base64.StdEncoding.EncodeToString(c.Blob)
		}
		if len(c.Meta) > 0 {
			m["_meta"] = c.Meta
		}
		contents = append(contents, m)
	}
	raw, err := json.Marshal(map[string]any{"name": uri, "_meta": map[string]any{"ui": map[string]any{"contents": contents}}})
	if err != nil {
		return nil, err
	}
	return pin.Canonical(raw)
}

// judgeApps judges a server's apps against the lock file, as judge does
// its tools, and returns the trusted ones and the held ones. Called by
// publish, with pubMu held.
func (p *Pool) judgeApps(s *server, apps map[string]*mcp.ReadResourceResult) (trusted map[string]*mcp.ReadResourceResult, held []Quarantined) {
	if p.opts.Pins == nil {
		return apps, nil
	}
	trusted = map[string]*mcp.ReadResourceResult{}
	for _, uri := range slices.Sorted(maps.Keys(apps)) {
		def, err := appDefinition(uri, apps[uri])
		if err != nil {
			continue
		}
		v := p.judgeTool(s, uri, def, nil)
		if v.OK() {
			trusted[uri] = apps[uri]
			continue
		}
		held = append(held, Quarantined{Server: s.cfg.Name, Tool: uri, Name: AppURI(s.cfg.Name, s.cfg.NoPrefix, uri),
			Status: v.Status, Why: "an app: " + strings.Replace(v.Why, "its definition", "its content", 1), Pinned: v.Pinned, Current: def})
	}
	return trusted, held
}

// ErrAppUnknown is reading a ui:// resource the pool did not read and
// judge when the server connected.
var ErrAppUnknown = errors.New("toolshelf serves only the apps it read and pinned when the server connected; this one was not among them")

// App returns a server's app (uri as the server names it) as the pool
// judged it: the copy the lock file trusts, ErrQuarantined while it is
// held, ErrAppUnknown for one never read. The profile must have the
// server.
func (sc *Scope) App(server, uri string) (*mcp.ReadResourceResult, error) {
	if !sc.HasServer(server) {
		return nil, fmt.Errorf("%w: server %s is not in this profile", ErrUnknownTool, server)
	}
	p := sc.pool
	p.pubMu.Lock()
	defer p.pubMu.Unlock()
	if res, ok := p.apps[server][uri]; ok {
		return res, nil
	}
	for _, h := range p.quarantined[server] {
		if h.Tool == uri {
			return nil, fmt.Errorf("%w: %s", ErrQuarantined, h.Message())
		}
	}
	return nil, ErrAppUnknown
}

// rereadApps reads a server's apps again after its tool list changed
// (a tool may name a new app, or a changed one), before the tools are
// published with them.
func (s *server) rereadApps(ctx context.Context, c *conn, tools []json.RawMessage) {
	s.offers.mu.Lock()
	resources := s.offers.offer.Resources
	s.offers.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, s.cfg.StartTimeout())
	defer cancel()
	apps, err := c.readApps(ctx, tools, resources)
	if err != nil {
		s.logger.Warn("reading the server's apps failed; those are not served", "error", s.redactor().Redact(err.Error()))
	}
	s.offers.mu.Lock()
	s.offers.offer.Apps = apps
	s.offers.mu.Unlock()
}
