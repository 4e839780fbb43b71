package console

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"html/template"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/toolshelf/toolshelf/audit"
	"github.com/toolshelf/toolshelf/learn"
	"github.com/toolshelf/toolshelf/pin"
	"github.com/toolshelf/toolshelf/search"
	"github.com/toolshelf/toolshelf/upstream"
)

var funcs = template.FuncMap{
	"pct":   func(v float64) string { return fmt.Sprintf("%.0f%%", 100*v) },
	"num":   func(n int) string { return thousands(int64(n)) },
	"count": thousands,
	"score": func(v float64) string { return strconv.FormatFloat(v, 'f', 2, 64) },
	"join":  strings.Join,
	"time":  func(t time.Time) string { return t.Local().Format(time.DateTime) },
	"usd":   usd,
}

// thousands writes n with its thousands apart: 1,980,000.
func thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	for i := len(s) - 3; i > 0 && s[i-1] != '-'; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// serverRow is one server on the servers page.
type serverRow struct {
	upstream.Status
	Prompts, Resources int
	Tokens             int
	Bar                int // the bar's width: tokens against the largest server's, in percent
	Class              string
	// Listed are its tools with their tokens, largest first, and the
	// names of its prompts and resources.
	Listed  []toolTokens
	Offered []string
	// Next says what toolshelf does next about a server that is not
	// ready ("tried again in 40 s"), Hint what a person can do, and
	// CanRetry whether a try is waiting that Retry may bring forward.
	Next, Hint string
	CanRetry   bool
	// Registry is what its registry last said of the version it runs,
	// when deprecated or deleted.
	Registry string
}

type toolTokens struct {
	Name   string
	Tokens int
}

// overview is the servers page: each server and the deferral decision.
type overview struct {
	Servers                 []serverRow
	Mode                    string
	Tools                   int
	All, Deferrable, Loaded int
	Quarantined, Starting   int
	Most                    int // the largest server's tokens: a full bar
	// ConfigProblem is why the configuration's last change was not
	// applied (upstream.Pool.ConfigRefused), with its file and line.
	ConfigProblem string
}

func (c *Console) overview(ctx context.Context) overview {
	g := c.opts.Host.Main()
	snap := g.Snapshot()
	view := snap.View(ctx)
	tokens := map[string]int{}
	listed := map[string][]toolTokens{}
	for e := range snap.Catalog.All() {
		n := view.Tool[e.Name].Tokens
		tokens[e.Server] += n
		listed[e.Server] = append(listed[e.Server], toolTokens{e.Name, n})
	}
	for _, l := range listed {
		slices.SortStableFunc(l, func(a, b toolTokens) int { return cmp.Compare(b.Tokens, a.Tokens) })
	}
	offers := map[string]upstream.Offer{}
	for _, o := range g.Scope().Offers() {
		offers[o.Server] = o
	}
	o := overview{Mode: g.Mode(), Tools: snap.Catalog.Len(), All: view.All.Tokens, Deferrable: view.Deferrable.Tokens, Loaded: view.Loaded.Tokens,
		ConfigProblem: c.opts.Host.Pool().ConfigProblem()}
	most := 1
	var notes map[string]string
	if c.opts.RegistryNotes != nil {
		notes = c.opts.RegistryNotes()
	}
	for _, st := range g.Scope().Status() {
		of := offers[st.Name]
		row := serverRow{Status: st, Tokens: tokens[st.Name], Prompts: len(of.Prompts),
			Resources: len(of.Resources) + len(of.Templates), Listed: listed[st.Name]}
		for _, p := range of.Prompts {
			row.Offered = append(row.Offered, "prompt "+p.Name)
		}
		for _, r := range of.Resources {
			row.Offered = append(row.Offered, "resource "+r.URI)
		}
		for _, r := range of.Templates {
			row.Offered = append(row.Offered, "template "+r.URITemplate)
		}
		row.Class = stateClass(st.State)
		row.Next, row.Hint, row.CanRetry = nextStep(st, time.Now())
		row.Registry = notes[st.Name]
		most = max(most, row.Tokens)
		o.Quarantined += st.Quarantined
		if row.Class == "starting" {
			o.Starting++
		}
		o.Servers = append(o.Servers, row)
	}
	// A catalog file or the built-in catalog has servers without
	// connections: shown from the catalog.
	counts := map[string]int{}
	for e := range snap.Catalog.All() {
		counts[e.Server]++
	}
	for _, name := range slices.Sorted(maps.Keys(counts)) {
		if !slices.ContainsFunc(o.Servers, func(r serverRow) bool { return r.Name == name }) {
			o.Servers = append(o.Servers, serverRow{Status: upstream.Status{Name: name, State: "catalog", Tools: counts[name]}, Tokens: tokens[name], Class: "off", Listed: listed[name]})
			most = max(most, tokens[name])
		}
	}
	for i := range o.Servers {
		o.Servers[i].Bar = 100 * o.Servers[i].Tokens / most
	}
	o.Most = most
	return o
}

// stateClass is a server state's colour on the page.
func stateClass(s upstream.State) string {
	switch s {
	case upstream.StateReady:
		return "ok"
	case upstream.StateConnecting:
		return "starting"
	case upstream.StateDisabled:
		return "off"
	case upstream.StateNeedsAuth:
		return "auth"
	}
	return "failed"
}

// nextStep says, for a server that is not ready, what toolshelf does next
// and what a person can do about it.
func nextStep(st upstream.Status, now time.Time) (next, hint string, canRetry bool) {
	switch {
	case !st.RetryAt.IsZero():
		next, canRetry = "tried again "+untilText(st.RetryAt.Sub(now)), true
	case st.State == upstream.StateRestarting || st.State == upstream.StateConnecting:
		// A try under way: a slow server spends most of its time here,
		// and would otherwise show no next step at all.
		next = "being tried now"
	}
	switch st.State {
	case upstream.StateNeedsAuth:
		hint = "sign it in: toolshelf auth login " + st.Name
	case upstream.StateFailed, upstream.StateRestarting:
		switch {
		case strings.Contains(st.Error, `"timeout"`):
			hint = `a slow server may need a longer "timeout" in its configuration`
		case st.RetryAt.IsZero() && st.State == upstream.StateFailed:
			hint = "its configuration is at fault: mend it and restart serve (toolshelf doctor says more)"
		default:
			hint = "toolshelf doctor " + st.Name + " starts it alone and shows what it printed"
		}
	}
	return next, hint, canRetry
}

// untilText is a wait as a person reads it: "in 40 s", "in 3 min", "now".
func untilText(d time.Duration) string {
	switch {
	case d < time.Second:
		return "now"
	case d < 2*time.Minute:
		return fmt.Sprintf("in %d s", int(d.Round(time.Second)/time.Second))
	}
	return fmt.Sprintf("in %d min", int(d.Round(time.Minute)/time.Minute))
}

func (c *Console) serversPage(w http.ResponseWriter, r *http.Request) {
	c.render(w, r, "servers", map[string]any{"O": c.overview(r.Context()), "Done": r.URL.Query().Get("done")})
}

// retry has a failed server tried again now.
func (c *Console) retry(w http.ResponseWriter, r *http.Request) {
	server := r.PostFormValue("server")
	if err := c.opts.Host.Pool().Retry(server); err != nil {
		http.Error(w, "toolshelf console: "+err.Error(), http.StatusConflict)
		return
	}
	c.log.Info("console: server retried", "server", server)
	http.Redirect(w, r, Prefix+"/?done=retrying+"+url.QueryEscape(server), http.StatusSeeOther)
}

// notFound is the console's page for a path it does not have: with its
// navigation, so that a person finds their way.
func (c *Console) notFound(w http.ResponseWriter, r *http.Request) {
	c.renderStatus(w, r, http.StatusNotFound, "notfound", map[string]any{"Path": r.URL.Path})
}

// serversPart is the servers table alone, which the page fetches again
// when the events stream says the servers changed.
func (c *Console) serversPart(w http.ResponseWriter, r *http.Request) {
	c.render(w, r, "serverstable", map[string]any{"O": c.overview(r.Context())})
}

// events tells the page, as server-sent events, each time the pool
// publishes (a server came up, failed, or listed new tools), and every
// 15 s that nothing did.
func (c *Console) events(w http.ResponseWriter, r *http.Request) {
	flusher, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	// The page fetches the table again when the stream opens, which is
	// when it gets the headers: send them now, not with the first event.
	flusher.Flush()
	pool := c.opts.Host.Pool()
	ping := time.NewTicker(15 * time.Second)
	defer ping.Stop()
	for {
		changed := pool.Changed()
		select {
		case <-r.Context().Done():
			return
		case <-changed:
			fmt.Fprint(w, "event: servers\ndata: changed\n\n")
		case <-ping.C:
			fmt.Fprint(w, ": ping\n\n")
		}
		flusher.Flush()
	}
}

// hitRow is one search result with its explanation.
type hitRow struct {
	Rank       int
	Name       string
	Server     string
	Score      float64
	Matches    []search.Match
	Learned    float64
	Definition string
}

func (c *Console) searchPage(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	query, profile, engine := strings.TrimSpace(q.Get("q")), q.Get("profile"), q.Get("engine")
	data := map[string]any{"Query": query, "Profile": profile, "Engine": engine, "Engines": search.Kinds}
	var profiles []string
	for _, g := range c.opts.Host.Gateways() {
		profiles = append(profiles, g.Profile())
	}
	data["Profiles"] = profiles
	if query == "" {
		c.render(w, r, "search", data)
		return
	}
	g := c.opts.Host.Gateway(profile)
	if g == nil {
		g = c.opts.Host.Main()
	}
	data["Profile"] = g.Profile()
	snap := g.Snapshot()
	req := search.Request{Query: query, Limit: 10}
	var res search.Result
	var err error
	if engine == "" {
		res, err = snap.Search(r.Context(), req) // as the gateway searches, learning included
	} else {
		var eng search.Engine
		if eng, err = search.New(engine, snap.Catalog); err == nil {
			res, err = search.Find(r.Context(), eng, snap.Catalog, req)
		}
	}
	if err != nil {
		data["Error"] = err.Error()
		c.render(w, r, "search", data)
		return
	}
	var hits []hitRow
	for i, h := range res.Hits {
		row := hitRow{Rank: i + 1, Name: h.Entry.Name, Server: h.Entry.Server, Score: h.Score, Definition: indent(h.Entry.Definition())}
		for _, m := range h.Matches {
			if m.Term == search.TermLearned {
				row.Learned += m.Score
				continue
			}
			row.Matches = append(row.Matches, m)
		}
		hits = append(hits, row)
	}
	data["Hits"], data["Weak"], data["Searched"], data["Note"] = hits, res.Weak, res.Searched, res.Note
	c.render(w, r, "search", data)
}

// indent lays a definition out for reading, with its text as written
// (the template escapes it, so JSON's \u003c escapes are not needed).
func indent(raw json.RawMessage) string {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return string(raw)
	}
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	enc.Encode(v)
	return b.String()
}

// heldRow is one quarantined tool with what changed.
type heldRow struct {
	upstream.Quarantined
	Diff []string
}

func (c *Console) quarantinePage(w http.ResponseWriter, r *http.Request) {
	var rows []heldRow
	for _, q := range c.opts.Host.Pool().Quarantined() {
		rows = append(rows, heldRow{Quarantined: q, Diff: pin.Diff(q.Pinned, q.Current)})
	}
	c.render(w, r, "quarantine", map[string]any{"Held": rows, "CanJudge": c.opts.Pins != nil, "Done": r.URL.Query().Get("done")})
}

// judge approves or denies one quarantined tool, on the running gateway:
// the lock file is saved and the pool judges its tools again.
func (c *Console) judge(w http.ResponseWriter, r *http.Request) {
	if c.opts.Pins == nil {
		http.Error(w, "toolshelf console: serve runs without a lock file", http.StatusConflict)
		return
	}
	server, tool, verb := r.PostFormValue("server"), r.PostFormValue("tool"), r.PostFormValue("verb")
	pool := c.opts.Host.Pool()
	held := pool.Quarantined()
	i := slices.IndexFunc(held, func(q upstream.Quarantined) bool { return q.Server == server && q.Tool == tool })
	if i < 0 || (verb != "approve" && verb != "deny") {
		http.Error(w, "toolshelf console: no such quarantined tool, or no such action", http.StatusBadRequest)
		return
	}
	q := held[i]
	if verb == "approve" {
		c.opts.Pins.Approve(server, tool, q.Current)
	} else {
		c.opts.Pins.Deny(server, tool, q.Current)
	}
	if err := c.opts.Pins.Save(); err != nil {
		http.Error(w, "toolshelf console: saving the lock file: "+err.Error(), http.StatusInternalServerError)
		return
	}
	pool.Rejudge()
	c.log.Info("console: tool "+verb+"d", "server", server, "tool", tool)
	http.Redirect(w, r, Prefix+"/quarantine?done="+verb+"d+"+server+"/"+tool, http.StatusSeeOther)
}

// maxActivity bounds the records the activity page shows.
const maxActivity = 500

func (c *Console) activityPage(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f := map[string]string{"profile": q.Get("profile"), "server": q.Get("server"), "tool": q.Get("tool"), "outcome": q.Get("outcome"), "person": q.Get("person")}
	data := map[string]any{"F": f, "File": c.opts.Audit != nil}
	if c.opts.Audit == nil {
		c.render(w, r, "activity", data)
		return
	}
	recs, err := c.opts.Audit(r.Context(), time.Now().Add(-7*24*time.Hour))
	if err != nil {
		data["Error"] = err.Error()
	}
	var rows []audit.Record
	ranked, atOne, atFive := 0, 0, 0
	for i := len(recs) - 1; i >= 0 && len(rows) < maxActivity; i-- {
		rec := recs[i]
		if rec.Kind == "dropped" || f["profile"] != "" && rec.Profile != f["profile"] || f["server"] != "" && rec.Server != f["server"] ||
			f["tool"] != "" && !strings.Contains(rec.Tool, f["tool"]) || f["outcome"] != "" && rec.Outcome != f["outcome"] ||
			f["person"] != "" && rec.Subject != f["person"] && rec.Email != f["person"] {
			continue
		}
		rows = append(rows, rec)
		if rec.Kind == "call" && rec.Rank > 0 {
			ranked++
			if rec.Rank == 1 {
				atOne++
			}
			if rec.Rank <= 5 {
				atFive++
			}
		}
	}
	data["Records"], data["Ranked"] = rows, ranked
	if ranked > 0 {
		data["At1"], data["At5"] = float64(atOne)/float64(ranked), float64(atFive)/float64(ranked)
	}
	c.render(w, r, "activity", data)
}

func (c *Console) learnedPage(w http.ResponseWriter, r *http.Request) {
	data := map[string]any{"On": c.opts.Learn != nil}
	if c.opts.Learn != nil {
		pairs, err := c.opts.Learn.Pairs()
		if err != nil {
			data["Error"] = err.Error()
		}
		slices.SortStableFunc(pairs, func(a, b learn.Pair) int { return cmp.Compare(a.Profile, b.Profile) })
		data["Pairs"] = pairs
	}
	c.render(w, r, "learned", data)
}

// forget deletes one pair of what was learned.
func (c *Console) forget(w http.ResponseWriter, r *http.Request) {
	if c.opts.Learn == nil {
		http.Error(w, "toolshelf console: learning is off", http.StatusConflict)
		return
	}
	profile, tool, query := r.PostFormValue("profile"), r.PostFormValue("tool"), r.PostFormValue("query")
	n, err := c.opts.Learn.Forget(func(p learn.Pair) bool { return p.Profile == profile && p.Tool == tool && p.Query == query })
	if err != nil {
		http.Error(w, "toolshelf console: "+err.Error(), http.StatusInternalServerError)
		return
	}
	c.log.Info("console: forgot a learned pair", "profile", profile, "tool", tool, "pairs", n)
	http.Redirect(w, r, Prefix+"/learned", http.StatusSeeOther)
}
