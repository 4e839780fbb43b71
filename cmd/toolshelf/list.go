package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"maps"
	"slices"
	"text/tabwriter"

	"github.com/toolshelf/toolshelf/catalog"
	"github.com/toolshelf/toolshelf/gateway"
	"github.com/toolshelf/toolshelf/policy"
	"github.com/toolshelf/toolshelf/upstream"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

var listCommand = &command{
	name:    "list",
	summary: "connect to the configured servers and list their tools",
	usage:   "[--config FILE] [--store URL] [--json]",
	help: `
Connects to every configured MCP server in parallel and prints, for each
server, its state, tool count, protocol version and what its tool
definitions cost (characters, and tokens estimated offline: cl100k times
1.23), then its tools.

` + configHelp + `

Exit status is 1 when a server failed or needs sign-in (toolshelf auth
login); the others are listed anyway.`,
	flags: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
		config := fs.String("config", "", "servers configuration `FILE` (mcpServers JSON)")
		storeURL := storeFlag(fs)
		asJSON := fs.Bool("json", false, "print JSON")
		return func(ctx context.Context, e *env, args []string) error {
			if len(args) > 0 {
				return usagef("unexpected arguments: %v", args)
			}
			src, err := openCatalog(ctx, e, "", *config, *storeURL)
			if err != nil {
				return err
			}
			defer src.close()
			rep, err := newListReport(ctx, src, policy.NewView(ctx, src.cat, gateway.Checklist, nil, nil))
			if err != nil {
				return err
			}
			if *asJSON {
				err = writeJSON(e.stdout, rep)
			} else {
				rep.write(e.stdout)
				writeRegistryNotes(e, src)
			}
			if err == nil {
				err = rep.failure()
			}
			return err
		}
	},
}

// listReport is the output of toolshelf list. Its JSON form is stable.
type listReport struct {
	Source  string       `json:"source"`
	Servers []serverList `json:"servers"`
	Tools   int          `json:"tools"`
	Chars   int          `json:"chars"`
	Tokens  int          `json:"tokens"`
}

type serverList struct {
	upstream.Status
	Chars   int        `json:"chars"`
	Tokens  int        `json:"tokens"`
	Entries []toolCost `json:"toolList"`
}

type toolCost struct {
	Name        string `json:"name"`
	Tool        string `json:"tool"`
	Description string `json:"description"`
	Chars       int    `json:"chars"`
	Tokens      int    `json:"tokens"`
	AlwaysLoad  bool   `json:"alwaysLoad,omitempty"`
	Unverified  bool   `json:"unverified,omitempty"`
	Stale       bool   `json:"stale,omitempty"`
	Shortened   bool   `json:"shortened,omitempty"`
}

// costOf is what one tool's definition costs as a request would send it:
// the view's count, or for a tool the view leaves out (unverified, never
// sent) a count of its own.
func costOf(ctx context.Context, e *catalog.Entry, view *policy.View) (toolCost, error) {
	tc := toolCost{
		Name: e.Name, Tool: e.Tool, Description: e.Description,
		AlwaysLoad: e.AlwaysLoad, Unverified: e.Unverified, Stale: e.Stale, Shortened: e.Shortened,
	}
	if c, ok := view.Tool[e.Name]; ok {
		tc.Chars, tc.Tokens = c.Chars, c.Tokens
		return tc, nil
	}
	def := []json.RawMessage{e.Definition()}
	tokens, err := policy.Tokenizer{}.CountTokens(ctx, def)
	tc.Chars, tc.Tokens = policy.Chars(def), tokens
	return tc, err
}

// newListReport lists the tools of src with what each costs, from view, a
// view of src's catalog with the offline tokenizer: the numbers doctor and
// the gateway use.
func newListReport(ctx context.Context, src *catalogSource, view *policy.View) (*listReport, error) {
	rep := &listReport{Source: src.name}
	status := src.status
	if status == nil { // a catalog without servers to connect to
		for _, name := range src.cat.ServerNames() {
			info, _ := src.cat.Server(name)
			status = append(status, upstream.Status{Name: name, State: "catalog", ProtocolVersion: info.ProtocolVersion})
		}
	}
	idx := make(map[string]int)
	for _, st := range status {
		idx[st.Name] = len(rep.Servers)
		rep.Servers = append(rep.Servers, serverList{Status: st, Entries: []toolCost{}})
	}
	for e := range src.cat.All() {
		i, ok := idx[e.Server]
		if !ok {
			continue
		}
		tc, err := costOf(ctx, e, view)
		if err != nil {
			return nil, err
		}
		s := &rep.Servers[i]
		s.Entries = append(s.Entries, tc)
		if e.Unverified {
			continue // never sent: it costs nothing
		}
		s.Chars += tc.Chars
		s.Tokens += tc.Tokens
		rep.Chars += tc.Chars
		rep.Tokens += tc.Tokens
	}
	for i := range rep.Servers {
		rep.Servers[i].Tools = len(rep.Servers[i].Entries)
		rep.Tools += rep.Servers[i].Tools
	}
	return rep, nil
}

// failure reports the servers that failed, as the command's error.
func (r *listReport) failure() error {
	states := make(map[string]upstream.State, len(r.Servers))
	for _, s := range r.Servers {
		states[s.Name] = s.State
	}
	return serversFailure(states)
}

// serversFailure is the error of a command whose servers (their states,
// by name) failed or need sign-in: list and doctor exit 1 with it.
func serversFailure(states map[string]upstream.State) error {
	var failed, signIn []string
	for _, name := range slices.Sorted(maps.Keys(states)) {
		switch states[name] {
		case upstream.StateFailed:
			failed = append(failed, name)
		case upstream.StateNeedsAuth:
			signIn = append(signIn, name)
		}
	}
	switch {
	case len(failed) > 0:
		return fmt.Errorf("%d of %d servers failed: %v", len(failed), len(states), failed)
	case len(signIn) > 0:
		return fmt.Errorf("%d of %d servers need sign-in (toolshelf auth login SERVER): %v", len(signIn), len(states), signIn)
	}
	return nil
}

func (r *listReport) write(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "SERVER\tSTATE\tTOOLS\tPROTOCOL\tCHARS\tTOKENS\t")
	for _, s := range r.Servers {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\t\n", s.Name, s.State, s.Tools, orDash(s.ProtocolVersion), num(s.Chars), num(s.Tokens))
	}
	fmt.Fprintf(tw, "total\t\t%d\t\t%s\t%s\t\n", r.Tools, num(r.Chars), num(r.Tokens))
	tw.Flush()
	held := 0
	for _, s := range r.Servers {
		held += s.Quarantined
	}
	if held > 0 {
		fmt.Fprintf(w, "\n%d more %s quarantined by toolshelf.lock and not listed: see toolshelf tools diff\n", held, map[bool]string{true: "tool is", false: "tools are"}[held == 1])
	}
	statuses := make([]upstream.Status, len(r.Servers))
	for i, s := range r.Servers {
		statuses[i] = s.Status
	}
	writeUncontained(w, statuses)
	writeGrantHints(w, statuses)
	for _, s := range r.Servers {
		fmt.Fprintf(w, "\n%s (%s", s.Name, s.State)
		if s.Source != "" && s.Source != upstream.SourceLive {
			fmt.Fprintf(w, ", tools from %s", s.Source)
		}
		if s.Restarts > 0 {
			fmt.Fprintf(w, ", %d restarts", s.Restarts)
		}
		if s.Quarantined > 0 {
			fmt.Fprintf(w, ", %d quarantined", s.Quarantined)
		}
		fmt.Fprintln(w, ")")
		if s.Error != "" {
			fmt.Fprintf(w, "  error: %s\n", s.Error)
		}
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		for _, t := range s.Entries {
			fmt.Fprintf(tw, "  %s\t%s\t%s%s\n", t.Name, num(t.Tokens), flags(t), oneLine(t.Description, 80))
		}
		tw.Flush()
	}
}

func flags(t toolCost) string {
	s := ""
	if t.AlwaysLoad {
		s += "[alwaysLoad] "
	}
	if t.Unverified {
		s += "[unverified] "
	}
	if t.Stale {
		s += "[stale] "
	}
	return s
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// english formats numbers for people: 1234567 → "1,234,567".
var english = message.NewPrinter(language.English)

func num(n int) string { return english.Sprint(n) }

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// writeRegistryNotes flags the servers whose registry said, at the last
// toolshelf outdated, that the version they run is deprecated or deleted.
func writeRegistryNotes(e *env, src *catalogSource) {
	notes := registryNotes(e)
	if len(notes) == 0 || src.config == nil {
		return
	}
	for _, sc := range src.config.Servers {
		if note, ok := notes[sc.Name]; ok {
			fmt.Fprintf(e.stdout, "\n%s: %s (toolshelf update %s, or remove it)\n", sc.Name, note, sc.Name)
		}
	}
}
