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
// (args: the arguments as a record; clean: the same with every string
// holding a slash made a clean path; client: the client's name; via: how
// the tool was reached; hour: the hour of the day, UTC; person: who is
// calling when they signed in with the team's identity provider, with
// sub, email, groups and every claim of their token under claims, all
// empty for a static token). Everything is
// permitted unless a forbid rule matches, or fails: a rule that cannot be
// evaluated on a call refuses it (see Decide), and one that reads what is
// never there is an error at load (see check). A forbid annotated
// @ask("question") asks the person instead (through MCP elicitation); its
// @message, or a forbid's, is what the model is told.
//
//	@message("the ci profile writes only under /srv/ci")
//	forbid (principal == Profile::"ci", action == Action::"call", resource)
//	when { resource.name == "write_file" && !(context.clean.path like "/srv/ci/*") };
//
//	@ask("Delete these entities from memory?")
//	forbid (principal, action == Action::"call", resource)
//	when { resource.destructive };
package rules

import (
	"encoding/json"
	"fmt"
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
	// readArgs names the rules that read a call's arguments
	// (context.args or context.clean); readClean, whether one reads
	// context.clean. Without them the arguments are not converted.
	readArgs  []string
	readClean bool
	// argNames are, by rule, the arguments it reads by name: a person
	// asked about a call is shown them first (Decision.Args).
	argNames map[string][]string
	// Files are the files the rules came from, in the order read.
	Files []string
	// Warnings are what rules may not mean ("FILE:LINE: why"): said
	// when the rules load, and by policy check.
	Warnings []string
	// texts are the rules' texts by id, so that a reload can say which
	// rules it dropped.
	texts map[string]string
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
			if len(files) == 0 {
				// Rules gone by mistake (a checkout, a volume not
				// mounted) would open every call: say none explicitly.
				return nil, fmt.Errorf("rules: %s has no *.cedar file; to run without rules, keep a file there that says so (a comment: // no rules)", p)
			}
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
	before := len(s.texts)
	if err := s.add(file, text); err != nil {
		return err
	}
	if len(s.texts) == before && !noRules.Match(text) {
		// An emptied file (or one of comments alone) is more likely a
		// mistake (a truncated write, a failed template) than a wish
		// for no rules.
		return fmt.Errorf("%s: the file has no rules; to run without its rules, say so in it (a line: // no rules)", file)
	}
	return nil
}

// noRules is the line that says a file of rules means to hold none.
var noRules = regexp.MustCompile(`(?m)^[ \t]*//[ \t]*no rules[ \t]*\r?$`)

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
		r, err := check(p)
		if err != nil {
			return fmt.Errorf("%s: %v", id, err)
		}
		for _, w := range r.warnings {
			s.Warnings = append(s.Warnings, id+": "+w)
		}
		if _, ask := p.Annotations()["ask"]; ask && p.Effect() != cedar.Forbid {
			return fmt.Errorf("%s: @ask is for forbid rules: the call waits for the person's yes", id)
		}
		if name, ok := p.Annotations()["id"]; ok {
			id = string(name) + " (" + id + ")"
		}
		if s.texts == nil {
			s.texts = map[string]string{}
		}
		s.texts[id] = string(p.MarshalCedar())
		if r.args || r.clean {
			s.readArgs = append(s.readArgs, id)
		}
		if len(r.names) > 0 {
			if s.argNames == nil {
				s.argNames = map[string][]string{}
			}
			s.argNames[id] = r.names
		}
		s.readClean = s.readClean || r.clean
		if spec != nil {
			one := cedar.NewPolicySet()
			one.Add(cedar.PolicyID(id), p)
			s.limits = append(s.limits, limitRule{id: id, set: one, spec: spec, text: string(p.Annotations()["limit"])})
			continue
		}
		if !s.policies.Add(cedar.PolicyID(id), p) {
			return fmt.Errorf("%s: two rules are named %q", file, id)
		}
		if !r.context {
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
	// Args are the arguments the deciding rules read by name: what a
	// person asked about the call must see first, and whole.
	Args []string
}

// Decide evaluates a request. A rule that cannot decide refuses: a
// forbid (or an @ask) whose evaluation fails (an argument it reads is not
// there, a value of a type its comparison does not take) forbids the call
// and says which rule and why, and arguments that the rules cannot be
// given whole forbid it when any rule reads them.
func (s *Set) Decide(r *Request) Decision {
	entities, req, err := s.cedarRequest(r)
	if err != nil {
		return Decision{Effect: Forbid, Rules: slices.Clone(s.readArgs),
			Message: err.Error() + "; rules read them, so the call is refused"}
	}
	d := decision(s.policies, entities, req)
	for _, id := range d.Rules {
		for _, name := range s.argNames[id] {
			if !slices.Contains(d.Args, name) {
				d.Args = append(d.Args, name)
			}
		}
	}
	return d
}

// decision evaluates a request against a set of rules.
func decision(set *cedar.PolicySet, entities types.EntityMap, req cedar.Request) Decision {
	ok, diag := cedar.Authorize(set, entities, req)
	if ok == cedar.Allow && len(diag.Errors) == 0 {
		return Decision{Effect: Permit}
	}
	d := Decision{Effect: Ask}
	var messages []string
	for _, reason := range diag.Reasons {
		p := set.Get(reason.PolicyID)
		if p == nil || p.Effect() != cedar.Forbid {
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
	for _, e := range diag.Errors {
		// Cedar skips a rule that errors; a forbid skipped would let
		// the call go on what the rule could not read.
		if p := set.Get(e.PolicyID); p == nil || p.Effect() != cedar.Forbid {
			continue
		}
		d.Effect = Forbid
		d.Rules = append(d.Rules, string(e.PolicyID))
		messages = append(messages, fmt.Sprintf("rule %s could not be evaluated (%s), and a rule that cannot decide refuses", e.PolicyID, errorText(e.Message)))
	}
	if ok == cedar.Allow && len(d.Rules) == 0 {
		return Decision{Effect: Permit} // only permits erred: the base rule permits
	}
	if len(d.Rules) == 0 {
		d.Effect = Forbid // no rule permitted it (a permit-only set): Cedar's default
	}
	slices.Sort(d.Rules)
	d.Message = strings.Join(messages, "; ")
	return d
}

// errorText is Cedar's error message without its internal prefixes.
func errorText(msg string) string {
	msg = strings.TrimPrefix(msg, "while evaluating policy: ")
	return strings.ReplaceAll(msg, "type error: ", "")
}

// Static says what the rules that do not read a call's context (its
// arguments, client, time) say of a tool: a forbid there holds for every
// call, so search need not offer the tool; an ask, that every call asks
// the person first. r's Args, Client and Time are not read.
func (s *Set) Static(r *Request) Decision {
	q := *r
	q.Args, q.Client, q.Via, q.Person = nil, "", "", nil
	entities, req, _ := (&Set{}).cedarRequest(&q) // reads no arguments: no error
	return decision(s.static, entities, req)
}

// cedarRequest is a request as Cedar takes it: the tool as an entity
// with its attributes, and the request. The arguments are converted only
// when a rule of s reads them; the error is arguments it cannot convert
// whole (an *ArgsError).
func (s *Set) cedarRequest(r *Request) (types.EntityMap, cedar.Request, error) {
	args, clean := types.Value(types.NewRecord(nil)), types.Value(types.NewRecord(nil))
	if len(s.readArgs) > 0 {
		var err error
		if args, clean, err = argsValues(r.Args, s.readClean); err != nil {
			return nil, cedar.Request{}, err
		}
	}
	person, err := personValue(r.Person)
	if err != nil {
		return nil, cedar.Request{}, err
	}
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
			"args":   args,
			"clean":  clean,
			"client": types.String(r.Client),
			"via":    types.String(r.Via),
			"hour":   types.Long(at.UTC().Hour()),
			"person": person,
		}),
	}, nil
}

// personValue is the caller as rules see them: context.person.sub,
// .email, .groups (a set) and .claims (every claim of the token, a
// record, numbers as numberValue has them); all empty for a caller who is
// no person, so that a rule reading them needs no "has".
func personValue(p *Person) (types.Value, error) {
	m := types.RecordMap{"sub": types.String(""), "email": types.String(""), "groups": types.NewSet(), "claims": types.NewRecord(nil)}
	if p != nil {
		groups := make([]types.Value, 0, len(p.Groups))
		for _, g := range p.Groups {
			groups = append(groups, types.String(g))
		}
		m["sub"], m["email"], m["groups"] = types.String(p.Subject), types.String(p.Email), types.NewSet(groups...)
		if len(p.Claims) > 0 {
			raw, err := json.Marshal(p.Claims)
			if err != nil {
				return nil, fmt.Errorf("the rules cannot read the person's claims: %v", err)
			}
			claims, _, err := argsValues(raw, false)
			if err != nil {
				return nil, fmt.Errorf("the rules cannot read the person's claims: %v", err)
			}
			m["claims"] = claims
		}
	}
	return types.NewRecord(m), nil
}

// LimitErrors says why a limit rule cannot decide whether r counts
// against it (the first such rule), without counting anything: what
// admit would refuse the call for, for a check that makes no call.
func (s *Set) LimitErrors(r *Request) error {
	_, err := s.limitsOf(r)
	return err
}

// limitsOf returns the limit rules r counts against; the error is a rule
// that cannot decide whether it does (or arguments the rules cannot
// read): the call is then refused.
func (s *Set) limitsOf(r *Request) ([]limitRule, error) {
	if len(s.limits) == 0 {
		return nil, nil
	}
	entities, req, err := s.cedarRequest(r)
	if err != nil {
		return nil, err
	}
	var out []limitRule
	for _, l := range s.limits {
		ok, diag := cedar.Authorize(l.set, entities, req)
		if len(diag.Errors) > 0 {
			return nil, fmt.Errorf("limit rule %s could not be evaluated (%s), and a rule that cannot decide refuses", l.id, errorText(diag.Errors[0].Message))
		}
		if ok == cedar.Allow {
			out = append(out, l)
		}
	}
	return out, nil
}

// admit counts a permitted call against every limit rule it matches,
// each limit divided among share replicas; release ends its "at once"
// counts. The error is a *LimitError.
func (s *Set) admit(r *Request, c *counters, now time.Time, share int) (release func(), err error) {
	limits, err := s.limitsOf(r)
	if err != nil {
		return nil, err
	}
	var releases []func()
	release = func() {
		for _, f := range releases {
			f()
		}
	}
	for _, l := range limits {
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
			// Rounded down, so that the fleet keeps within the limit;
			// a limit smaller than the fleet leaves each replica one.
			spec.n = max(1, spec.n/share)
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

// Dropped names the rules of old that s does not hold (by their text,
// wherever they moved): what a reload took away.
func (s *Set) Dropped(old *Set) []string {
	have := map[string]bool{}
	for _, t := range s.texts {
		have[t] = true
	}
	var out []string
	for id, t := range old.texts {
		if !have[t] {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}
