package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolshelf/toolshelf/catalog"
	"github.com/toolshelf/toolshelf/upstream"
)

// countingUpstream counts subscriptions and calls reaching it.
type countingUpstream struct {
	CatalogOnly
	subs, unsubs, calls int
}

func (c *countingUpstream) Subscribe(context.Context, string, string) error   { c.subs++; return nil }
func (c *countingUpstream) Unsubscribe(context.Context, string, string) error { c.unsubs++; return nil }
func (c *countingUpstream) Call(context.Context, string, json.RawMessage) (*mcp.CallToolResult, error) {
	c.calls++
	return &mcp.CallToolResult{}, nil
}

// Views share one upstream subscription per resource, and a view keeps
// its profile's tools and servers whatever is asked of it.
func TestViews(t *testing.T) {
	var es []catalog.Entry
	for _, n := range [][2]string{{"a", "read"}, {"a", "write"}, {"b", "read"}} {
		raw, _ := json.Marshal(map[string]any{"name": n[1], "inputSchema": map[string]any{"type": "object"}})
		e, _ := catalog.ParseTool(n[0], raw)
		es = append(es, e)
	}
	up := &countingUpstream{CatalogOnly: CatalogOnly{Cat: catalog.New(es, nil)}}
	vs := NewViews(up)
	ro := vs.For(&upstream.Profile{Name: "ro", Servers: []string{"a"}, Allow: []string{"*__read"}})
	all := vs.For(nil)
	ctx := context.Background()

	if names := ro.Catalog().Names(); len(names) != 1 || names[0] != "mcp__a__read" {
		t.Errorf("the profile sees %v", names)
	}
	if _, err := ro.Call(ctx, "mcp__a__write", nil); !errors.Is(err, upstream.ErrUnknownTool) || up.calls != 0 {
		t.Errorf("a call outside the profile: %v (%d calls upstream)", err, up.calls)
	}
	if err := ro.Subscribe(ctx, "b", "file:///x"); err == nil {
		t.Error("a subscription to a server outside the profile was taken")
	}

	ro.Subscribe(ctx, "a", "file:///x")
	all.Subscribe(ctx, "a", "file:///x")
	ro.Unsubscribe(ctx, "a", "file:///x")
	if up.subs != 1 || up.unsubs != 0 {
		t.Errorf("after two subscribed and one left: %d subscriptions, %d ended upstream", up.subs, up.unsubs)
	}
	all.Unsubscribe(ctx, "a", "file:///x")
	all.Unsubscribe(ctx, "a", "file:///x") // one too many: nothing happens
	if up.subs != 1 || up.unsubs != 1 {
		t.Errorf("after both left: %d subscriptions, %d ended upstream", up.subs, up.unsubs)
	}
}
