package upstream

import (
	"context"
	"encoding/json"
	"strconv"
	"testing"
	"time"

	"github.com/toolshelf/toolshelf/config"
	"github.com/toolshelf/toolshelf/internal/mcptest"
	"github.com/toolshelf/toolshelf/internal/testenv"
)

// Hostile servers, each a real subprocess, beside a well-behaved one: a
// tools/list of 20,000 tools in one message, a schema nested 100,000
// deep, a storm of 10,000 tools/list_changed, and 20 MB of garbage on
// stdout. Each costs bounded work, and the good server serves throughout.
func TestPoolHostileServers(t *testing.T) {
	listings := `[{"name":"listings","description":"How many listings were served.","inputSchema":{"type":"object"}}]`
	hostile := func(name, kind string) config.ServerConfig {
		cfg := fake(name, "raw", nil, mcptest.RawHostileEnv+"="+kind, mcptest.RawToolsEnv+"="+listings)
		cfg.Timeout = testenv.Timeout(20 * time.Second)
		return cfg
	}
	p := startPool(t, []config.ServerConfig{
		fake("good", "serve", []string{"echo"}),
		hostile("huge", "huge"), hostile("deep", "deep"), hostile("storm", "storm"), hostile("flood", "flood"),
	}, nil)
	ctx := context.Background()
	callGood := func(when string) {
		t.Helper()
		if res, err := p.Scope(nil).Call(ctx, "mcp__good__echo", json.RawMessage(`{"text":"hi"}`)); err != nil || res.IsError {
			t.Errorf("the good server %s: %v", when, err)
		}
	}
	callGood("beside hostile ones")

	// A huge list is taken whole: it is one message, within launcher.MaxFrame.
	if st := statusOf(p, "huge"); st.State != StateReady || st.Tools != mcptest.HugeTools {
		t.Errorf("huge: %+v", st)
	}
	// A schema too deep to decode fails the server with a reason; the
	// others are unaffected.
	if st := statusOf(p, "deep"); st.State == StateReady && len(toolNames(p.Catalog(), "deep")) > 1 {
		t.Errorf("deep: the nested schema was taken: %+v", st)
	} else {
		t.Logf("deep: %s %s", st.State, st.Error)
	}
	// A storm of list_changed is coalesced: far fewer listings than
	// notifications, and the server still answers.
	var n int
	eventually(t, "the storm to pass", func() bool {
		res, err := p.Scope(nil).Call(ctx, "mcp__storm__listings", nil)
		if err != nil {
			return false
		}
		var echo struct{ Arguments json.RawMessage }
		json.Unmarshal([]byte(textOf(t, res)), &echo)
		n, _ = strconv.Atoi(string(echo.Arguments))
		return statusOf(p, "storm").State == StateReady
	})
	if n > mcptest.StormChanges/100 {
		t.Errorf("%d list_changed notifications led to %d listings", mcptest.StormChanges, n)
	}
	t.Logf("storm: %d notifications, %d listings", mcptest.StormChanges, n)
	// A flood on stdout is skipped line by line; the server's calls work
	// and what is kept of the flood is bounded.
	eventually(t, "the flooding server to answer", func() bool {
		_, err := p.Scope(nil).Call(ctx, "mcp__flood__listings", nil)
		return err == nil
	})
	if s := p.server("flood"); s != nil {
		s.mu.Lock()
		c := s.conn
		s.mu.Unlock()
		if c != nil && c.proc != nil && len(c.proc.Output()) > (256+16)<<10 { // stray stdout, then stderr: each bounded
			t.Errorf("%d bytes of the flood kept", len(c.proc.Output()))
		}
	}
	if st := statusOf(p, "flood"); st.State != StateReady {
		t.Errorf("flood: %+v", st)
	}
	callGood("after the hostile ones")
}
