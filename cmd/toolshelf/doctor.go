package main

import (
	"cmp"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/toolshelf/toolshelf/anthropic"
	"github.com/toolshelf/toolshelf/catalog"
	"github.com/toolshelf/toolshelf/config"
	"github.com/toolshelf/toolshelf/gateway"
	"github.com/toolshelf/toolshelf/identity"
	"github.com/toolshelf/toolshelf/policy"
	"github.com/toolshelf/toolshelf/upstream"
)

var doctorCommand = &command{
	name:    "doctor",
	summary: "explain what the tools cost and whether they are deferred",
	usage:   "[--config FILE [--profile NAME] [--store URL] | --catalog FILE] [--model M] [--context-window N] [--count-tokens] [--json] | --live URL [--json] | --findability [--dataset DIR] [--json] | [--config FILE] [--json] NAME",
	help: `
doctor NAME starts the configured server NAME alone, as serve would
(contained, its package installed first), and says how it went: ready
with its tools, or failed with its error and what it printed on stderr
(secrets cut), whether it runs contained, and what its grants leave out.
It exits 1 when the server does not start.

Otherwise it reports, for the configured servers (or a catalog file, or the built-in
catalog): each server's state, tools, characters and estimated tokens and
its largest tools; the tool search decision for the model, with its reason
and threshold, as Claude Code would make it from ENABLE_TOOL_SEARCH,
DISABLE_EXPERIMENTAL_BETAS, ANTHROPIC_BASE_URL and the provider
(CLAUDE_CODE_USE_BEDROCK / CLAUDE_CODE_USE_VERTEX); the tokens sent per
turn without deferral and with it (the gateway's search tools plus the
alwaysLoad tools) and the saving; and warnings: shortened names, tool names
shared by servers, schemas that had to be normalised, descriptions over
2,000 characters, and text aimed at the model (instructions, hidden
characters) as a tool-poisoning check. Servers' prompts, resources and
resource templates are counted too: they are listed to clients (as slash
commands, @-mentions), not sent to the model every turn. Tools quarantined
by toolshelf.lock (see 'toolshelf tools') are listed with why. With an
"identity" section, the identity provider is asked for its metadata: it
answers or not (and why), and whether opaque tokens (introspection) and
"signin": "exchange" servers (the token exchange grant) can be served.
Files that look secret (.env, keys, token files) in the folders a
contained server is granted are warned of. Like list, it exits 1 when a
server failed or needs sign-in, after the report.

--profile NAME reports what a client of the configuration's profile NAME
sees: its servers and tools, its cost and its deferral decision.

Tokens are estimated offline (cl100k × 1.23). --count-tokens asks the
Messages API's count_tokens instead (ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL);
if that fails, the character heuristic is used and the decision says so;
without ANTHROPIC_API_KEY the offline count is used, with a note on stderr.

` + configHelp + `

--json prints the report as one JSON object; its fields are documented in
the README and stay stable.

--live URL reports instead how search does on a running gateway's real
traffic, read from its /metrics (URL is the gateway's address, as
http://127.0.0.1:8080; $TOOLSHELF_AUTH_TOKEN is sent when set): per
profile and server, how many calls followed a search that returned the
tool, the share of them whose tool that search ranked first, in its top
5 and top 10, the calls of tools no search ranked (named with select:, or
known or guessed), and the searches followed by no call of what they
found.

--findability reports instead the tools whose words will be hard to
find, each with a suggestion: a description too short to match a
request (under five words), one that never says what the tool does (no
verb of purpose in its name or first sentence), one whose words are a
sibling tool's (80% the same), parameters without descriptions, and a
description in another language than most of the catalog. Each is
mended by a "describe" override in the server's configuration, without
touching the server ("describe": {"TOOL": {"description": ...,
"searchWords": ...}}; pinned like the server's own text). With --dataset
DIR it reports on the dataset's tools, and for each, the queries that
need it, how many miss it in their top 5 today, and the recall@5 the
dataset would gain at most if those found it; then what a mending
measures: the words of the requests of half 0 that missed each tool are
written as its search words, and recall@5 on half 1, which chose nothing,
is given before and after, and per tool.`,
	flags: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
		var o doctorOptions
		fs.StringVar(&o.config, "config", "", "servers configuration `FILE` (mcpServers JSON)")
		o.store = storeFlag(fs)
		fs.StringVar(&o.catalog, "catalog", "", "examine a catalog `FILE` instead of servers")
		fs.StringVar(&o.profile, "profile", "", "report on the configuration's profile `NAME` only")
		fs.StringVar(&o.model, "model", "claude-sonnet-4-5", "the `MODEL` the decision is for")
		fs.IntVar(&o.window, "context-window", 0, "context window in `TOKENS` (default: the model's)")
		fs.BoolVar(&o.countTokens, "count-tokens", false, "count tokens with the Messages API (needs ANTHROPIC_API_KEY)")
		fs.BoolVar(&o.json, "json", false, "print JSON")
		live := fs.String("live", "", "report search quality on the live traffic of the gateway at `URL` (see above)")
		findability := fs.Bool("findability", false, "report the tools that will be hard to find, with suggestions (see above)")
		dataset := fs.String("dataset", "", "with --findability, the labelled dataset `DIR` to report on and measure gains with")
		return func(ctx context.Context, e *env, args []string) error {
			switch {
			case len(args) == 1:
				return runDoctorServer(ctx, e, o, args[0])
			case len(args) > 1:
				return usagef("unexpected arguments: %v (doctor NAME examines one server)", args[1:])
			}
			if *dataset != "" && !*findability {
				return usagef("--dataset goes with --findability")
			}
			if *findability {
				return runFindability(ctx, e, o, *dataset)
			}
			if *live != "" {
				q, err := readLive(ctx, *live, e.getenv(envAuthToken))
				if err != nil {
					return err
				}
				if o.json {
					return writeJSON(e.stdout, q)
				}
				return writeLive(e.stdout, q)
			}
			if err := checkPositive(fs, "context-window", o.window); err != nil {
				return err
			}
			return runDoctor(ctx, e, o)
		}
	},
}

type doctorOptions struct {
	config, catalog, model, profile string
	store                           *string // --store
	window                          int
	countTokens, json               bool
}

// doctorReport is the output of toolshelf doctor; its JSON form is stable.
type doctorReport struct {
	Source        string            `json:"source"`
	Model         string            `json:"model"`
	ContextWindow int               `json:"contextWindow"`
	Settings      policy.Settings   `json:"settings"`
	Servers       []doctorServer    `json:"servers"`
	Decision      policy.Decision   `json:"decision"`
	Summary       string            `json:"summary"`
	PerTurn       perTurn           `json:"perTurn"`
	Warnings      []catalog.Finding `json:"warnings"`
	// Profile is the profile reported on ("everything" without
	// --profile); Quarantined the tools toolshelf.lock keeps out.
	Profile     string                 `json:"profile"`
	Quarantined []upstream.Quarantined `json:"quarantined"`
	// Identity is the check of the configuration's identity provider,
	// when it names one.
	Identity *identityCheck `json:"identity,omitempty"`
}

// identityCheck says whether the identity provider answers as the
// gateway needs: its metadata, and what it offers for the configuration.
type identityCheck struct {
	Issuer string `json:"issuer"`
	OK     bool   `json:"ok"`
	Error  string `json:"error,omitempty"`
	// Introspection and Exchange say whether opaque tokens and "signin":
	// "exchange" servers can be served.
	Introspection bool `json:"introspection"`
	Exchange      bool `json:"exchange"`
}

// checkIdentity asks the provider for its metadata.
func checkIdentity(ctx context.Context, id *config.Identity) *identityCheck {
	c := &identityCheck{Issuer: id.Issuer}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	meta, err := identity.Discover(ctx, &http.Client{Timeout: 10 * time.Second}, id.Issuer)
	if err != nil {
		c.Error = err.Error()
		return c
	}
	c.OK = true
	c.Introspection = meta.IntrospectionEndpoint != "" && id.ClientID != ""
	c.Exchange = slices.Contains(meta.GrantTypes, "urn:ietf:params:oauth:grant-type:token-exchange") && id.ClientID != ""
	return c
}

type doctorServer struct {
	Name  string `json:"name"`
	State string `json:"state"`
	Error string `json:"error,omitempty"`
	// Contained and Uncontained are upstream.Status's.
	Contained   bool       `json:"contained,omitempty"`
	Uncontained string     `json:"uncontained,omitempty"`
	Tools       int        `json:"tools"`
	Chars       int        `json:"chars"`
	Tokens      int        `json:"tokens"`
	Largest     []toolCost `json:"largest"`
	// Prompts, Resources (resources and templates) and their definitions'
	// tokens, as the server listed them.
	Prompts     int `json:"prompts"`
	Resources   int `json:"resources"`
	OfferTokens int `json:"offerTokens"`
}

type perTurn struct {
	Without      turnCost `json:"withoutDeferral"`
	With         turnCost `json:"withDeferral"`
	Saved        int      `json:"savedTokens"`
	SavedPercent float64  `json:"savedPercent"`
}

type turnCost struct {
	Tools  int `json:"tools"`
	Tokens int `json:"tokens"`
}

// open opens what doctor reports on: the configuration's servers (or a
// catalog file, or the built-in catalog), narrowed to --profile.
func (o doctorOptions) open(ctx context.Context, e *env) (*catalogSource, error) {
	src, err := openCatalog(ctx, e, o.catalog, o.config, *o.store)
	if err != nil {
		return nil, err
	}
	if o.profile != "" {
		if err := src.narrow(o.profile); err != nil {
			src.close()
			return nil, err
		}
	}
	return src, nil
}

func runDoctor(ctx context.Context, e *env, o doctorOptions) error {
	settings, err := policy.FromEnv(e.getenv)
	if err != nil {
		return badInput(err)
	}
	src, err := o.open(ctx, e)
	if err != nil {
		return err
	}
	defer src.close()
	// The catalog measured offline, as list and the gateway measure it.
	offline := policy.NewView(ctx, src.cat, gateway.Checklist, gateway.MetaDefinitions(), nil)
	list, err := newListReport(ctx, src, offline)
	if err != nil {
		return err
	}

	var counter policy.Counter
	if o.countTokens {
		key := e.getenv("ANTHROPIC_API_KEY")
		if key == "" {
			// A report is still worth having: count offline, and say so.
			fmt.Fprintln(e.stderr, "toolshelf doctor: --count-tokens needs ANTHROPIC_API_KEY; counting offline (cl100k × 1.23) instead")
			o.countTokens = false
		} else {
			counter = &anthropic.TokenCounter{Client: anthropic.NewClient(key, &anthropic.Options{BaseURL: e.getenv("ANTHROPIC_BASE_URL")}), Model: o.model}
		}
	}

	// The gateway's view of the catalog, as serve --mode auto decides.
	view := offline
	if o.countTokens {
		view = policy.NewView(ctx, src.cat, gateway.Checklist, gateway.MetaDefinitions(), counter)
	}
	var pending []string
	if src.pool != nil {
		pending = src.pool.Pending()
	}
	optimistic, _ := policy.Optimistic(settings, provider(e), e.getenv("ANTHROPIC_BASE_URL"))
	decision := view.Decide(policy.Request{
		Settings: settings, Model: o.model, ContextWindow: o.window,
		Provider: provider(e), BaseURL: e.getenv("ANTHROPIC_BASE_URL"),
		SearchAvailable: optimistic, Pending: pending,
	})

	rep := doctorReport{
		Source: src.name, Model: o.model, ContextWindow: decision.ContextWindow, Settings: settings,
		Decision: decision, Summary: decision.String(), Warnings: append(src.cat.Audit(), src.unreviewed()...),
		Profile: profileOrDefault(o.profile), Quarantined: src.quarantined(),
	}
	if src.config != nil {
		// A grant holds what is in it: a token file beside a server's
		// program is the server's to read.
		for _, sc := range src.config.Servers {
			for _, f := range sc.SecretLooking() {
				rep.Warnings = append(rep.Warnings, catalog.Finding{Kind: "secret_in_grant", Server: sc.Name,
					Message: fmt.Sprintf("%s looks like it holds a secret, and server %s is granted its folder: move it, or give the server a folder of its own", f, sc.Name), High: true})
			}
		}
	}
	if rep.Warnings == nil {
		rep.Warnings = []catalog.Finding{}
	}
	if src.config != nil && src.config.Identity != nil {
		rep.Identity = checkIdentity(ctx, src.config.Identity)
	}
	offers := map[string]upstream.Offer{}
	if src.pool != nil {
		for _, o := range src.pool.Offers() {
			offers[o.Server] = o
		}
	}
	for _, s := range list.Servers {
		for _, h := range s.Hints {
			rep.Warnings = append(rep.Warnings, catalog.Finding{Kind: "grant", Server: s.Name, Message: h, High: true})
		}
		ds := doctorServer{Name: s.Name, State: string(s.State), Error: s.Error, Tools: s.Tools, Chars: s.Chars, Tokens: s.Tokens,
			Contained: s.Contained, Uncontained: s.Uncontained}
		if o, ok := offers[s.Name]; ok {
			ds.Prompts, ds.Resources = len(o.Prompts), len(o.Resources)+len(o.Templates)
			ds.OfferTokens = offerTokens(ctx, o)
		}
		largest := slices.Clone(s.Entries)
		slices.SortStableFunc(largest, func(a, b toolCost) int { return cmp.Compare(b.Tokens, a.Tokens) })
		ds.Largest = largest[:min(3, len(largest))]
		rep.Servers = append(rep.Servers, ds)
	}
	rep.PerTurn.Without = turnCost{len(view.Tools) - len(gateway.MetaDefinitions()), view.All.Tokens}
	rep.PerTurn.With = rep.PerTurn.Without
	if decision.Enabled {
		rep.PerTurn.With = turnCost{len(view.Tools) - len(decision.Deferred), view.Loaded.Tokens}
	}
	rep.PerTurn.Saved = rep.PerTurn.Without.Tokens - rep.PerTurn.With.Tokens
	if rep.PerTurn.Without.Tokens > 0 {
		rep.PerTurn.SavedPercent = float64(int(1000*float64(rep.PerTurn.Saved)/float64(rep.PerTurn.Without.Tokens))) / 10
	}
	if o.json {
		if err := writeJSON(e.stdout, rep); err != nil {
			return err
		}
	} else {
		rep.write(e.stdout)
		writeRegistryNotes(e, src)
	}
	// As list does: a server that failed is a failure of the command.
	states := make(map[string]upstream.State, len(rep.Servers))
	for _, s := range rep.Servers {
		states[s.Name] = upstream.State(s.State)
	}
	return serversFailure(states)
}

// provider is the Messages API provider, as Claude Code's variables say.
func provider(e *env) string {
	switch {
	case e.getenv("CLAUDE_CODE_USE_BEDROCK") != "":
		return policy.ProviderBedrock
	case e.getenv("CLAUDE_CODE_USE_VERTEX") != "":
		return policy.ProviderVertex
	}
	return policy.ProviderFirstParty
}

func (r *doctorReport) write(w io.Writer) {
	fmt.Fprintf(w, "toolshelf doctor: %d servers, %d tools, from %s", len(r.Servers), r.PerTurn.Without.Tools, r.Source)
	if r.Profile != config.DefaultProfile {
		fmt.Fprintf(w, ", profile %s", r.Profile)
	}
	fmt.Fprint(w, "\n\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SERVER\tSTATE\tTOOLS\tCHARS\tTOKENS\tLARGEST TOOLS (tokens)")
	for _, s := range r.Servers {
		var largest []string
		for _, t := range s.Largest {
			largest = append(largest, fmt.Sprintf("%s (%s)", t.Tool, num(t.Tokens)))
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\n", s.Name, s.State, s.Tools, num(s.Chars), num(s.Tokens), strings.Join(largest, ", "))
	}
	tw.Flush()
	var prompts, resources, tokens int
	for _, s := range r.Servers {
		prompts, resources, tokens = prompts+s.Prompts, resources+s.Resources, tokens+s.OfferTokens
	}
	if prompts+resources > 0 {
		fmt.Fprintf(w, "Prompts and resources (listed to clients, not sent each turn): %d prompts, %d resources and templates, %s tokens\n", prompts, resources, num(tokens))
	}
	for _, s := range r.Servers {
		if s.Error != "" {
			fmt.Fprintf(w, "  %s: %s\n", s.Name, s.Error)
		}
	}
	statuses := make([]upstream.Status, len(r.Servers))
	for i, s := range r.Servers {
		statuses[i] = upstream.Status{Name: s.Name, Uncontained: s.Uncontained}
	}
	writeUncontained(w, statuses)

	if c := r.Identity; c != nil {
		if c.OK {
			fmt.Fprintf(w, "\nIdentity provider %s answers (opaque tokens: %s; token exchange: %s).\n", c.Issuer, yesNo(c.Introspection), yesNo(c.Exchange))
		} else {
			fmt.Fprintf(w, "\nIdentity provider %s does not answer: %s\n  People's tokens are refused (503) until it does.\n", c.Issuer, c.Error)
		}
	}
	if len(r.Quarantined) > 0 {
		fmt.Fprintf(w, "\nQuarantined by toolshelf.lock (%d; review with toolshelf tools diff):\n", len(r.Quarantined))
		for _, h := range r.Quarantined {
			fmt.Fprintf(w, "  %s/%s: %s: %s\n", h.Server, h.Tool, h.Status, h.Why)
		}
	}

	mode := "unset"
	if r.Settings.Explicit {
		mode = "set"
	}
	fmt.Fprintf(w, "\nTool search for %s (context window %s; ENABLE_TOOL_SEARCH %s: %s):\n  %s\n",
		r.Model, num(r.ContextWindow), mode, r.Settings.Mode.Words(), r.Summary)

	p := r.PerTurn
	fmt.Fprintf(w, "\nTool definitions sent per turn:\n")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "  without deferral\t%s tokens\t%d tools\t\n", num(p.Without.Tokens), p.Without.Tools)
	fmt.Fprintf(tw, "  with deferral\t%s tokens\t%d tools\t\n", num(p.With.Tokens), p.With.Tools)
	fmt.Fprintf(tw, "  saving\t%s tokens\t%.1f%%\t\n", num(p.Saved), p.SavedPercent)
	tw.Flush()
	if p.Saved <= 0 && p.Without.Tools > 0 {
		// Search costs its own definition: below that, deferral loses.
		fmt.Fprintf(w, "\nSearch does not pay here: the search tool's definition costs more than the %s tokens of the %d tools it would defer.\n"+
			"Serve with --mode auto (search only once the tools cost more than %d%% of the context window) or --mode all (list every tool).\n",
			num(p.Without.Tokens), p.Without.Tools, policy.DefaultPercent)
	}

	if len(r.Warnings) == 0 {
		fmt.Fprintln(w, "\nNo warnings.")
		return
	}
	fmt.Fprintf(w, "\nWarnings (%d):\n", len(r.Warnings))
	for _, f := range r.Warnings {
		subject := f.Tool
		if f.Kind == catalog.FindingCollision {
			subject = f.Server
		}
		fmt.Fprintf(w, "  %-16s %s: %s\n", f.Kind, subject, f.Message)
	}
}

// offerTokens estimates the tokens of a server's prompt, resource and
// template definitions, as a client receives them.
func offerTokens(ctx context.Context, o upstream.Offer) int {
	var defs []json.RawMessage
	add := func(v any) {
		if b, err := json.Marshal(v); err == nil {
			defs = append(defs, b)
		}
	}
	for _, p := range o.Prompts {
		add(p)
	}
	for _, r := range o.Resources {
		add(r)
	}
	for _, t := range o.Templates {
		add(t)
	}
	n, _ := policy.Tokenizer{}.CountTokens(ctx, defs)
	return n
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// runDoctorServer starts the configured server name alone (the others
// disabled, so that their secrets are still kept from it) and reports its
// state: the console's next step for a failed server.
func runDoctorServer(ctx context.Context, e *env, o doctorOptions, name string) error {
	if o.catalog != "" || configPath(e, o.config) == "" {
		return usagef("doctor %s examines a configured server: give --config FILE", name)
	}
	src, err := openSource(e, "", o.config, connectOptions{useCache: false, storeURL: *o.store, only: name})
	if err != nil {
		return err
	}
	if !slices.ContainsFunc(src.config.Servers, func(sc config.ServerConfig) bool { return sc.Name == name }) {
		names := make([]string, 0, len(src.config.Servers))
		for _, sc := range src.config.Servers {
			names = append(names, sc.Name)
		}
		return usagef("no server %q in %s (its servers: %s)", name, src.name, strings.Join(names, ", "))
	}
	p, err := startUntil(ctx, e, src.pool, nil)
	if err != nil {
		return err
	}
	defer p.stop()
	var st upstream.Status
	for _, s := range p.Status() {
		if s.Name == name {
			st = s
		}
	}
	if o.json {
		if err := writeJSON(e.stdout, st); err != nil {
			return err
		}
	} else {
		writeServerDoctor(e.stdout, st)
	}
	if st.State != upstream.StateReady {
		return exitStatus(exitFailure) // said above
	}
	return nil
}

// writeServerDoctor says how one server's start went.
func writeServerDoctor(w io.Writer, st upstream.Status) {
	how := "uncontained"
	switch {
	case st.Contained:
		how = "contained"
	case st.Uncontained != "":
		how = "uncontained: " + st.Uncontained
	case st.Transport != "stdio":
		how = st.Transport
	}
	fmt.Fprintf(w, "server %s: %s (%s)\n", st.Name, st.State, how)
	if st.State == upstream.StateReady {
		fmt.Fprintf(w, "  tools: %d, connected in %v\n", st.Tools, st.ConnectTime.Round(time.Millisecond))
	}
	if st.Error != "" {
		fmt.Fprintf(w, "  error: %s\n", st.Error)
	}
	for _, h := range st.Hints {
		fmt.Fprintf(w, "  hint: %s\n", h)
	}
	if st.State == upstream.StateNeedsAuth {
		fmt.Fprintf(w, "  next: toolshelf auth login %s\n", st.Name)
	}
}
