package e2e

import (
	"context"
	"fmt"
	"os/exec"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolshelf/toolshelf/internal/testenv"
)

// Nothing a replica acknowledged is lost: the audit record and the
// learned pair of every answered call reach the store, exactly once,
// when the replica is killed (SIGKILL) right after answering, and when
// the store was down while it answered and then it was killed. The next
// replica started on the same journal folder lands them.
func TestNothingAcknowledgedIsLost(t *testing.T) {
	t.Parallel()
	srv := testenv.OwnPostgres(t)
	url := srv.Database(t)
	dir := t.TempDir()
	journal := t.TempDir()
	cfg := serverConfig(t, dir, "tracker", "create_ticket", nil)
	env := fleetEnv(t, url)
	replica := func() (*exec.Cmd, string) {
		cmd := exec.Command(testenv.ServeScript(t, toolshelf, env, cfg, "--http", "127.0.0.1:0", "--audit", "store", "--journal", journal))
		return cmd, testenv.Listening(t, cmd, "a replica", testenv.URLLine)
	}
	ctx, cancel := context.WithTimeout(context.Background(), testenv.Timeout(3*time.Minute))
	defer cancel()
	// calls makes n calls, each found by a search of its own words, and
	// returns once every one was answered. A session records at most 8
	// pairs: each takes 5 calls.
	calls := func(url string, from, n int) {
		t.Helper()
		var cs *mcp.ClientSession
		for i := from; i < from+n; i++ {
			if (i-from)%5 == 0 {
				if cs != nil {
					cs.Close()
				}
				cs = connectMCP(t, ctx, url)
			}
			query := fmt.Sprintf("open ticket number %d in the tracker", i)
			if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "search_tools", Arguments: map[string]any{"query": query}}); err != nil || res.IsError {
				t.Fatalf("search %d: %v %s", i, err, text(res))
			}
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "call_tool", Arguments: map[string]any{"name": "mcp__tracker__create_ticket", "arguments": map[string]any{"text": query}}})
			if err != nil || res.IsError {
				t.Fatalf("call %d: %v %s", i, err, text(res))
			}
		}
		cs.Close()
	}
	db := testenv.SQL(t, url)
	landed := func(want int, when string) {
		t.Helper()
		var records, pairs int
		testenv.Eventually(t, 60*time.Second, when, func() bool {
			err := db.QueryRow(ctx, `SELECT (SELECT count(*) FROM audit_records WHERE record->>'kind' = 'call'),
				(SELECT coalesce(sum(count), 0) FROM learned_pairs WHERE tool = 'mcp__tracker__create_ticket')`).Scan(&records, &pairs)
			return err == nil && records >= want && pairs >= want
		})
		if records != want || pairs != want {
			t.Errorf("%s: %d call records and %d learned, want %d of each (exactly once)", when, records, pairs, want)
		}
	}

	// Killed right after answering 40 calls.
	first, u := replica()
	calls(u, 0, 40)
	first.Process.Kill()
	first.Wait()

	// The store down while 30 calls are answered, then killed.
	second, u := replica()
	srv.Down()
	calls(u, 40, 30)
	second.Process.Kill()
	second.Wait()
	srv.Up(t)

	replica()
	landed(70, "every answered call's record and pair, after two kills and the store's absence")
}
