package gateway

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolshelf/toolshelf/audit"
	"github.com/toolshelf/toolshelf/config"
	"github.com/toolshelf/toolshelf/internal/mcptest"
	"github.com/toolshelf/toolshelf/internal/testenv"
	"github.com/toolshelf/toolshelf/journal"
	"github.com/toolshelf/toolshelf/learn"
	"github.com/toolshelf/toolshelf/store"
	"github.com/toolshelf/toolshelf/upstream"
)

// BenchmarkDurableCalls measures a search and a call through the gateway
// with the audit log and learning in a shared store (a real PostgreSQL),
// as before the journal (records wait in memory for the store) and
// durable (each answer's record and pair in the journal, fsynced in
// groups, before the answer leaves), with 1 and 16 clients at once:
//
//	go test -run '^$' -bench BenchmarkDurableCalls -benchtime 3s ./gateway
func BenchmarkDurableCalls(b *testing.B) {
	url := testenv.Postgres(b)
	for _, durable := range []bool{false, true} {
		for _, clients := range []int{1, 16} {
			b.Run(fmt.Sprintf("durable=%v/clients=%d", durable, clients), func(b *testing.B) {
				ctx, cancel := context.WithCancel(context.Background())
				db, err := store.Open(ctx, url)
				if err != nil {
					b.Fatal(err)
				}
				var j *journal.Journal
				if durable {
					if j, err = journal.Open(b.TempDir(), nil); err != nil {
						b.Fatal(err)
					}
				}
				log := audit.OpenShared(db, &audit.Options{Journal: j})
				learned := learn.OpenShared(db, nil, j)
				logDone, learnDone := make(chan error, 1), make(chan struct{})
				go func() { logDone <- log.Run(ctx) }()
				go func() { learned.Run(ctx); close(learnDone) }()
				// The log and learning land what waits, then the store
				// and the journal close.
				defer func() {
					cancel()
					if err := <-logDone; err != nil {
						b.Error(err)
					}
					<-learnDone
					if j != nil {
						j.Close()
					}
					db.Close()
				}()
				srv, err := mcptest.NewServer("echo", mcptest.SimpleTools("echo"), nil)
				if err != nil {
					b.Fatal(err)
				}
				pool := upstream.NewPool([]config.ServerConfig{{Name: "echo", Dial: func(context.Context) (mcp.Transport, error) {
					st, ct := mcp.NewInMemoryTransports()
					go srv.Run(context.Background(), st)
					return ct, nil
				}}}, nil)
				background(b, pool.Run)
				pool.Wait(ctx)
				opts := &Options{Audit: log, Learn: learned}
				if j != nil {
					opts.Sync, opts.Ready = j.Sync, j.Ready
				}
				g := newGateway(b, pool.Scope(nil), opts)
				sessions := make([]*mcp.ClientSession, clients)
				for i := range sessions {
					st, ct := mcp.NewInMemoryTransports()
					go g.MCPServer().Run(ctx, st)
					if sessions[i], err = mcp.NewClient(&mcp.Implementation{Name: "bench"}, nil).Connect(ctx, ct, nil); err != nil {
						b.Fatal(err)
					}
				}
				var next atomic.Int64
				b.SetParallelism((clients + 1) / 2) // GOMAXPROCS 2 on the project's machine
				b.ResetTimer()
				b.RunParallel(func(pb *testing.PB) {
					cs := sessions[int(next.Add(1)-1)%clients]
					i := 0
					for pb.Next() {
						i++
						query := fmt.Sprintf("echo the text %d", i)
						if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "search_tools", Arguments: map[string]any{"query": query}}); err != nil {
							b.Error(err)
							return
						}
						res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: toolCall, Arguments: map[string]any{"name": "mcp__echo__echo", "arguments": map[string]any{"text": "x"}}})
						if err != nil || res.IsError {
							b.Error(err, res)
							return
						}
					}
				})
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "calls/s")
			})
		}
	}
}
