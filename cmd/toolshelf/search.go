package main

import (
	"cmp"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"unicode/utf8"

	"github.com/toolshelf/toolshelf/learn"
	"github.com/toolshelf/toolshelf/search"
	"github.com/toolshelf/toolshelf/upstream"
)

var searchCommand = &command{
	name:    "search",
	summary: "find tools by what they do",
	usage:   "[--catalog FILE | --config FILE [--store URL] [--wait] [--no-learn]] [--engine ENGINE] [--limit N] [--json] [--explain] QUERY...",
	help: `
Searches a catalog of MCP tools and prints the best matches, best first:
qualified name, server, score and a one-line description.

The query grammar (bm25 and keyword engines):
  create pull request         words, ranked by the engine
  +github issue               a word with + is required in every result
  mcp__github                 a query starting with mcp__ lists the tools
                              whose names start with it
  select:NAME,NAME            fetch tools by exact name
The regex engine reads the query as a case-insensitive regular expression
(RE2 syntax, at most 200 characters).

` + engineHelp + `

--catalog takes a catalog file (as 'toolshelf catalog export' writes it) or
a dataset folder with tools.jsonl. Without it, the configured servers are
searched: a server whose tools are in the cache of an earlier run is
searched from it at once while it connects (stderr names those), and
--wait waits for every server to answer first. As list and doctor, search
exits 1 when a server failed or needs sign-in, after its results. With a
configuration, results rank as serve ranks /mcp's: by what its sessions
taught it (see 'toolshelf learned'; --explain shows what it added and the
words earlier searches used for a tool); --no-learn leaves that out.

` + configHelp,
	flags: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
		catalogPath := fs.String("catalog", "", "catalog `FILE` to search")
		config := fs.String("config", "", "servers configuration `FILE` (mcpServers JSON)")
		storeURL := storeFlag(fs)
		var engine engineFlags
		engine.register(fs)
		limit := fs.Int("limit", 0, "at most `N` results (default: 8 for bm25, semantic and hybrid, 5 otherwise)")
		asJSON := fs.Bool("json", false, "print the hits as JSON")
		explain := fs.Bool("explain", false, "show what each query term matched")
		wait := fs.Bool("wait", false, "wait for every server to answer, rather than search a connecting server's cached tools")
		noLearn := fs.Bool("no-learn", false, "rank without what serve learned from use")
		return func(ctx context.Context, e *env, args []string) error {
			if err := checkPositive(fs, "limit", *limit); err != nil {
				return err
			}
			if err := engine.check(e); err != nil {
				return err
			}
			return runSearch(ctx, e, searchOptions{*catalogPath, *config, *storeURL, engine, *limit, *asJSON, *explain, *wait, *noLearn}, args)
		}
	},
}

type searchOptions struct {
	catalog string
	config  string
	store   string
	engine  engineFlags
	limit   int
	json    bool
	explain bool
	wait    bool // for every server, not a cached tool list
	noLearn bool // rank without what was learned from use
}

func runSearch(ctx context.Context, e *env, o searchOptions, args []string) error {
	query := strings.Join(args, " ")
	if strings.TrimSpace(query) == "" {
		return usagef("no query: give the words to search for, as in: toolshelf search create a pull request")
	}
	var enough func([]upstream.Status) bool
	if !o.wait {
		enough = cachedEnough
	}
	src, err := openCatalogUntil(ctx, e, o.catalog, o.config, o.store, enough)
	if err != nil {
		return err
	}
	defer src.close()
	if src.pool != nil {
		var cached []string
		for _, s := range src.pool.Status() {
			if s.State == upstream.StateConnecting || s.State == upstream.StateRestarting {
				cached = append(cached, s.Name)
			}
		}
		if len(cached) > 0 {
			fmt.Fprintf(e.stderr, "toolshelf: still connecting, searched from their cached tool lists: %s (--wait waits for them)\n", strings.Join(cached, ", "))
		}
	}
	cat := src.cat
	eng, err := o.engine.build(ctx, e, cat)
	if err != nil {
		return err
	}
	if src.pool != nil && !o.noLearn {
		// As the gateway ranks /mcp's searches: by what its sessions
		// taught it (toolshelf learned show), --explain saying so.
		if past := learnedQueries(e, o.store, o.config); len(past) > 0 {
			eng = search.NewLearned(eng, cat, past, nil)
		}
	}
	// Through the search front end, as every face searches: select: is
	// answered there.
	found, err := search.Find(ctx, eng, cat, search.Request{Query: query, Limit: o.limit})
	if err != nil {
		return badInput(err)
	}
	hits := found.Hits
	if o.json {
		err = writeHitsJSON(e.stdout, query, o.engine.kind, cat.Len(), hits)
	} else {
		writeHits(e.stdout, hits, o.explain)
	}
	if err != nil || src.pool == nil {
		return err
	}
	// As list and doctor: a server that failed or needs sign-in was not
	// asked (its cached tools, if any, were searched), and the exit
	// status says so.
	states := map[string]upstream.State{}
	for _, s := range src.pool.Status() {
		states[s.Name] = s.State
	}
	return serversFailure(states)
}

func writeHits(w io.Writer, hits []search.Hit, explain bool) {
	if len(hits) == 0 {
		fmt.Fprintln(w, "No matching tools.")
		return
	}
	if hits[0].Weak {
		fmt.Fprintf(w, "No tool fits this query well (%s); the closest:\n", cmp.Or(hits[0].WeakReason, search.WeakLowMatch))
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for i, h := range hits {
		server := h.Entry.Server
		if server == "" {
			server = "-"
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%.2f\t%s\n", i+1, h.Entry.Name, server, h.Score, oneLine(h.Entry.Description, 100))
		if explain {
			for _, m := range h.Matches {
				fmt.Fprintf(tw, "\t  %s\t%s\t%+.2f\t\n", m.Term, strings.Join(m.Fields, ", "), m.Score)
			}
		}
	}
	tw.Flush()
}

// oneLine returns the first line of s, cut to n characters.
func oneLine(s string, n int) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	s = strings.TrimSpace(s)
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return strings.TrimSpace(string(r[:n-1])) + "…"
}

type hitJSON struct {
	Name        string         `json:"name"`
	Server      string         `json:"server,omitempty"`
	Tool        string         `json:"tool"`
	Score       float64        `json:"score"`
	Description string         `json:"description"`
	Matches     []search.Match `json:"matches"`
	Weak        bool           `json:"weak,omitempty"`
	WeakReason  string         `json:"weak_reason,omitempty"`
}

func writeHitsJSON(w io.Writer, query, engine string, tools int, hits []search.Hit) error {
	out := struct {
		Query  string    `json:"query"`
		Engine string    `json:"engine"`
		Tools  int       `json:"tools"`
		Hits   []hitJSON `json:"hits"`
	}{query, engine, tools, []hitJSON{}}
	for _, h := range hits {
		out.Hits = append(out.Hits, hitJSON{
			Name: h.Entry.Name, Server: h.Entry.Server, Tool: h.Entry.Tool,
			Score: h.Score, Description: h.Entry.Description, Matches: h.Matches, Weak: h.Weak, WeakReason: h.WeakReason,
		})
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(out)
}

// learnedQueries are the searches of /mcp's sessions and the tools called
// after them, as serve ranks by them: from the shared store when the
// configuration has one, else the state folder's file. A store that
// cannot be read ranks without them.
func learnedQueries(e *env, storeURL, config string) []search.LearnedQuery {
	st := learn.Open(learnedPath(e), nil)
	db, err := openStoreOf(e, storeURL, config)
	if err != nil {
		fmt.Fprintf(e.stderr, "toolshelf: ranking without what was learned from use: %v\n", err)
		return nil
	}
	if db != nil {
		defer db.Close()
		st = learn.OpenShared(db, nil, nil)
	}
	if st.Path() == "" {
		return nil
	}
	pairs, err := st.Pairs()
	if err != nil {
		fmt.Fprintf(e.stderr, "toolshelf: ranking without what was learned from use: %v\n", err)
		return nil
	}
	return learn.Queries(pairs, "", learn.MinSessions)
}
