package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolshelf/toolshelf/catalog"
	"github.com/toolshelf/toolshelf/rules"
)

// A Call is one call of a tool, however the tool was reached: a client's
// call_tool, a tool listed directly, a program's call in code mode, the
// Messages library's agent.
type Call struct {
	// Tool is the tool, resolved once (see [Scope.Resolve]).
	Tool *catalog.Entry
	// Args are the arguments as the server will get them: in their one
	// form once the call is reached or checked (see [NewCall]).
	Args json.RawMessage
	// Via says how the tool was reached: "call_tool", "direct", "code"
	// or "library", for rules and records.
	Via string
	// Client is the name the client gave in its initialize, if any.
	Client string
	// canonical: Args are in their one form (see callform.go); renamed:
	// a key took its declared parameter's spelling on the way.
	canonical, renamed bool
	// release ends what rules took for the call (a limit's count of
	// calls at once) when it ends.
	release []func()
}

// A Rule decides whether a call may go: nil lets it pass, an error stops
// it, and is what the caller is told. A scope asks its rules in order
// (the built-in ones first, then [Options.Rules]); the first error
// stops the call. A rule is one function in a file of its own.
type Rule func(ctx context.Context, sc *Scope, c *Call) error

// Resolve finds a tool of the scope's profile by its qualified name: the
// one lookup of a call. A quarantined tool's error says so and how to
// approve it; a tool the rules forbid whatever the call is refused by the
// rule; a tool outside the profile is unknown, whatever was listed.
func (sc *Scope) Resolve(name string) (*catalog.Entry, error) {
	return sc.resolve(name, func(c *catalog.Catalog) (*catalog.Entry, bool) { return c.Lookup(name) },
		func(h Quarantined) bool { return h.Name == name })
}

// ResolveTool is Resolve by the server's name and the tool's own, as a
// program names it (tools.<server>.<tool>).
func (sc *Scope) ResolveTool(server, tool string) (*catalog.Entry, error) {
	return sc.resolve(server+"."+tool, func(c *catalog.Catalog) (*catalog.Entry, bool) { return c.Tool(server, tool) },
		func(h Quarantined) bool { return h.Server == server && h.Tool == tool })
}

func (sc *Scope) resolve(name string, find func(*catalog.Catalog) (*catalog.Entry, bool), held func(Quarantined) bool) (*catalog.Entry, error) {
	if sc.pool.fixed != "" {
		return nil, sc.pool.noServers()
	}
	if e, ok := find(sc.Catalog()); ok {
		return e, nil
	}
	profile := sc.profile.Load()
	for _, h := range sc.Quarantined() {
		if held(h) {
			return nil, fmt.Errorf("%w: %s", ErrQuarantined, h.Message())
		}
	}
	// A tool the rules forbid whatever the call is not in the scope's
	// catalog; named exactly, it is refused by the rule, not unknown.
	if live := sc.pool.opts.Policies; live != nil {
		if e, ok := find(sc.pool.Catalog()); ok && (profile == nil || profile.Keeps(e)) {
			if d := live.Current().Static(requestOf(context.Background(), sc, &Call{Tool: e})); d.Effect == rules.Forbid {
				return nil, refused("forbidden", d, fmt.Errorf("%w %s%s", ErrForbidden, strings.Join(d.Rules, ", "), messageOf(d)))
			}
		}
	}
	// A tool of a server that is down is not unknown: the model is told
	// the server's state, not to search again.
	server, _, ok := catalog.SplitName(name) // mcp__server__tool
	if !ok {
		server, _, ok = strings.Cut(name, ".") // a program's tools.server.tool
	}
	if ok {
		for _, u := range sc.Unavailable() {
			if u.Server == server {
				return nil, fmt.Errorf("%w: %s is a tool of server %s, which is not connected now: %s", ErrServerDown, truncate(name, 200), server, u)
			}
		}
	}
	if profile != nil {
		return nil, fmt.Errorf("%w %q in profile %s", ErrUnknownTool, name, profile.Name)
	}
	return nil, fmt.Errorf("%w %q", ErrUnknownTool, name)
}

// Reach calls a tool: every call of every face passes here. It asks the
// scope's rules in order and, when none stops it, calls the tool's
// server. The result has every secret the pool holds cut from it.
func (sc *Scope) Reach(ctx context.Context, c *Call) (*mcp.CallToolResult, error) {
	if c.Tool == nil {
		return nil, errors.New("upstream: a call without a tool")
	}
	defer func() {
		for _, f := range c.release {
			f()
		}
	}()
	if err := c.canonicalize(); err != nil {
		return nil, err
	}
	for _, rule := range builtinRules {
		if err := rule(ctx, sc, c); err != nil {
			return nil, err
		}
	}
	for _, rule := range sc.pool.opts.Rules {
		if err := rule(ctx, sc, c); err != nil {
			return nil, err
		}
	}
	return sc.pool.call(ctx, c.Tool, c.Args)
}

// Call resolves a tool by its qualified name and reaches it (see
// [Scope.Resolve] and [Scope.Reach]).
func (sc *Scope) Call(ctx context.Context, name string, args json.RawMessage) (*mcp.CallToolResult, error) {
	e, err := sc.Resolve(name)
	if err != nil {
		return nil, err
	}
	return sc.Reach(ctx, &Call{Tool: e, Args: args})
}

// builtinRules are the rules every call passes, in order: the
// operators' rules (policies) after the ones a configuration already
// says.
var builtinRules = []Rule{inProfile, serverFilter, verified, policies}

// configured are the built-in rules that a configuration says without
// rules of its own, each with the name a verdict gives it.
var configured = []struct {
	name string
	rule Rule
}{{"the profile", inProfile}, {"the server's tool filter", serverFilter}, {"the lock file", verified}}

// Verdict is what the rules say of a call, without making it or asking
// anyone (toolshelf policy check).
type Verdict struct {
	Effect rules.Effect
	// Rules names the rules that decided; Message is what the model (or,
	// for an ask, the person) would be told.
	Rules   []string
	Message string
}

// Check asks the scope's rules about a call without making it, with its
// arguments in the one form the call would carry.
func (sc *Scope) Check(ctx context.Context, c *Call) Verdict {
	if err := c.canonicalize(); err != nil {
		return Verdict{Effect: rules.Forbid, Rules: []string{"the arguments' one form"}, Message: err.Error()}
	}
	for _, r := range configured {
		if err := r.rule(ctx, sc, c); err != nil {
			return Verdict{Effect: rules.Forbid, Rules: []string{r.name}, Message: err.Error()}
		}
	}
	if live := sc.pool.opts.Policies; live != nil {
		req := requestOf(ctx, sc, c)
		d := live.Current().Decide(req)
		if d.Effect == rules.Permit {
			// A limit rule that cannot decide refuses the call as the
			// gateway would (nothing is counted here).
			if err := live.Current().LimitErrors(req); err != nil {
				return Verdict{Effect: rules.Forbid, Rules: []string{"a limit rule"}, Message: err.Error()}
			}
		}
		return Verdict{Effect: d.Effect, Rules: d.Rules, Message: d.Message}
	}
	return Verdict{Effect: rules.Permit}
}
