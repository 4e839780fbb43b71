package upstream

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolshelf/toolshelf/config"
	"github.com/toolshelf/toolshelf/internal/testenv"
)

// Reconfigure makes the pool's servers those of the new configuration
// while it runs: one added is started, one removed is stopped (its
// process ended) and its tools leave the catalog, one whose plan changed
// is restarted, one unchanged keeps its process; a secret the new
// configuration holds is cut from every server's answers at once.
func TestReconfigure(t *testing.T) {
	keep := fake("keep", "serve", []string{"echo"})
	gone := fake("gone", "serve", []string{"gone_tool"})
	changing := fake("changing", "serve", []string{"change_tool"})
	p := NewPool([]config.ServerConfig{keep, gone, changing}, nil)
	stop := run(t, p)
	defer stop()
	ctx, cancel := context.WithTimeout(context.Background(), testenv.Timeout(time.Minute))
	defer cancel()
	p.Wait(ctx)
	before := map[string]*server{}
	for _, s := range p.list() {
		before[s.cfg.Name] = s
	}

	added := fake("added", "serve", []string{"added_tool"})
	changed := changing
	changed.Env = map[string]string{}
	for k, v := range changing.Env {
		changed.Env[k] = v
	}
	changed.Env["SECRET_TOKEN"] = "tok-new-secret-0123456789"
	ch := p.Reconfigure([]config.ServerConfig{keep, changed, added})
	if !slices.Equal(ch.Added, []string{"added"}) || !slices.Equal(ch.Removed, []string{"gone"}) || !slices.Equal(ch.Restarted, []string{"changing"}) {
		t.Fatalf("changes: %+v", ch)
	}
	select {
	case <-before["gone"].stopped:
	default:
		t.Error("the removed server's supervisor still runs")
	}
	if p.server("keep") != before["keep"] || p.server("changing") == before["changing"] {
		t.Error("the unchanged server was replaced, or the changed one kept")
	}
	if _, ok := p.Catalog().Lookup("mcp__gone__gone_tool"); ok {
		t.Error("the removed server's tool is still in the catalog")
	}
	testenv.Eventually(t, time.Minute, "the added and restarted servers to be ready", func() bool {
		return statusOf(p, "added").State == StateReady && statusOf(p, "changing").State == StateReady
	})
	if _, ok := p.Catalog().Lookup("mcp__added__added_tool"); !ok {
		t.Error("the added server's tool is not in the catalog")
	}
	res, err := p.Scope(nil).Call(ctx, "mcp__keep__echo", json.RawMessage(`{"text": "tok-new-secret-0123456789"}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := textOf(t, res); strings.Contains(got, "tok-new-secret") {
		t.Errorf("a secret the new configuration holds reached a client through another server: %s", got)
	}
	if again := p.Reconfigure([]config.ServerConfig{keep, changed, added}); !again.Empty() {
		t.Errorf("the same configuration again changed %+v", again)
	}
}

// A server that a change removes or restarts answers the calls it is
// answering before it stops: the call in flight gets its result, not
// an error.
func TestReconfigureAnswersCallsUnderWay(t *testing.T) {
	slow := fake("slow", "serve", []string{"slow"})
	p := NewPool([]config.ServerConfig{slow}, nil)
	stop := run(t, p)
	defer stop()
	ctx, cancel := context.WithTimeout(context.Background(), testenv.Timeout(time.Minute))
	defer cancel()
	p.Wait(ctx)
	s := p.server("slow")
	type answer struct {
		res *mcp.CallToolResult
		err error
	}
	done := make(chan answer, 1)
	go func() {
		res, err := p.Scope(nil).Call(ctx, "mcp__slow__slow", json.RawMessage(`{"ms": 2000}`))
		done <- answer{res, err}
	}()
	testenv.Eventually(t, time.Minute, "the call to be under way", s.calls.busy)
	if ch := p.Reconfigure(nil); !slices.Equal(ch.Removed, []string{"slow"}) {
		t.Fatalf("changes: %+v", ch)
	}
	t0 := time.Now()
	// Had the server been stopped first, the call would have failed.
	select {
	case a := <-done:
		t.Logf("answer after %v: %v %+v", time.Since(t0), a.err, a.res)
		if a.err != nil || a.res.IsError {
			t.Fatalf("the call under way when its server was removed: %v %+v", a.err, a.res)
		}
	case <-ctx.Done():
		t.Fatal("timed out: the call under way was not answered")
	}
	if _, err := p.Scope(nil).Call(ctx, "mcp__slow__slow", json.RawMessage(`{"ms": 1}`)); err == nil {
		t.Error("a call of the removed server's tool was made")
	}
}

// A call that outlasts Options.CallDrain ends with its server: the
// change is applied, and the call is told, rather than the change (and
// every later one) waiting on it for ever.
func TestReconfigureEndsACallThatOutlastsTheDrain(t *testing.T) {
	p := NewPool([]config.ServerConfig{fake("w", "serve", []string{"wait"})}, &Options{CallDrain: 100 * time.Millisecond})
	stop := run(t, p)
	defer stop()
	ctx, cancel := context.WithTimeout(context.Background(), testenv.Timeout(time.Minute))
	defer cancel()
	p.Wait(ctx)
	s := p.server("w")
	done := make(chan error, 1)
	go func() {
		_, err := p.Scope(nil).Call(context.WithoutCancel(ctx), "mcp__w__wait", json.RawMessage(`{}`))
		done <- err
	}()
	testenv.Eventually(t, time.Minute, "the call to be under way", s.calls.busy)
	p.Reconfigure(nil)
	select {
	case err := <-done:
		if err == nil {
			t.Error("a call whose server was stopped under it succeeded")
		}
	case <-ctx.Done():
		t.Fatal("timed out: the call was not ended with its server")
	}
}

// busy reports whether a call is under way.
func (c *callCount) busy() bool {
	select {
	case <-c.quiet():
		return false
	default:
		return true
	}
}
