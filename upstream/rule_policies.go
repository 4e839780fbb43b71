package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolshelf/toolshelf/catalog"
	"github.com/toolshelf/toolshelf/identity"
	"github.com/toolshelf/toolshelf/rules"
)

// Errors of the operators' rules.
var (
	// ErrForbidden stops a call a rule forbids.
	ErrForbidden = errors.New("forbidden by a rule")
	// ErrDeclined stops a call the person said no to, or could not be
	// asked about.
	ErrDeclined = errors.New("not approved by the person")
)

// An asker asks the person whether a call may go, showing them message
// (the question, the tool and its arguments), and says yes or no; an
// error is a question that could not be asked.
type asker func(ctx context.Context, message string) (bool, error)

// askerOf returns an asker of the caller's client (WithClient), through
// elicitation, or nil when it cannot ask.
func askerOf(ctx context.Context) asker {
	v, ok := ctx.Value(clientKey{}).(clientValue)
	if !ok || v.client == nil {
		return nil
	}
	if p := v.client.InitializeParams(); p == nil || p.Capabilities == nil || p.Capabilities.Elicitation == nil {
		return nil
	}
	return func(ctx context.Context, message string) (bool, error) {
		return askByElicitation(ctx, v.client, message)
	}
}

// What a question shows of a call's arguments: the ones the deciding
// rules read, first and whole (a long harmless argument placed first
// must not push them out of sight), then the others within otherArgs.
const (
	// readArg bounds one argument a rule reads: one larger cannot be
	// shown whole, and the question is not asked (the call is refused).
	readArg = 8 << 10
	// otherArgs bounds what is shown of the arguments no rule reads.
	otherArgs = 2000
)

// question is what the person is asked about a call: the rules'
// question, the tool, the arguments the rules read (each whole), then
// the rest. The error is an argument a rule reads that is too long to
// show whole: the person could not see what they say yes to.
func question(d rules.Decision, c *Call) (string, error) {
	q := d.Message
	if q == "" {
		q = "Allow this call?"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n\nTool: %s\n", q, c.Tool.Name)
	var args map[string]json.RawMessage
	if json.Unmarshal(c.Args, &args) != nil {
		// Not an object: shown as it is, within the bound.
		return b.String() + "Arguments: " + clip(string(c.Args), otherArgs), nil
	}
	for _, name := range d.Args {
		v, ok := args[name]
		if !ok {
			continue
		}
		if len(v) > readArg {
			return "", fmt.Errorf("the argument %q, which rule %s reads, is %d bytes: too long to show whole in a question (at most %d)", clip(name, 64), strings.Join(d.Rules, ", "), len(v), readArg)
		}
		fmt.Fprintf(&b, "%s: %s\n", name, v)
		delete(args, name)
	}
	if len(args) > 0 {
		rest, _ := json.Marshal(args)
		label := "Arguments"
		if len(d.Args) > 0 {
			label = "Other arguments"
		}
		fmt.Fprintf(&b, "%s: %s", label, clip(string(rest), otherArgs))
	}
	return b.String(), nil
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// askByElicitation asks through a client's elicitation: a form with the
// message and one yes-or-no field.
func askByElicitation(ctx context.Context, client Client, message string) (bool, error) {
	res, err := client.Elicit(ctx, &mcp.ElicitParams{
		Message: message,
		RequestedSchema: map[string]any{
			"type": "object",
			"properties": map[string]any{
				"approve": map[string]any{"type": "boolean", "title": "Allow this call", "default": false},
			},
			"required": []string{"approve"},
		},
	})
	if err != nil {
		return false, err
	}
	yes, _ := res.Content["approve"].(bool)
	return res.Action == "accept" && yes, nil
}

// policies is the rule of the operators' rules (Options.Policies): a
// forbid stops the call with the rule's name and message; an ask waits
// for the person's yes.
func policies(ctx context.Context, sc *Scope, c *Call) error {
	live := sc.pool.opts.Policies
	if live == nil {
		return nil
	}
	req := requestOf(ctx, sc, c)
	d := live.Current().Decide(req)
	switch d.Effect {
	case rules.Permit:
		release, err := live.Admit(req)
		var limit *rules.LimitError
		if errors.As(err, &limit) {
			return &Refusal{Decision: "limited", Rules: []string{limit.Rule}, err: err}
		}
		if err != nil {
			return err
		}
		c.release = append(c.release, release)
		return nil
	}
	return enforce(ctx, d, c)
}

// enforce carries out a decision that is not a permit: a forbid refuses,
// an ask waits for the person's yes through the caller's asker.
func enforce(ctx context.Context, d rules.Decision, c *Call) error {
	if d.Effect == rules.Forbid {
		return refused("forbidden", d, fmt.Errorf("%w %s%s", ErrForbidden, strings.Join(d.Rules, ", "), messageOf(d)))
	}
	ask := askerOf(ctx)
	if ask == nil {
		return refused("declined", d, fmt.Errorf("%w: %s needs a person's yes (rule %s), and this client cannot ask (it does not offer elicitation)", ErrDeclined, c.Tool.Name, strings.Join(d.Rules, ", ")))
	}
	message, err := question(d, c)
	if err != nil {
		return refused("declined", d, fmt.Errorf("%w: %s needs a person's yes (rule %s), and it cannot be asked: %v", ErrDeclined, c.Tool.Name, strings.Join(d.Rules, ", "), err))
	}
	yes, err := ask(ctx, message)
	switch {
	case err != nil:
		return refused("declined", d, fmt.Errorf("%w: asking the person failed (rule %s): %v", ErrDeclined, strings.Join(d.Rules, ", "), err))
	case !yes:
		return refused("declined", d, fmt.Errorf("%w: the person said no (rule %s)", ErrDeclined, strings.Join(d.Rules, ", ")))
	}
	return nil
}

// A Refusal is a call the operators' rules stopped: forbidden, or not
// approved by the person. It names the rules, for the model and the audit
// log.
type Refusal struct {
	// Decision is "forbidden", "declined" or "limited".
	Decision string
	Rules    []string
	err      error
}

func (r *Refusal) Error() string { return r.err.Error() }
func (r *Refusal) Unwrap() error { return r.err }

func refused(decision string, d rules.Decision, err error) error {
	return &Refusal{Decision: decision, Rules: d.Rules, err: err}
}

func messageOf(d rules.Decision) string {
	if d.Message == "" {
		return ""
	}
	return ": " + d.Message
}

// requestOf is what the rules see of a call.
func requestOf(ctx context.Context, sc *Scope, c *Call) *rules.Request {
	r := &rules.Request{
		Profile: sc.Profile(), Action: "call", Server: c.Tool.Server, Tool: c.Tool.Tool, Name: c.Tool.Name,
		Args: c.Args, Client: c.Client, Via: c.Via, Time: time.Now(), Person: personOf(ctx),
	}
	h := c.Tool.Hints
	r.ReadOnly, r.Destructive, r.Idempotent, r.OpenWorld = h.ReadOnly, h.Destructive, h.Idempotent, h.OpenWorld
	if pins := sc.pool.opts.Pins; pins != nil {
		r.Unreviewed = pins.IsLater(c.Tool.Server, c.Tool.Tool)
	}
	return r
}

// Offered asks the operators' rules about getting a prompt ("prompt") or
// reading a resource ("read") of a server, as Reach asks them about a
// call: a forbid refuses, an ask waits for the person's yes. name is the
// prompt's name or the resource's URI as the client names it.
func (sc *Scope) Offered(ctx context.Context, action, server, name string, args json.RawMessage) error {
	live := sc.pool.opts.Policies
	if live == nil {
		return nil
	}
	kind := map[string]string{"prompt": "Prompt", "read": "Resource", "skill": "Skill", "install": "Server"}[action]
	if kind == "" {
		return fmt.Errorf("upstream: no such action %q", action)
	}
	req := &rules.Request{Profile: sc.Profile(), Action: action, Kind: kind, Server: server, Tool: name, Name: name, Args: args, Time: time.Now(), Person: personOf(ctx)}
	if d := live.Current().Decide(req); d.Effect != rules.Permit {
		return enforce(ctx, d, &Call{Tool: &catalog.Entry{Name: name, Server: server}, Args: args, Via: action})
	}
	return nil
}

// personOf is the caller's person as the rules see them, nil for none.
func personOf(ctx context.Context) *rules.Person {
	p := identity.PersonOf(ctx)
	if p == nil {
		return nil
	}
	return &rules.Person{Subject: p.Subject, Email: p.Email, Groups: p.Groups, Claims: p.Claims}
}
