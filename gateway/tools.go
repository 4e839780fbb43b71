package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolshelf/toolshelf/catalog"
	"github.com/toolshelf/toolshelf/internal/fuzzy"
	"github.com/toolshelf/toolshelf/sandbox"
	"github.com/toolshelf/toolshelf/search"
	"github.com/toolshelf/toolshelf/shelf"
	"github.com/toolshelf/toolshelf/upstream"
)

// The meta tools' names.
const (
	toolSearch = "search_tools"
	toolCall   = "call_tool"
)

// toolHeader is the x-mcp-header of call_tool's "name": requests carry it
// as Mcp-Param-Tool.
const toolHeader = "Tool"

// alwaysLoad marks the meta tools so that a client with a tool search of
// its own (Claude Code) does not defer them: they are the way in.
var alwaysLoad = mcp.Meta{catalog.MetaAlwaysLoad: true}

// searchSchema is every face's search input (package shelf).
var searchSchema = shelf.InputSchema()

// callSchema is call_tool's input. Its "name" is also a header
// (x-mcp-header, MCP 2026-07-28): a request carries the tool it calls as
// Mcp-Param-Tool, which a proxy or firewall in front of the gateway can
// act on without reading the body; the SDK checks it against the body.
var callSchema = json.RawMessage(`{
  "type": "object",
  "properties": {
    "name": {"type": "string", "x-mcp-header": "` + toolHeader + `", "description": "The qualified name of a tool that search_tools returned, such as mcp__github__create_issue."},
    "arguments": {"type": "object", "description": "The tool's arguments, as its input_schema describes them."}
  },
  "required": ["name"],
  "additionalProperties": false
}`)

// metaTools are the gateway's own tools.
var metaTools = []*mcp.Tool{{
	Name:  toolSearch,
	Title: "Search tools",
	Description: "Search the tools of every connected MCP server. Tools are not listed up front; " +
		"search with a short description of the task, then call a match with call_tool. " +
		"Each match has its qualified name, server, purpose and signature (parameters, ? when optional), " +
		"enough to call it in the same turn; select:NAME gives a tool's whole definition. " +
		"A match's companions are tools that produce what it needs (an id, coordinates, the date).",
	InputSchema: searchSchema,
	Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true},
	Meta:        alwaysLoad,
}, {
	Name:  toolCall,
	Title: "Call a tool",
	Description: "Call a tool found with search_tools, by its qualified name, with its arguments. " +
		"The result is the tool's own result.",
	InputSchema: callSchema,
	Meta:        alwaysLoad,
}}

// MetaDefinitions returns the meta tools in the Messages API's form, for
// measuring what they cost.
func MetaDefinitions() []json.RawMessage {
	var defs []json.RawMessage
	for _, t := range metaTools {
		b, _ := json.Marshal(map[string]any{"name": t.Name, "description": t.Description, "input_schema": t.InputSchema})
		defs = append(defs, b)
	}
	return defs
}

// addMetaTools lists the meta tools, search_tools describing the servers
// (served.described).
func (s *Server) addMetaTools(x *exposure, servers string) {
	search := *metaTools[0]
	if servers != "" {
		search.Description += "\n\n" + servers
	}
	x.server.AddTool(&search, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return s.audited(ctx, req, "search", toolSearch, func(ctx context.Context) *mcp.CallToolResult {
			return s.searchTools(ctx, x, req.Session, req.Params.Arguments)
		}), nil
	})
	x.server.AddTool(metaTools[1], func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		ctx, bad := withBadArgs(ctx)
		// Read once: the audit record's name and the call are the same.
		call, err := readCall(req.Params.Arguments)
		res := s.audited(ctx, req, "call", call.auditName(), func(ctx context.Context) *mcp.CallToolResult {
			return s.forClient(ctx, req, func(ctx context.Context) *mcp.CallToolResult {
				return s.callRead(ctx, req.Session, call, err)
			})
		})
		return bad.answer(toolCall, res)
	})
	x.listed[toolSearch] = servers
	x.listed[toolCall] = "meta"
	if s.opts.Code != nil {
		s.addCodeTool(x)
	}
	if s.opts.Proposer != nil {
		s.addProposeTool(x)
	}
}

// searchResult is what search_tools returns, as JSON text. It carries no
// structured content: clients that pass both to the model (the
// specification asks for the text beside it) would pay for every match
// twice, and search_tools declares no output schema that a program
// could rely on.
type searchResult struct {
	Query         string        `json:"query"`
	Matches       []shelf.Match `json:"matches"`
	ToolsSearched int           `json:"tools_searched"`
	// PendingServers are still connecting: their tools may match later.
	PendingServers []string `json:"pending_servers,omitempty"`
	// NotConnected are the servers whose tools were not searched, as they
	// are starting, failed or wait for a sign-in (upstream.Unavailable).
	NotConnected []upstream.Unavailable `json:"not_connected,omitempty"`
	// Activated names the tools added to this session's tool list.
	Activated []string `json:"activated,omitempty"`
	// Weak reports that no tool fits the query well: the matches are only
	// the closest; WeakReason says why (the note says it too).
	Weak       bool   `json:"weak,omitempty"`
	WeakReason string `json:"weak_reason,omitempty"`
	Note       string `json:"note,omitempty"`
}

func (s *Server) searchTools(ctx context.Context, x *exposure, ss *mcp.ServerSession, raw json.RawMessage) *mcp.CallToolResult {
	in, err := shelf.ParseInput(raw)
	if err != nil {
		return toolError("search_tools: %v", err)
	}
	// While a server's tools are unknown, any result may miss the best
	// match: wait for them (up to PendingWait), then search.
	snap := s.awaitPending(ctx, func(*served) bool { return false })
	start := time.Now()
	req := in.Request()
	req.Pending = s.up.Pending()
	found, err := snap.Search(ctx, req)
	s.met.observeSearch(ctx, time.Since(start))
	s.traceSearch(ctx, start, in.Query, found, err)
	if err != nil {
		return toolError("search_tools: %v", err)
	}
	res := searchResult{Query: cut(in.Query, echoLimit), Matches: []shelf.Match{}, ToolsSearched: found.Searched,
		PendingServers: found.Pending, Weak: found.Weak, WeakReason: found.WeakReason, Note: found.Note, NotConnected: s.up.Unavailable()}
	if len(res.NotConnected) > 0 && !found.Select && (len(found.Hits) == 0 || found.Weak) {
		names := make([]string, len(res.NotConnected))
		for i, u := range res.NotConnected {
			names[i] = u.String()
		}
		res.Note = search.NotConnectedNote(names, len(found.Hits) == 0, found.Note)
	}
	form := s.settings.Load().Results
	if found.Select || s.opts.Code != nil {
		// select: asks for whole definitions; a program needs the
		// declaration, which is its signature.
		form = shelf.Full
	}
	for _, h := range found.Hits {
		if h.Entry.Skill != "" {
			// A skill the rules keep from this caller is not named.
			if _, err := s.up.Skill(ctx, h.Entry.Skill); err == nil {
				res.Matches = append(res.Matches, shelf.MatchOf(h.Entry, form, found.Select))
			}
			continue
		}
		m := shelf.MatchOf(h.Entry, form, found.Select)
		if app := appOf(h.Entry); app != "" {
			m.App = appsOf(h.Entry)(app)
		}
		for _, c := range h.Companions {
			m.Companions = append(m.Companions, c.Name)
		}
		if s.opts.Code != nil {
			// The declaration carries the description too.
			m.Declaration = sandbox.Declaration(h.Entry.Server, h.Entry.Tool, m.Description, h.Entry.InputSchema, outputSchema(h.Entry))
			m.Description, m.InputSchema = "", nil
		}
		res.Matches = append(res.Matches, m)
	}
	if slices.ContainsFunc(res.Matches, func(m shelf.Match) bool { return m.Skill != "" }) {
		res.Note = strings.TrimSpace(res.Note + ` A match with "skill" is instructions for a task, not a tool: read its SKILL.md (resources/read of the URI in "skill"; its other files are beside it), then call the tools it "uses".`)
	}
	// select: asks for whole definitions by name, and gets them.
	if !found.Select {
		if n := trimMatches(res.Matches); n > 0 {
			res.Note = strings.TrimSpace(res.Note + fmt.Sprintf(" The last %d matches come without their schemas and with their descriptions cut, to keep this answer short: search for one again, or use select:NAME.", n))
		}
	}
	if len(found.Missing) > 0 {
		res.Note = "No tool is named " + strings.Join(found.Missing, ", ") + ". Search by what you want to do instead."
	}
	// A request without a session (MCP 2026-07-28) is served by the
	// shared server, whose tool list every such client sees: it
	// activates nothing.
	if s.opts.Activate && x != nil && x.server != s.shared.Load() {
		res.Activated = s.activate(x, res.Matches)
		if f := s.opts.OnActivate; f != nil && ss != nil && len(res.Activated) > 0 {
			f(ctx, ss.ID(), res.Activated)
		}
	}
	names := make([]string, 0, len(res.Matches))
	for _, m := range res.Matches {
		if m.Skill == "" { // what search learns is which tools were called after it
			names = append(names, m.Name)
		}
	}
	s.learn.searched(learnerOf(ctx, ss), in.Query, names, found.Select)
	return textResult(res)
}

// activate adds matches to a session's tool list.
func (s *Server) activate(x *exposure, matches []shelf.Match) []string {
	var names []string
	s.mu.Lock()
	for _, m := range matches {
		if !m.Unverified && m.Skill == "" && !x.activated[m.Name] {
			x.activated[m.Name] = true
			names = append(names, m.Name)
		}
	}
	s.mu.Unlock()
	if len(names) > 0 {
		s.sync(x, s.state.Load())
	}
	return names
}

// Reactivate adds names to the tool list of the session whose id is
// session (Activate), and reports whether the session is here: a fleet's
// replica that takes a session over gives back what its client had
// found. Names the catalog lacks, or the profile keeps out, stay unlisted.
func (s *Server) Reactivate(session string, names []string) bool {
	s.mu.Lock()
	var found *exposure
	for srv, x := range s.sessions {
		for ss := range srv.Sessions() {
			if ss.ID() == session {
				found = x
			}
		}
	}
	if found != nil {
		for _, n := range names {
			found.activated[n] = true
		}
	}
	s.mu.Unlock()
	if found != nil {
		s.sync(found, s.state.Load())
	}
	return found != nil
}

// callParams are call_tool's arguments.
type callParams struct {
	Name      *string         `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

// readCall reads call_tool's arguments.
func readCall(raw json.RawMessage) (callParams, error) {
	var in callParams
	err := json.Unmarshal(orEmpty(raw), &in)
	return in, err
}

// auditName is the name a call's audit record gives, cut.
func (c callParams) auditName() string {
	if c.Name == nil {
		return ""
	}
	return cut(*c.Name, echoLimit)
}

func (s *Server) callTool(ctx context.Context, ss *mcp.ServerSession, raw json.RawMessage) *mcp.CallToolResult {
	in, err := readCall(raw)
	return s.callRead(ctx, ss, in, err)
}

// callRead is call_tool with its arguments read (err: why they could not
// be).
func (s *Server) callRead(ctx context.Context, ss *mcp.ServerSession, in callParams, err error) *mcp.CallToolResult {
	if err != nil {
		return toolError("call_tool: arguments must be an object with \"name\" and \"arguments\": %v", err)
	}
	if in.Name == nil || strings.TrimSpace(*in.Name) == "" {
		return toolError(`call_tool: "name" is required: the qualified name of a tool from search_tools`)
	}
	name := strings.TrimSpace(*in.Name)
	snap := s.awaitPending(ctx, func(snap *served) bool {
		_, ok := snap.Catalog.Find(name)
		return ok
	})
	e, ok := snap.Catalog.Find(name)
	if !ok {
		return s.unknownTool(ctx, snap, *in.Name)
	}
	args, obj, err := normalizeArgs(in.Arguments, e)
	if err != nil {
		return toolError("call_tool %s: %v", e.Name, err)
	}
	// Checked against the schema in the one form the server will get.
	c, err := upstream.NewCall(e, args, "call_tool")
	if err != nil {
		return refuseArgs(ctx, e.Name, err)
	}
	if c.Renamed() {
		obj = nil // keys the client spelled otherwise: the full check reads them
	}
	if err := misfit(e, c.Args, obj); err != nil {
		return toolError("call_tool %s: %v", e.Name, err)
	}
	return s.reach(ctx, ss, c)
}

// unknownTool explains a call to a name the catalog does not have and
// names the closest tools.
func (s *Server) unknownTool(ctx context.Context, snap *served, name string) *mcp.CallToolResult {
	// Held back by the lock file, or forbidden by a rule whatever the
	// call: the scope says which, and why.
	if _, err := s.up.Resolve(name); errors.Is(err, upstream.ErrQuarantined) || errors.Is(err, upstream.ErrForbidden) {
		s.logger.Warn("call refused", "tool", cut(name, echoLimit), "error", err)
		noteRefusal(ctx, err)
		return toolError("call_tool: %v", err)
	} else if errors.Is(err, upstream.ErrServerDown) {
		return toolError("call_tool: %v. Call it again once the server is up; search_tools says which servers are not.", err)
	}
	for _, h := range s.up.Quarantined() {
		if h.Tool == name && !strings.HasPrefix(name, catalog.Prefix) {
			s.logger.Warn("call to a quarantined tool refused", "tool", h.Name, "status", h.Status)
			return toolError("call_tool: %s", h.Message())
		}
	}
	names := snap.Catalog.Names()
	close := fuzzy.Closest(name, names, 5, max(3, len(name)/3))
	if len(close) < 3 {
		if hits, err := snap.Engine().Search(ctx, cut(name, fuzzy.MaxName), 5); err == nil {
			for _, h := range hits {
				if !contains(close, h.Entry.Name) {
					close = append(close, h.Entry.Name)
				}
			}
		}
	}
	msg := fmt.Sprintf("call_tool: there is no tool %s.", quoteClipped(name))
	if len(close) > 0 {
		msg += " Closest: " + strings.Join(close[:min(5, len(close))], ", ") + "."
	}
	msg += " Use search_tools to find a tool and its qualified name."
	if p := s.up.Pending(); len(p) > 0 {
		msg += " Still connecting: " + strings.Join(p, ", ") + "."
	}
	return toolError("%s", msg)
}

// maxSearchBytes bounds the schemas and descriptions of one search's
// matches: a broad query with the largest limit would otherwise return
// 50 whole definitions (270 KB over the built-in catalog), more than a
// model should read at once. A result carries the matches twice (as text,
// with every quote escaped, and as structured content), so that it stays
// under 200 KB.
const maxSearchBytes = 80_000

// trimMatches keeps matches within maxSearchBytes, best first: past it,
// a match keeps its name and the start of its description. It returns
// how many it trimmed.
func trimMatches(ms []shelf.Match) int {
	size, trimmed := 0, 0
	for i := range ms {
		m := &ms[i]
		size += len(m.Name) + len(m.Description) + len(m.InputSchema) + len(m.Declaration)
		if size <= maxSearchBytes {
			continue
		}
		m.InputSchema, m.Declaration = nil, ""
		m.Description = cut(m.Description, trimmedDescription)
		trimmed++
	}
	return trimmed
}

// trimmedDescription is how much of its description a trimmed match keeps.
const trimmedDescription = 200

// echoLimit bounds how much of the model's input (a name, a query) the
// gateway repeats in a result or a log: a hostile client can send
// megabytes, and echoing them back costs every party.
const echoLimit = 200

// quoteClipped quotes s, cut to echoLimit bytes, saying how long it was
// when it was cut.
func quoteClipped(s string) string {
	if len(s) <= echoLimit {
		return strconv.Quote(s)
	}
	return fmt.Sprintf("%q… (%d bytes in all)", cut(s, echoLimit), len(s))
}

// cut returns at most n bytes of s, not splitting a UTF-8 sequence.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// normalizeArgs returns the arguments to send upstream. Models get the
// nesting wrong in a few set ways, each undone here when the tool's own
// schema does not explain it: arguments as a JSON string, arguments
// wrapped in another {"arguments": {...}}, and the call repeated inside
// ({"name": ..., "arguments": {...}} or {"<tool name>": {...}}).
func normalizeArgs(raw json.RawMessage, e *catalog.Entry) (json.RawMessage, map[string]json.RawMessage, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return json.RawMessage(`{}`), map[string]json.RawMessage{}, nil
	}
	if raw[0] == '"' {
		var s string
		if json.Unmarshal(raw, &s) == nil && strings.HasPrefix(strings.TrimSpace(s), "{") && json.Valid([]byte(s)) {
			raw = json.RawMessage(s)
		}
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil {
		return nil, nil, errors.New(`"arguments" must be a JSON object`)
	}
	has := func(p string) bool {
		for _, q := range e.Params {
			if q.Name == p {
				return true
			}
		}
		return false
	}
	for range 2 { // at most two levels of wrapping
		if len(obj) == 0 {
			break
		}
		var inner json.RawMessage
		switch {
		case len(obj) == 1 && obj["arguments"] != nil && !has("arguments"):
			inner = obj["arguments"]
		case len(obj) == 2 && obj["arguments"] != nil && obj["name"] != nil && !has("arguments") && !has("name"):
			var n string
			if json.Unmarshal(obj["name"], &n) == nil && (n == e.Name || n == e.Tool) {
				inner = obj["arguments"]
			}
		case len(obj) == 1 && (obj[e.Name] != nil || obj[e.Tool] != nil) && !has(e.Tool):
			inner = obj[e.Name]
			if inner == nil {
				inner = obj[e.Tool]
			}
		}
		if inner == nil {
			break
		}
		// Declared past the check: Unmarshal takes its address, which
		// puts it on the heap, and most calls are not wrapped.
		var next map[string]json.RawMessage
		if json.Unmarshal(inner, &next) != nil || next == nil {
			break
		}
		obj, raw = next, inner
	}
	if obj == nil {
		obj = map[string]json.RawMessage{} // "{}" reads as none
	}
	return raw, obj, nil
}

func orEmpty(raw json.RawMessage) json.RawMessage {
	if len(bytes.TrimSpace(raw)) == 0 {
		return json.RawMessage(`{}`)
	}
	return raw
}

// textResult returns v as compact JSON text only (see searchResult).
func textResult(v any) *mcp.CallToolResult {
	b, err := marshal(v)
	if err != nil {
		return toolError("encoding the result: %v", err)
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}}
}

// marshal is json.Marshal without HTML escaping: schemas and descriptions
// are passed to the model as written.
func marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSpace(buf.Bytes()), nil
}
