package main

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/toolshelf/toolshelf/audit"
)

var auditCommand = &command{
	name:    "audit",
	summary: "read the audit log that serve --audit writes",
	usage:   "tail [-n N] FILE | summary [--since DURATION] [--json] FILE   (FILE may be 'store': the shared store's records, with [--store URL | --config FILE])",
	help: `
  tail FILE      the last -n records (default 20), one line each.
  summary FILE   per tool: calls, errors and their rate, median and slowest
                 duration; searches; records dropped; slowest tools first;
                 and per server, of the calls of a tool a search of the
                 session returned, the share whose tool that search
                 ranked first, in its top 5 and top 10 (online recall),
                 beside the calls no search ranked.
                 --since 1h counts only the last hour.

Rotated files (FILE.1, FILE.2, ...) are read too, oldest first. FILE
'store' reads the records replicas wrote to the shared store (serve
--audit store), found by --store, $TOOLSHELF_STORE or the configuration's
"store".`,
	flags: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
		n := fs.Int("n", 20, "tail: how many records (`N`)")
		since := fs.Duration("since", 0, "summary: only records of the last `DURATION` (such as 1h)")
		asJSON := fs.Bool("json", false, "summary: print JSON")
		storeURL := storeFlag(fs)
		config := fs.String("config", "", "servers configuration `FILE`, for its \"store\"")
		return func(ctx context.Context, e *env, args []string) error {
			if len(args) != 2 || (args[0] != "tail" && args[0] != "summary") {
				return usagef("audit needs tail FILE or summary FILE")
			}
			var from time.Time
			if *since > 0 {
				from = time.Now().Add(-*since)
			}
			recs, bad, err := readAudit(ctx, e, args[1], *storeURL, *config, from)
			if err != nil {
				return err
			}
			if bad > 0 {
				fmt.Fprintf(e.stderr, "toolshelf audit: %d lines of %s are not records; skipped\n", bad, args[1])
			}
			if args[0] == "tail" {
				if *n < 1 {
					return usagef("-n must be a positive integer, got %d", *n)
				}
				for _, r := range recs[max(0, len(recs)-*n):] {
					fmt.Fprintf(e.stdout, "%s  %-6s  %-10s  %-40s  %-10s  %8.1f ms  %s %s\n",
						r.Time.Local().Format(time.DateTime), r.Kind, r.Outcome, r.Tool, r.Server, r.DurationMS, r.Client, r.ClientVersion)
				}
				return nil
			}
			sum := summarize(recs)
			if *asJSON {
				return writeJSON(e.stdout, sum)
			}
			sum.write(e)
			return nil
		}
	},
}

// auditSummary is what audit summary prints. Its JSON form is stable.
type auditSummary struct {
	Records  int           `json:"records"`
	Searches int           `json:"searches"`
	Calls    int           `json:"calls"`
	Dropped  int64         `json:"dropped"`
	Tools    []toolSummary `json:"tools"`
	// Quality is search quality on the logged traffic, per server.
	Quality []serverQuality `json:"quality"`
}

// serverQuality is online recall: of the calls of a server's tools that
// a search of the session returned (Ranked), the share whose tool it
// ranked first, in its top 5 and top 10; Unsearched the calls no search
// ranked.
type serverQuality struct {
	Server     string  `json:"server"`
	Ranked     int     `json:"ranked"`
	RecallAt1  float64 `json:"recall@1"`
	RecallAt5  float64 `json:"recall@5"`
	RecallAt10 float64 `json:"recall@10"`
	Unsearched int     `json:"unsearched"`
}

// setRecall sets Ranked and the recall figures from the counts of ranks
// at or above 1, 5 and 10.
func (q *serverQuality) setRecall(ranked int, atOrAbove [3]int) {
	q.Ranked = ranked
	if ranked > 0 {
		n := float64(ranked)
		q.RecallAt1, q.RecallAt5, q.RecallAt10 = float64(atOrAbove[0])/n, float64(atOrAbove[1])/n, float64(atOrAbove[2])/n
	}
}

// recallColumns are the three recall figures as table columns.
func (q *serverQuality) recallColumns() string {
	if q.Ranked == 0 {
		return "-\t-\t-"
	}
	return fmt.Sprintf("%.0f%%\t%.0f%%\t%.0f%%", 100*q.RecallAt1, 100*q.RecallAt5, 100*q.RecallAt10)
}

type toolSummary struct {
	Tool     string  `json:"tool"`
	Server   string  `json:"server,omitempty"`
	Calls    int     `json:"calls"`
	Errors   int     `json:"errors"`
	MedianMS float64 `json:"medianMs"`
	MaxMS    float64 `json:"maxMs"`
}

func summarize(recs []audit.Record) auditSummary {
	s := auditSummary{Records: len(recs), Tools: []toolSummary{}, Quality: []serverQuality{}}
	durations := map[string][]float64{}
	byTool := map[string]*toolSummary{}
	quality := map[string]*serverQuality{}
	atOrAbove := map[string]*[3]int{} // ranks ≤1, ≤5, ≤10, by server
	for _, r := range recs {
		switch r.Kind {
		case "search":
			s.Searches++
		case "dropped":
			s.Dropped += r.Dropped
		case "call":
			s.Calls++
			t := byTool[r.Tool]
			if t == nil {
				t = &toolSummary{Tool: r.Tool, Server: r.Server}
				byTool[r.Tool] = t
			}
			t.Calls++
			if r.Outcome != "ok" {
				t.Errors++
			}
			durations[r.Tool] = append(durations[r.Tool], r.DurationMS)
			if r.Server == "" {
				continue // a call of a tool the catalog lacked
			}
			q := quality[r.Server]
			if q == nil {
				q, atOrAbove[r.Server] = &serverQuality{Server: r.Server}, &[3]int{}
				quality[r.Server] = q
			}
			if r.Rank == 0 {
				q.Unsearched++
				continue
			}
			q.Ranked++ // setRecall sets it again below
			for i, k := range []int{1, 5, 10} {
				if r.Rank <= k {
					atOrAbove[r.Server][i]++
				}
			}
		}
	}
	for server, q := range quality {
		q.setRecall(q.Ranked, *atOrAbove[server])
		s.Quality = append(s.Quality, *q)
	}
	slices.SortFunc(s.Quality, func(a, b serverQuality) int { return cmp.Compare(a.Server, b.Server) })
	for name, t := range byTool {
		d := durations[name]
		slices.Sort(d)
		t.MedianMS, t.MaxMS = d[len(d)/2], d[len(d)-1]
		s.Tools = append(s.Tools, *t)
	}
	slices.SortFunc(s.Tools, func(a, b toolSummary) int {
		return cmp.Or(cmp.Compare(b.MaxMS, a.MaxMS), cmp.Compare(a.Tool, b.Tool))
	})
	return s
}

func (s *auditSummary) write(e *env) {
	fmt.Fprintf(e.stdout, "%d records: %d searches, %d tool calls", s.Records, s.Searches, s.Calls)
	if s.Dropped > 0 {
		fmt.Fprintf(e.stdout, ", %d records dropped (the log could not keep up)", s.Dropped)
	}
	fmt.Fprintln(e.stdout)
	if len(s.Tools) == 0 {
		return
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "\nTOOL\tSERVER\tCALLS\tERRORS\tMEDIAN ms\tMAX ms")
	for _, t := range s.Tools {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d (%.0f%%)\t%.1f\t%.1f\n", t.Tool, t.Server, t.Calls, t.Errors, 100*float64(t.Errors)/float64(t.Calls), t.MedianMS, t.MaxMS)
	}
	tw.Flush()
	if len(s.Quality) == 0 {
		return
	}
	fmt.Fprintln(e.stdout, "\nSearch quality (calls after a search that returned the tool):")
	tw = tabwriter.NewWriter(e.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SERVER\tRANKED\tRECALL@1\tRECALL@5\tRECALL@10\tUNSEARCHED")
	for _, q := range s.Quality {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%d\n", q.Server, q.Ranked, q.recallColumns(), q.Unsearched)
	}
	tw.Flush()
}

// readAudit reads an audit log file, or with file "store" the records in
// the shared store.
func readAudit(ctx context.Context, e *env, file, storeURL, configFlag string, from time.Time) ([]audit.Record, int, error) {
	if file != auditStore {
		return audit.Read(file, from)
	}
	db, err := openStoreOf(e, storeURL, configFlag)
	if err != nil {
		return nil, 0, err
	}
	if db == nil {
		return nil, 0, usagef("audit %s needs --store, $%s or the configuration's \"store\"", auditStore, envStore)
	}
	defer db.Close()
	recs, err := audit.ReadShared(ctx, db, from)
	return recs, 0, err
}

// auditStore, as serve's --audit or audit's FILE, is the shared store.
const auditStore = "store"
