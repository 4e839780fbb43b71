package e2e

import (
	"context"
	"flag"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolshelf/toolshelf/internal/testenv"
)

var fleetLoad = flag.Duration("fleet-load", 3*time.Second, "how long TestFleetUnderLoad loads each setup (docs/benchmarks.md used 60s)")

// The store restarted while two stateless replicas serve calls: the
// replicas keep answering from what they hold, the audit records of the
// calls made meanwhile wait in memory, and once the store is back every
// call a client got an answer to is in the fleet's trail.
func TestStoreRestartUnderLoad(t *testing.T) {
	t.Parallel()
	srv := testenv.OwnPostgres(t)
	url := srv.Database(t)
	cfg := serverConfig(t, t.TempDir(), "tracker", "create_ticket", nil)
	_, front, _ := startFleet(t, url, cfg, 2, "--stateless", "--audit", "store")
	ctx, cancel := context.WithTimeout(context.Background(), testenv.Timeout(2*time.Minute))
	defer cancel()

	var answered, failed atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 4 {
		cs := connectMCP(t, ctx, front+"/mcp")
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "call_tool", Arguments: map[string]any{"name": "mcp__tracker__create_ticket", "arguments": map[string]any{"text": "x"}}})
				if err != nil || res.IsError {
					failed.Add(1)
					t.Errorf("a call while the store restarts: %v %s", err, text(res))
					continue
				}
				answered.Add(1)
			}
		})
	}
	testenv.Eventually(t, 30*time.Second, "calls before the restart", func() bool { return answered.Load() >= 20 })
	srv.Restart(t)
	before := answered.Load()
	testenv.Eventually(t, 30*time.Second, "calls after the restart", func() bool { return answered.Load() >= before+20 })
	close(stop)
	wg.Wait()
	if failed.Load() > 0 {
		t.Fatalf("%d of %d calls failed across the restart", failed.Load(), failed.Load()+answered.Load())
	}

	db := testenv.SQL(t, url)
	var stored int64
	testenv.Eventually(t, 30*time.Second, "every answered call's record in the store", func() bool {
		err := db.QueryRow(ctx, "SELECT count(*) FROM audit_records WHERE record->>'kind' = 'call'").Scan(&stored)
		return err == nil && stored >= answered.Load()
	})
	t.Logf("%d calls answered across a restart of the store; %d records in the store", answered.Load(), stored)
}

// Fifty clients on one replica with the embedded store, then on three
// replicas on one store (with sessions: two requests in three are sent
// on to the session's replica; and stateless), each searching and
// calling for -fleet-load: no well-formed request fails; the latencies
// are logged for docs/benchmarks.md.
func TestFleetUnderLoad(t *testing.T) {
	t.Parallel()
	url := testenv.Postgres(t)
	cfg := serverConfig(t, t.TempDir(), "tracker", "create_ticket,close_ticket", nil)
	for _, setup := range []struct {
		name     string
		replicas int
		store    string
		flags    []string
	}{
		{"one replica, embedded store", 1, "", nil},
		{"three replicas on PostgreSQL, sessions", 3, url, nil},
		{"three replicas on PostgreSQL, stateless", 3, url, []string{"--stateless"}},
	} {
		t.Run(strings.ReplaceAll(setup.name, " ", "_"), func(t *testing.T) {
			_, front, _ := startFleet(t, setup.store, cfg, setup.replicas, setup.flags...)
			ctx, cancel := context.WithTimeout(context.Background(), testenv.Timeout(2*time.Minute)+*fleetLoad)
			defer cancel()
			const clients = 50
			sessions := make([]*mcp.ClientSession, clients)
			var wg sync.WaitGroup
			for i := range sessions {
				wg.Go(func() { sessions[i] = connectMCP(t, ctx, front+"/mcp") })
			}
			wg.Wait()
			var mu sync.Mutex
			var took []time.Duration
			var failed atomic.Int64
			end := time.Now().Add(*fleetLoad)
			for _, cs := range sessions {
				wg.Go(func() {
					var mine []time.Duration
					for i := 0; time.Now().Before(end); i++ {
						params := &mcp.CallToolParams{Name: "search_tools", Arguments: map[string]any{"query": "create a ticket"}}
						if i%2 == 1 {
							params = &mcp.CallToolParams{Name: "call_tool", Arguments: map[string]any{"name": "mcp__tracker__create_ticket", "arguments": map[string]any{"text": "x"}}}
						}
						start := time.Now()
						res, err := cs.CallTool(ctx, params)
						mine = append(mine, time.Since(start))
						if err != nil || res.IsError {
							if failed.Add(1) <= 3 {
								t.Errorf("%s: %v %s", params.Name, err, text(res))
							}
						}
					}
					mu.Lock()
					took = append(took, mine...)
					mu.Unlock()
				})
			}
			wg.Wait()
			slices.Sort(took)
			pct := func(p float64) time.Duration { return took[int(p*float64(len(took)-1))].Round(10 * time.Microsecond) }
			if len(took) == 0 {
				t.Fatal("no request was made")
			}
			t.Logf("| %s | %d clients, %v | %d requests (%.0f/s) | %d errors | p50 %v | p99 %v |",
				setup.name, clients, *fleetLoad, len(took), float64(len(took))/fleetLoad.Seconds(), failed.Load(), pct(0.5), pct(0.99))
			if failed.Load() > 0 {
				t.Errorf("%d of %d well-formed requests failed", failed.Load(), len(took))
			}
		})
	}
}
