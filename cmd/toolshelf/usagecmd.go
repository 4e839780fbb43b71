package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"text/tabwriter"
	"time"

	"github.com/toolshelf/toolshelf/config"
	"github.com/toolshelf/toolshelf/journal"
	"github.com/toolshelf/toolshelf/ledger"
	"github.com/toolshelf/toolshelf/store"
)

var usageCommand = &command{
	name:    "usage",
	summary: "what people, profiles, models and tools spent: the ledger of model requests and tool calls",
	usage:   "[--by person|profile|model|server|tool] [--since DURATION] [--json] [--store URL | --config FILE]",
	help: `
Reads the ledger that 'toolshelf serve' (every tool call) and 'toolshelf
proxy' (every model request, and the proxy's own search rounds) write, and
prints one row per person (or profile, model, server, tool): requests, the
proxy's own rounds, input, output, cache-read and cache-write tokens, cost
in US dollars, tool calls. The costliest come first.

The ledger is the file ledger.jsonl in the state folder ($XDG_STATE_HOME/
toolshelf, else ~/.local/state/toolshelf), or the shared store's when
there is one (--store, $TOOLSHELF_STORE, or the configuration's "store").
Costs come from the built-in price table (see docs/design.md, "The
ledger") and the configuration's "prices". A round whose usage the API did
not report is counted at the most it could have cost (its max_tokens);
"held" counts entries still at their most. --json prints the rows as a
JSON list.`,
	flags: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
		by := fs.String("by", "person", "one row per `KEY`: "+ledger.GroupNames())
		since := fs.Duration("since", 0, "only the last `DURATION` (such as 24h; default everything)")
		asJSON := fs.Bool("json", false, "print JSON")
		storeURL := storeFlag(fs)
		configFlag := fs.String("config", "", "servers configuration `FILE`, for its \"store\"")
		return func(ctx context.Context, e *env, args []string) error {
			if len(args) > 0 && (args[0] == "show" || args[0] == "forget") {
				return usagef("'toolshelf usage %s' is now 'toolshelf learned %s': 'usage' is the ledger of what was spent", args[0], args[0])
			}
			if len(args) > 0 {
				return usagef("unexpected arguments: %v", args)
			}
			if *since < 0 {
				return usagef("--since must be positive")
			}
			var from time.Time
			if *since > 0 {
				from = time.Now().Add(-*since)
			}
			db, err := openStoreOf(e, *storeURL, *configFlag)
			if err != nil {
				return err
			}
			var entries []ledger.Entry
			if db != nil {
				defer db.Close()
				entries, err = ledger.OnStore(db, nil, nil).Entries(ctx, from)
			} else {
				path := ledger.DefaultPath(e.getenv)
				if path == "" {
					return fmt.Errorf("no state folder to find the ledger in: set $XDG_STATE_HOME or $HOME")
				}
				entries, err = ledger.ReadFile(path, from)
			}
			if err != nil {
				return err
			}
			rows, err := ledger.Group(entries, *by)
			if err != nil {
				return usagef("--by: %v", err)
			}
			if *asJSON {
				return writeJSON(e.stdout, rows)
			}
			if len(rows) == 0 {
				fmt.Fprintln(e.stdout, "The ledger has nothing yet.")
				return nil
			}
			tw := tabwriter.NewWriter(e.stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
			fmt.Fprintf(tw, "%s\trequests\town rounds\tinput\toutput\tcache read\tcache write\tUSD\ttool calls\t\n", *by)
			for _, r := range rows {
				usd := fmt.Sprintf("%.4f", r.USD)
				if r.Unpriced > 0 {
					usd += fmt.Sprintf(" (+%d unpriced)", r.Unpriced)
				}
				fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t%s\t%d\t\n", r.Key, r.Requests, r.OwnRounds, r.Input, r.Output, r.CacheRead, r.CacheWrite, usd, r.ToolCalls)
			}
			return tw.Flush()
		}
	},
}

// openLedger opens the ledger that cfg's budgets and prices answer by:
// in the shared store db when there is one (what needs no decision
// waiting in j while the store is away), else the state folder's file.
func openLedger(e *env, db *store.DB, j *journal.Journal, cfg *config.Config, logger *slog.Logger) (*ledger.Ledger, error) {
	opts := &ledger.Options{}
	if cfg != nil {
		opts.Budgets, opts.Prices = cfg.Budgets, cfg.Prices
	}
	if db != nil {
		return ledger.New(ledger.OnStore(db, j, logger.With("component", "ledger")), opts), nil
	}
	path := ledger.DefaultPath(e.getenv)
	if path == "" {
		return nil, fmt.Errorf("ledger: no state folder: set $XDG_STATE_HOME or $HOME")
	}
	book, err := ledger.OpenFile(path)
	if err != nil {
		return nil, err
	}
	return ledger.New(book, opts), nil
}

// ledgerFor is the ledger of a serving command: without budgets, a ledger
// that cannot be opened is logged and left out (nothing is counted);
// with budgets it is an error, as they could not hold.
func ledgerFor(e *env, db *store.DB, j *journal.Journal, cfg *config.Config, logger *slog.Logger) (*ledger.Ledger, error) {
	l, err := openLedger(e, db, j, cfg, logger)
	if err == nil {
		return l, nil
	}
	if cfg != nil && len(cfg.Budgets) > 0 {
		return nil, fmt.Errorf("the configuration has budgets, and %w", err)
	}
	logger.Warn("nothing is counted: the ledger cannot be opened", "error", err)
	return nil, nil
}
