// Package rules decides, by rules operators write in Cedar, whether a
// call of a tool may go: permit, forbid (with the rule named to the model)
// or ask the person first. The rules are one more rule of the call path
// (upstream.Rule); a profile's tools, its servers' filters and the lock
// file are decided before them.
//
// A rule sees the principal (Profile::"ci"), the action (Action::"call"),
// the resource (Tool::"mcp__memory__delete_entities", with attributes
// server, name, the annotations readOnly, destructive, idempotent and
// openWorld, each false when the server did not say, and its pin state,
// unreviewed) and the context
// (args: the arguments as a record; client: the client's name; via: how
// the tool was reached; hour: the hour of the day, UTC; person: who is
// calling when they signed in with the team's identity provider, with
// sub, email, groups and every claim of their token under claims, all
// empty for a static token). Everything is
// permitted unless a forbid rule matches. A forbid annotated
// @ask("question") asks the person instead (through MCP elicitation); its
// @message, or a forbid's, is what the model is told.
//
//	@message("the ci profile writes only under /srv/ci")
//	forbid (principal == Profile::"ci", action == Action::"call", resource)
//	when { resource.name == "write_file" && !(context.args.path like "/srv/ci/*") };
//
//	@ask("Delete these entities from memory?")
//	forbid (principal, action == Action::"call", resource)
//	when { resource.destructive };
package rules

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/cedar-policy/cedar-go"
	"github.com/cedar-policy/cedar-go/types"
)

// Set is a loaded set of rules. It is safe for concurrent use.
type Set struct {
	policies *cedar.PolicySet
	// static are the rules that do not read the context (the arguments,
	// the client, the time): what they say of a tool holds for every
	// call of it (see Static).
	static *cedar.PolicySet
	limits []limitRule
	// Files are the files the rules came from, in the order read.
	Files []string
}

// limitRule is a rule with @limit, evaluated on its own.
type limitRule struct {
	id   string
	set  *cedar.PolicySet
	spec *limitSpec
	text string
}

// Load reads rules from files and folders (every *.cedar file of a
// folder, in name order). The error names the file, the line and what
// is wrong.
func Load(paths ...string) (*Set, error) {
	s := newSet()
	for _, p := range paths {
		files := []string{p}
		if st, err := os.Stat(p); err != nil {
			return nil, fmt.Errorf("rules: %v", err)
		} else if st.IsDir() {
			files, _ = filepath.Glob(filepath.Join(p, "*.cedar"))
			slices.Sort(files)
		}
		for _, f := range files {
			if err := s.addFile(f); err != nil {
				return nil, err
			}
		}
	}
	return s, nil
}

// Parse reads rules from text; name names it in errors.
func Parse(name string, text []byte) (*Set, error) {
	s := newSet()
	if err := s.add(name, text); err != nil {
		return nil, err
	}
	return s, nil
}

// newSet is a set with the base rule: everything is permitted unless a
// forbid rule matches.
func newSet() *Set {
	s := &Set{policies: cedar.NewPolicySet(), static: cedar.NewPolicySet()}
	var base cedar.Policy
	base.UnmarshalCedar([]byte(`permit (principal, action, resource);`))
	s.policies.Add("base", &base)
	s.static.Add("base", &base)
	return s
}

func (s *Set) addFile(file string) error {
	text, err := os.ReadFile(file)
	if err != nil {
		return fmt.Errorf("rules: %v", err)
	}
	s.Files = append(s.Files, file)
	return s.add(file, text)
}

// add parses one file's rules and checks their annotations.
func (s *Set) add(file string, text []byte) error {
	list, err := cedar.NewPolicyListFromBytes(file, text)
	if err != nil {
		msg := strings.TrimPrefix(err.Error(), "parser error: ")
		if m := parseAt.FindStringSubmatch(msg); m != nil {
			return fmt.Errorf("%s:%s:%s: %s", file, m[1], m[2], m[3])
		}
		return fmt.Errorf("%s: %s", file, msg)
	}
	for _, p := range list {
		pos := p.Position()
		id := fmt.Sprintf("%s:%d", file, pos.Line)
		for k := range p.Annotations() {
			switch k {
			case "ask", "message", "id", "limit", "per":
			default:
				return fmt.Errorf("%s: unknown annotation @%s (a rule takes @id, @message, on a forbid @ask, on a permit @limit and @per)", id, k)
			}
		}
		spec, err := parseLimit(p)
		if err != nil {
			return fmt.Errorf("%s: %v", id, err)
		}
		if _, ask := p.Annotations()["ask"]; ask && p.Effect() != cedar.Forbid {
			return fmt.Errorf("%s: @ask is for forbid rules: the call waits for the person's yes", id)
		}
		if name, ok := p.Annotations()["id"]; ok {
			id = string(name) + " (" + id + ")"
		}
		if spec != nil {
			one := cedar.NewPolicySet()
			one.Add(cedar.PolicyID(id), p)
			s.limits = append(s.limits, limitRule{id: id, set: one, spec: spec, text: string(p.Annotations()["limit"])})
			continue
		}
		if !s.policies.Add(cedar.PolicyID(id), p) {
			return fmt.Errorf("%s: two rules are named %q", file, id)
		}
		if !strings.Contains(string(p.MarshalCedar()), "context") {
			s.static.Add(cedar.PolicyID(id), p)
		}
	}
	return nil
}

// parseAt is where Cedar's parser says an error is.
var parseAt = regexp.MustCompile(`^parse error at <input>:(\d+):(\d+) (.*)$`)

// Effects of a decision.
type Effect int

const (
	Permit Effect = iota
	Forbid
	Ask
)

func (e Effect) String() string { return [...]string{"permit", "forbid", "ask"}[e] }

// Request is what a rule sees of a call.
type Request struct {
	Profile string
	// Action is "call" (a tool), "prompt" (get a prompt) or "read" (read
	// a resource).
	Action string
	// Kind is the resource's entity type: "Tool" (the default), "Prompt"
	// or "Resource".
	Kind   string
	Server string
	Tool   string // the server's own name of the tool (or prompt, or the resource's URI)
	Name   string // its qualified name (the name or URI a client sees)
	// Annotations are the tool's hints, as its server gave them.
	ReadOnly, Destructive, Idempotent, OpenWorld bool
	// Unreviewed: the tool appeared after its server's tools were pinned
	// and was trusted on first use, without a person's review.
	Unreviewed  bool
	Args        json.RawMessage
	Client, Via string
	Time        time.Time
	// Person is who is calling, when the caller signed in with the
	// team's identity provider (nil for a static token or stdio).
	Person *Person
}

// Person is who is calling, as the rules see them (context.person): the
// token's subject, email, groups and every claim.
type Person struct {
	Subject, Email string
	Groups         []string
	Claims         map[string]any
}

// Decision is what the rules say of a request.
type Decision struct {
	Effect Effect
	// Rules names the rules that decided ("file:line", or "@id (file:line)").
	Rules []string
	// Message is the deciding rules' @message (or @ask) text, if any.
	Message string
}

// Decide evaluates a request. A rule that fails to evaluate (an
// attribute the arguments do not have, a wrong type) does not match, as
// Cedar has it; it is named in the decision of a forbid, never silent
// for a permit either: see Errors.
func (s *Set) Decide(r *Request) Decision {
	entities, req := cedarRequest(r)
	return decision(s.policies, entities, req)
}

// decision evaluates a request against a set of rules.
func decision(set *cedar.PolicySet, entities types.EntityMap, req cedar.Request) Decision {
	ok, diag := cedar.Authorize(set, entities, req)
	if ok == cedar.Allow {
		return Decision{Effect: Permit}
	}
	d := Decision{Effect: Ask}
	var messages []string
	for _, reason := range diag.Reasons {
		p := set.Get(reason.PolicyID)
		if p == nil {
			continue
		}
		d.Rules = append(d.Rules, string(reason.PolicyID))
		a := p.Annotations()
		q, ask := a["ask"]
		if !ask {
			d.Effect = Forbid
		}
		if m, ok := a["message"]; ok {
			messages = append(messages, string(m))
		} else if ask {
			messages = append(messages, string(q))
		}
	}
	if len(d.Rules) == 0 {
		d.Effect = Forbid // no rule permitted it (a permit-only set): Cedar's default
	}
	slices.Sort(d.Rules)
	d.Message = strings.Join(messages, "; ")
	return d
}

// Static says what the rules that do not read a call's context (its
// arguments, client, time) say of a tool: a forbid there holds for every
// call, so search need not offer the tool; an ask, that every call asks
// the person first. r's Args, Client and Time are not read.
func (s *Set) Static(r *Request) Decision {
	q := *r
	q.Args, q.Client, q.Via, q.Person = nil, "", "", nil
	entities, req := cedarRequest(&q)
	return decision(s.static, entities, req)
}

// cedarRequest is a request as Cedar takes it: the tool as an entity
// with its attributes, and the request.
func cedarRequest(r *Request) (types.EntityMap, cedar.Request) {
	kind := r.Kind
	if kind == "" {
		kind = "Tool"
	}
	tool := types.NewEntityUID(types.EntityType(kind), types.String(r.Name))
	entities := types.EntityMap{
		tool: {UID: tool, Attributes: types.NewRecord(types.RecordMap{
			"server": types.String(r.Server), "name": types.String(r.Tool),
			"readOnly": types.Boolean(r.ReadOnly), "destructive": types.Boolean(r.Destructive),
			"idempotent": types.Boolean(r.Idempotent), "openWorld": types.Boolean(r.OpenWorld),
			"unreviewed": types.Boolean(r.Unreviewed),
		})},
	}
	at := r.Time
	if at.IsZero() {
		at = time.Now()
	}
	action := r.Action
	if action == "" {
		action = "call"
	}
	return entities, cedar.Request{
		Principal: types.NewEntityUID("Profile", types.String(r.Profile)),
		Action:    types.NewEntityUID("Action", types.String(action)),
		Resource:  tool,
		Context: types.NewRecord(types.RecordMap{
			"args":   argsValue(r.Args),
			"client": types.String(r.Client),
			"via":    types.String(r.Via),
			"hour":   types.Long(at.UTC().Hour()),
			"person": personValue(r.Person),
		}),
	}
}

// personValue is the caller as rules see it: context.person.sub, .email,
// .groups (a set) and .claims (every claim of the token, a record); all
// empty for a caller who is no person, so that a rule reading them needs
// no "has".
func personValue(p *Person) types.Value {
	m := types.RecordMap{"sub": types.String(""), "email": types.String(""), "groups": types.NewSet(), "claims": types.NewRecord(nil)}
	if p != nil {
		groups := make([]types.Value, 0, len(p.Groups))
		for _, g := range p.Groups {
			groups = append(groups, types.String(g))
		}
		m["sub"], m["email"], m["groups"] = types.String(p.Subject), types.String(p.Email), types.NewSet(groups...)
		claims := make(map[string]any, len(p.Claims))
		for k, v := range p.Claims {
			claims[k] = v
		}
		m["claims"] = recordOf(claims)
	}
	return types.NewRecord(m)
}

// admit counts a permitted call against every limit rule it matches,
// each limit divided among share replicas; release ends its "at once"
// counts. The error is a *LimitError.
func (s *Set) admit(r *Request, c *counters, now time.Time, share int) (release func(), err error) {
	if len(s.limits) == 0 {
		return func() {}, nil
	}
	entities, req := cedarRequest(r)
	var releases []func()
	release = func() {
		for _, f := range releases {
			f()
		}
	}
	for _, l := range s.limits {
		if ok, _ := cedar.Authorize(l.set, entities, req); ok != cedar.Allow {
			continue
		}
		// Each person of a profile has a count of their own.
		key := l.id + "\x00" + r.Profile
		if r.Person != nil {
			key += "\x00person:" + r.Person.Subject
		}
		switch l.spec.per {
		case "server":
			key += "\x00" + r.Server
		case "tool":
			key += "\x00" + r.Name
		}
		spec := *l.spec
		text := l.text
		if share > 1 {
			spec.n = (spec.n + share - 1) / share
			text = fmt.Sprintf("%s, this replica's share of %d: %d", l.text, share, spec.n)
		}
		f, err := c.take(key, &spec, l.id, text, now)
		if err != nil {
			release()
			return nil, err
		}
		releases = append(releases, f)
	}
	return release, nil
}

// maxArgs bounds what of a call's arguments the rules see: a model
// writes them, and a rule needs their shape, not megabytes.
const (
	maxArgsDepth = 8
	maxArgsItems = 1000
)

// argsValue turns a call's JSON arguments into a Cedar record: objects
// are records, arrays sets, integers longs, other numbers and strings
// strings, within maxArgsDepth and maxArgsItems.
func argsValue(raw json.RawMessage) types.Value {
	var v any
	if len(raw) == 0 || json.Unmarshal(raw, &v) != nil {
		return types.NewRecord(nil)
	}
	return recordOf(v)
}

// recordOf is a decoded JSON object as a Cedar record, within the same
// bounds as the arguments; anything else is the empty record.
func recordOf(v any) types.Value {
	items := 0
	var conv func(v any, depth int) (types.Value, bool)
	conv = func(v any, depth int) (types.Value, bool) {
		items++
		if depth > maxArgsDepth || items > maxArgsItems {
			return nil, false
		}
		switch v := v.(type) {
		case string:
			return types.String(v), true
		case bool:
			return types.Boolean(v), true
		case float64:
			if v == math.Trunc(v) && math.Abs(v) < 1<<53 {
				return types.Long(int64(v)), true
			}
			return types.String(fmt.Sprint(v)), true
		case []any:
			var vals []types.Value
			for _, x := range v {
				if c, ok := conv(x, depth+1); ok {
					vals = append(vals, c)
				}
			}
			return types.NewSet(vals...), true
		case map[string]any:
			m := types.RecordMap{}
			for k, x := range v {
				if c, ok := conv(x, depth+1); ok {
					m[types.String(k)] = c
				}
			}
			return types.NewRecord(m), true
		}
		return nil, false
	}
	if r, ok := conv(v, 0); ok {
		if _, isRecord := r.(types.Record); isRecord {
			return r
		}
	}
	return types.NewRecord(nil)
}
