package main

import (
	"context"
	"flag"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/toolshelf/toolshelf/learn"
)

// envLearned names the database of what was learned instead of the state
// folder's; envLearnedOld is its earlier name, still read.
const (
	envLearned    = "TOOLSHELF_LEARNED"
	envLearnedOld = "TOOLSHELF_USAGE"
	// envStore names the PostgreSQL store replicas share (serve --store).
	envStore = "TOOLSHELF_STORE"
)

var learnedCommand = &command{
	name:    "learned",
	summary: "show or clear what search has learned from use",
	usage:   "show [--tool NAME] [--json] | forget (--all | --tool NAME | --query TEXT | --older-than DURATION)  [--store URL | --config FILE]",
	help: `
When a search is followed, in the same session, by a call of one of the
tools it found, 'toolshelf serve' keeps the pair (the query's words and the
tool's name; never the arguments) and ranks that tool higher for later
queries in closely similar words. A query unlike every past one ranks as
it would without this.

  show     the pairs, most recently used first: tool, times, last used,
           query
  forget   delete pairs: all of them, a tool's, a query's, or those not
           used for a while (--older-than 720h)

The pairs are kept in toolshelf/learned.db in the user's state folder
($XDG_STATE_HOME, else ~/.local/state; $TOOLSHELF_LEARNED names another
file; with --store, $TOOLSHELF_STORE or the configuration's "store", the
PostgreSQL store that serve --store replicas share), at most 20,000 and for 180 days. 'serve
--no-learn', or "learn": false in the configuration, turns learning off.
('toolshelf usage show' and 'usage forget' were this command's earlier
names; 'toolshelf usage' is now the ledger of what was spent.)`,
	flags: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
		tool := fs.String("tool", "", "only the pairs of the tool `NAME` (qualified)")
		query := fs.String("query", "", "forget: the pairs of the query `TEXT`")
		all := fs.Bool("all", false, "forget: every pair")
		older := fs.Duration("older-than", 0, "forget: the pairs not used for `DURATION`")
		asJSON := fs.Bool("json", false, "show: print JSON")
		storeURL := storeFlag(fs)
		config := fs.String("config", "", "servers configuration `FILE`, for its \"store\"")
		return func(ctx context.Context, e *env, args []string) error {
			if len(args) != 1 || (args[0] != "show" && args[0] != "forget") {
				return usagef("learned needs show or forget")
			}
			st := learn.Open(learnedPath(e), nil)
			db, err := openStoreOf(e, *storeURL, *config)
			if err != nil {
				return err
			}
			if db != nil {
				defer db.Close()
				st = learn.OpenShared(db, nil, nil)
			}
			if st.Path() == "" {
				return usagef("no state folder: set $%s to the file of what was learned", envLearned)
			}
			if args[0] == "show" {
				pairs, err := st.Pairs()
				if err != nil {
					return err
				}
				if *tool != "" {
					pairs = filterPairs(pairs, func(p learn.Pair) bool { return p.Tool == *tool })
				}
				if *asJSON {
					if pairs == nil {
						pairs = []learn.Pair{}
					}
					return writeJSON(e.stdout, pairs)
				}
				if len(pairs) == 0 {
					fmt.Fprintf(e.stdout, "nothing learned yet (%s)\n", st.Path())
					return nil
				}
				tw := tabwriter.NewWriter(e.stdout, 0, 0, 2, ' ', 0)
				fmt.Fprintln(tw, "PROFILE\tTOOL\tSESSIONS\tLAST USED\tQUERY")
				for _, p := range pairs {
					query := p.Query
					if after, ok := p.Before(); ok {
						query = "(called before " + after + ")"
					}
					fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\n", profileOrDefault(p.Profile), p.Tool, p.Count, p.Last.Local().Format(time.DateTime), query)
				}
				return tw.Flush()
			}
			var match func(learn.Pair) bool
			switch {
			case *all && (*tool != "" || *query != "" || *older != 0):
				return usagef("forget --all takes no other filter")
			case *all:
			case *tool != "" || *query != "" || *older > 0:
				cutoff := time.Now().Add(-*older)
				q := strings.Join(strings.Fields(*query), " ")
				match = func(p learn.Pair) bool {
					return (*tool == "" || p.Tool == *tool) && (q == "" || p.Query == q) && (*older <= 0 || p.Last.Before(cutoff))
				}
			default:
				return usagef("forget needs --all, --tool, --query or --older-than")
			}
			n, err := st.Forget(match)
			if err != nil {
				return err
			}
			fmt.Fprintf(e.stdout, "forgot %d pairs (%s)\n", n, st.Path())
			return nil
		}
	},
}

// learnedPath is the database of what was learned: $TOOLSHELF_LEARNED
// (or its earlier name), else the state folder's.
func learnedPath(e *env) string {
	for _, name := range []string{envLearned, envLearnedOld} {
		if p := e.getenv(name); p != "" {
			return p
		}
	}
	return learn.DefaultPath(e.getenv)
}

func filterPairs(ps []learn.Pair, keep func(learn.Pair) bool) []learn.Pair {
	var out []learn.Pair
	for _, p := range ps {
		if keep(p) {
			out = append(out, p)
		}
	}
	return out
}
