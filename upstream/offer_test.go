package upstream

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolshelf/toolshelf/config"
	"github.com/toolshelf/toolshelf/internal/mcptest"
)

// A server's prompts, resources and templates are listed with its tools,
// cached with them, and there before the server starts again.
func TestPoolOffersCached(t *testing.T) {
	dir := t.TempDir()
	fx := fake("fx", "fixture", nil)
	p := NewPool([]config.ServerConfig{fx}, &Options{CacheDir: dir})
	stop := run(t, p)
	if err := p.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	offers := p.Offers()
	if len(offers) != 1 || offers[0].Server != "fx" || len(offers[0].Prompts) != 4 || len(offers[0].Resources) != 3 || len(offers[0].Templates) != 1 || !offers[0].Subscribe || !offers[0].Complete {
		t.Fatalf("offers: %+v", offers)
	}
	stop()

	hung := fx
	hung.Env = map[string]string{mcptest.ModeEnv: "hang"}
	hung.Timeout = 3 * time.Second
	p2 := NewPool([]config.ServerConfig{hung}, &Options{CacheDir: dir})
	cached := p2.Offers()
	if len(cached) != 1 || len(cached[0].Prompts) != 4 || cached[0].Prompts[0].Name == "" {
		t.Errorf("cached offers: %+v", cached)
	}
}

// With "prefix": false, tools keep the names their servers give them; a
// name two such servers share is kept by the first, and the second's
// status names both.
func TestPoolNoPrefix(t *testing.T) {
	dial := func(tools ...string) func(context.Context) (mcp.Transport, error) {
		srv, err := mcptest.NewServer("mem", mcptest.SimpleTools(tools...), nil)
		if err != nil {
			t.Fatal(err)
		}
		return func(context.Context) (mcp.Transport, error) {
			st, ct := mcp.NewInMemoryTransports()
			go srv.Run(context.Background(), st)
			return ct, nil
		}
	}
	p := startPool(t, []config.ServerConfig{
		{Name: "alpha", Dial: dial("read", "write"), NoPrefix: true},
		{Name: "beta", Dial: dial("read", "list"), NoPrefix: true},
		{Name: "gamma", Dial: dial("read")},
	}, nil)
	names := p.Catalog().Names()
	for _, want := range []string{"read", "write", "list", "mcp__gamma__read"} {
		if !slices.Contains(names, want) {
			t.Errorf("%s not among %v", want, names)
		}
	}
	if e, _ := p.Catalog().Lookup("read"); e.Server != "alpha" {
		t.Errorf("read belongs to %s, want alpha (first in name order)", e.Server)
	}
	if st := statusOf(p, "beta"); !strings.Contains(st.Error, `"read"`) || !strings.Contains(st.Error, "alpha") {
		t.Errorf("beta's status does not name the collision: %+v", st)
	}
	if res, err := p.Scope(nil).Call(context.Background(), "list", nil); err != nil || res.IsError {
		t.Errorf("calling an unprefixed tool: %v %+v", err, res)
	}
}
