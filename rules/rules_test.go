package rules

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const teamRules = `
@message("the ci profile writes only under /srv/ci")
forbid (principal == Profile::"ci", action == Action::"call", resource)
when { resource.name == "write_file" && !(context.args.path like "/srv/ci/*") };

@id("destructive needs a yes")
@ask("Run a destructive tool?")
forbid (principal, action == Action::"call", resource)
when { resource.destructive };

forbid (principal == Profile::"interns", action, resource)
when { resource.server == "payments" };

@ask("Nobody has reviewed this tool: call it?")
forbid (principal, action, resource) when { resource.unreviewed };
`

func TestDecide(t *testing.T) {
	s, err := Parse("team.cedar", []byte(teamRules))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name    string
		req     Request
		effect  Effect
		rule    string
		message string
	}{
		{"a write inside the folder", Request{Profile: "ci", Server: "fs", Tool: "write_file", Name: "mcp__fs__write_file", Args: json.RawMessage(`{"path":"/srv/ci/out.txt"}`)}, Permit, "", ""},
		{"a write outside it", Request{Profile: "ci", Server: "fs", Tool: "write_file", Name: "mcp__fs__write_file", Args: json.RawMessage(`{"path":"/etc/passwd"}`)}, Forbid, "team.cedar:2", "the ci profile writes only under /srv/ci"},
		{"the same write, another profile", Request{Profile: "ops", Server: "fs", Tool: "write_file", Name: "mcp__fs__write_file", Args: json.RawMessage(`{"path":"/etc/passwd"}`)}, Permit, "", ""},
		{"a write without a path: the rule cannot decide", Request{Profile: "ci", Server: "fs", Tool: "write_file", Name: "mcp__fs__write_file", Args: json.RawMessage(`{}`)}, Forbid, "team.cedar:2", "rule team.cedar:2 could not be evaluated (record does not have the attribute `path`), and a rule that cannot decide refuses"},
		{"a destructive tool", Request{Profile: "ops", Server: "memory", Tool: "delete_entities", Name: "mcp__memory__delete_entities", Destructive: true}, Ask, "destructive needs a yes (team.cedar:6)", "Run a destructive tool?"},
		{"destructive and forbidden", Request{Profile: "interns", Server: "payments", Tool: "refund", Name: "mcp__payments__refund", Destructive: true}, Forbid, "", ""},
		{"read-only", Request{Profile: "ops", Server: "memory", Tool: "read_graph", Name: "mcp__memory__read_graph", ReadOnly: true}, Permit, "", ""},
		{"unreviewed", Request{Profile: "ops", Server: "memory", Tool: "new_tool", Name: "mcp__memory__new_tool", Unreviewed: true}, Ask, "team.cedar:14", "Nobody has reviewed this tool: call it?"},
		{"hostile arguments", Request{Profile: "ci", Server: "fs", Tool: "write_file", Name: "mcp__fs__write_file", Args: json.RawMessage(`{"path":` + strings.Repeat(`[`, 100) + strings.Repeat(`]`, 100) + `}`)}, Forbid, "team.cedar:2", "the rules cannot read the arguments: nested deeper than 32 levels; rules read them, so the call is refused"},
		{"another tool, no path", Request{Profile: "ci", Server: "fs", Tool: "read_file", Name: "mcp__fs__read_file", Args: json.RawMessage(`{}`)}, Permit, "", ""},
	} {
		d := s.Decide(&c.req)
		if d.Effect != c.effect || (c.rule != "" && !contains(d.Rules, c.rule)) || (c.message != "" && d.Message != c.message) {
			t.Errorf("%s: %v %v %q, want %v %s %q", c.name, d.Effect, d.Rules, d.Message, c.effect, c.rule, c.message)
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// TestBadRules: a rule that does not parse, or misuses an annotation,
// names its file and line.
func TestBadRules(t *testing.T) {
	dir := t.TempDir()
	for name, text := range map[string]string{
		"syntax.cedar":     "permit (principal, action, resource);\nforbid (principal action, resource);\n",
		"ask.cedar":        "\n\n@ask(\"sure?\")\npermit (principal, action, resource);\n",
		"annotation.cedar": "@because(\"x\")\nforbid (principal, action, resource);\n",
	} {
		os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644)
	}
	for name, want := range map[string]string{
		"syntax.cedar":     "syntax.cedar:2:25: ",
		"ask.cedar":        "ask.cedar:3: @ask is for forbid rules",
		"annotation.cedar": "annotation.cedar:1: unknown annotation @because",
	} {
		_, err := Load(filepath.Join(dir, name))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", name, err, want)
		}
	}
	_, err := Load(filepath.Join(dir, "syntax.cedar"))
	t.Logf("a syntax error reads: %v", err)
}

// TestLimits: a permit with @limit counts the calls it matches, per
// principal and, with @per, per server or tool; past it, a call is
// refused with when to try again; "at once" frees a count when a call
// ends.
func TestLimits(t *testing.T) {
	s, err := Parse("limits.cedar", []byte(`
@limit("3/minute") @per("server")
permit (principal, action == Action::"call", resource) when { resource.server == "payments" };

@id("two at once")
@limit("2 at once")
permit (principal == Profile::"ci", action, resource);
`))
	if err != nil {
		t.Fatal(err)
	}
	c := newCounters()
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	pay := &Request{Profile: "ops", Server: "payments", Tool: "refund", Name: "mcp__payments__refund"}
	for i := range 3 {
		if _, err := s.admit(pay, c, now.Add(time.Duration(i)*time.Second), 1); err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
	}
	_, err = s.admit(pay, c, now.Add(10*time.Second), 1)
	var le *LimitError
	if !errors.As(err, &le) || le.Retry != 50*time.Second || le.Rule != "limits.cedar:2" {
		t.Fatalf("the fourth call in a minute: %v", err)
	}
	if _, err := s.admit(&Request{Profile: "other", Server: "payments", Name: "mcp__payments__refund"}, c, now.Add(10*time.Second), 1); err != nil {
		t.Errorf("another profile has counts of its own: %v", err)
	}
	if _, err := s.admit(pay, c, now.Add(61*time.Second), 1); err != nil {
		t.Errorf("a minute later: %v", err)
	}
	ci := &Request{Profile: "ci", Server: "fs", Name: "mcp__fs__read"}
	r1, err1 := s.admit(ci, c, now, 1)
	_, err2 := s.admit(ci, c, now, 1)
	_, err3 := s.admit(ci, c, now, 1)
	if err1 != nil || err2 != nil || !errors.As(err3, &le) || !strings.Contains(err3.Error(), "two at once") {
		t.Fatalf("at once: %v %v %v", err1, err2, err3)
	}
	r1()
	r1() // once
	if _, err := s.admit(ci, c, now, 1); err != nil {
		t.Errorf("after one ended: %v", err)
	}
	if _, err := s.admit(ci, c, now, 1); err == nil {
		t.Errorf("a release counted twice")
	}
	for text, want := range map[string]string{
		`@limit("many") permit (principal, action, resource);`:                    `want "N/minute" (or /second, /hour) or "N at once"`,
		`@limit("3/minute") forbid (principal, action, resource);`:                "@limit is for permit rules",
		`@limit("3/minute") @per("person") permit (principal, action, resource);`: `@per("person")`,
	} {
		if _, err := Parse("bad.cedar", []byte(text)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", text, err, want)
		}
	}
}

// TestLimitShare: in a fleet, each replica counts its share of a limit.
func TestLimitShare(t *testing.T) {
	s, err := Parse("l.cedar", []byte(`@limit("5/minute") permit (principal, action, resource);`))
	if err != nil {
		t.Fatal(err)
	}
	c := newCounters()
	now := time.Now()
	r := &Request{Profile: "p", Server: "s", Name: "mcp__s__t"}
	for i := range 2 { // floor(5/2)
		if _, err := s.admit(r, c, now, 2); err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
	}
	if _, err := s.admit(r, c, now, 2); err == nil || !strings.Contains(err.Error(), "this replica's share of 2: 2") {
		t.Errorf("past the share: %v", err)
	}
}
