package rules

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Each class of call a rule cannot decide is refused, never let through:
// arguments padded past a bound, numbers that are not small whole
// numbers, a value of another type than the rule compares, a field that
// is not there, a path reworded, a limit rule that fails.
func TestUndecidableRefuses(t *testing.T) {
	s, err := Parse("team.cedar", []byte(`
@message("payments over 100 need a person")
forbid (principal, action == Action::"call", resource)
when { resource.name == "pay" && context.args.amount > 100 };

@message("refunds over 10.5 need a person")
forbid (principal, action == Action::"call", resource)
when { resource.name == "refund" && context.args.amount.greaterThan(decimal("10.5")) };

@message("ci writes only under /srv/ci")
forbid (principal == Profile::"ci", action == Action::"call", resource)
when { resource.name == "write_file" && !(context.clean.path like "/srv/ci/*") };

@ask("Send mail to someone outside?")
forbid (principal, action, resource)
when { resource.name == "send" && !(context.args.to like "*@example.com") };

@limit("5/minute")
permit (principal, action, resource) when { resource.name == "count" && context.args.n > 3 };
`))
	if err != nil {
		t.Fatal(err)
	}
	padded := func(field string, n int) string {
		var b strings.Builder
		b.WriteString("{")
		for i := range n {
			fmt.Fprintf(&b, `"k%d":%d,`, i, i)
		}
		b.WriteString(field + "}")
		return b.String()
	}
	list := func(n int) string {
		return `[` + strings.TrimSuffix(strings.Repeat(`"x",`, n), ",") + `]`
	}
	for _, c := range []struct {
		name, tool, profile, args string
		effect                    Effect
		why                       string // in the message
	}{
		// Numbers.
		{"a whole amount under", "pay", "", `{"amount": 99}`, Permit, ""},
		{"a whole amount at", "pay", "", `{"amount": 100}`, Permit, ""},
		{"a whole amount over", "pay", "", `{"amount": 101}`, Forbid, "payments over 100"},
		{"2^53", "pay", "", `{"amount": 9007199254740992}`, Forbid, "payments over 100"},
		{"2^60", "pay", "", `{"amount": 1152921504606846976}`, Forbid, "payments over 100"},
		{"2^63-1", "pay", "", `{"amount": 9223372036854775807}`, Forbid, "payments over 100"},
		{"2^64, past a long", "pay", "", `{"amount": 18446744073709551616}`, Forbid, "could not be evaluated"},
		{"100.5, a decimal > cannot take", "pay", "", `{"amount": 100.5}`, Forbid, "could not be evaluated"},
		{"5000.5", "pay", "", `{"amount": 5000.5}`, Forbid, "could not be evaluated"},
		{"1e300", "pay", "", `{"amount": 1e300}`, Forbid, "could not be evaluated"},
		{"1e999999999 (no huge expansion)", "pay", "", `{"amount": 1e999999999}`, Forbid, "could not be evaluated"},
		{"1E2 is a whole 100", "pay", "", `{"amount": 1E2}`, Permit, ""},
		{"1.01e2 is 101", "pay", "", `{"amount": 1.01e2}`, Forbid, "payments over 100"},
		{"-1e308", "pay", "", `{"amount": -1e308}`, Forbid, "could not be evaluated"},
		{"an amount as a string", "pay", "", `{"amount": "5000"}`, Forbid, "could not be evaluated"},
		{"an amount that is null", "pay", "", `{"amount": null}`, Forbid, "could not be evaluated"},
		{"an amount in a list", "pay", "", `{"amount": [5000]}`, Forbid, "could not be evaluated"},
		{"no amount", "pay", "", `{}`, Forbid, "could not be evaluated"},
		{"a decimal refund under", "refund", "", `{"amount": 10.25}`, Permit, ""},
		{"a decimal refund over", "refund", "", `{"amount": 10.5001}`, Forbid, "refunds over 10.5"},
		{"a refund past four places", "refund", "", `{"amount": 10.50001}`, Forbid, "could not be evaluated"},
		{"a whole refund (a long, not a decimal)", "refund", "", `{"amount": 3}`, Forbid, "could not be evaluated"},
		// Padding, beside the field a rule reads.
		{"2,000 keys beside an amount", "pay", "", padded(`"amount": 5000`, 2000), Forbid, "payments over 100"},
		{"25,000 keys beside an amount", "pay", "", padded(`"amount": 1`, 25000), Forbid, "more than 20000 values"},
		{"a 1,500-item list beside the path", "write_file", "ci", `{"junk":` + list(1500) + `,"path":"/etc/passwd"}`, Forbid, "ci writes only"},
		{"a 30,000-item list beside the path", "write_file", "ci", `{"junk":` + list(30000) + `,"path":"/srv/ci/a"}`, Forbid, "more than 20000 values"},
		{"deep nesting beside the path", "write_file", "ci", `{"junk":` + strings.Repeat(`{"a":`, 40) + `1` + strings.Repeat(`}`, 40) + `,"path":"/srv/ci/a"}`, Forbid, "nested deeper"},
		{"arguments that are a list", "write_file", "ci", `["/srv/ci/a"]`, Forbid, "not an object"},
		{"arguments that are not JSON", "write_file", "ci", `{"path":`, Forbid, "not JSON"},
		{"two JSON values", "write_file", "ci", `{"path":"/srv/ci/a"} {"path":"/etc"}`, Forbid, "more than one"},
		// Paths reworded.
		{"a path inside", "write_file", "ci", `{"path":"/srv/ci/out.txt"}`, Permit, ""},
		{"dot-dot", "write_file", "ci", `{"path":"/srv/ci/../../etc/passwd"}`, Forbid, "ci writes only"},
		{"dot-dot at the end", "write_file", "ci", `{"path":"/srv/ci/.."}`, Forbid, "ci writes only"},
		{"double slash and dot", "write_file", "ci", `{"path":"/srv//ci/./out"}`, Permit, ""},
		{"percent-encoded dots", "write_file", "ci", `{"path":"/srv/ci/%2e%2e/%2e%2e/etc/passwd"}`, Forbid, "ci writes only"},
		{"encoded twice", "write_file", "ci", `{"path":"/srv/ci/%252e%252e/%252e%252e/etc/passwd"}`, Forbid, "ci writes only"},
		{"an encoded slash", "write_file", "ci", `{"path":"/srv/ci/..%2f..%2fetc"}`, Forbid, "ci writes only"},
		{"a file URL outside", "write_file", "ci", `{"path":"file:///srv/ci/../etc/x"}`, Forbid, "ci writes only"},
		{"a relative path", "write_file", "ci", `{"path":"srv/ci/x"}`, Forbid, "ci writes only"},
		{"a path of another type", "write_file", "ci", `{"path":{"p":"/srv/ci/x"}}`, Forbid, "could not be evaluated"},
		// An @ask that cannot be evaluated is not asked: it refuses.
		{"mail inside", "send", "", `{"to":"a@example.com"}`, Permit, ""},
		{"mail outside asks", "send", "", `{"to":"a@evil.test"}`, Ask, "outside"},
		{"mail to a list", "send", "", `{"to":["a@example.com"]}`, Forbid, "could not be evaluated"},
	} {
		r := &Request{Profile: c.profile, Server: "srv", Tool: c.tool, Name: "mcp__srv__" + c.tool, Args: json.RawMessage(c.args)}
		d := s.Decide(r)
		if d.Effect != c.effect || !strings.Contains(d.Message, c.why) || (c.effect != Permit && len(d.Rules) == 0) {
			t.Errorf("%s: %v %v %.200q, want %v with %q", c.name, d.Effect, d.Rules, d.Message, c.effect, c.why)
		}
	}

	// A limit rule that cannot decide whether a call counts refuses it.
	c := newCounters()
	for _, tc := range []struct {
		args string
		ok   bool
	}{{`{"n": 1}`, true}, {`{"n": 9}`, true}, {`{"n": 1.5}`, false}, {`{}`, false}, {`{"n": "9"}`, false}} {
		_, err := s.admit(&Request{Tool: "count", Name: "mcp__srv__count", Args: json.RawMessage(tc.args)}, c, time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC), 1)
		if (err == nil) != tc.ok {
			t.Errorf("limit with %s: %v", tc.args, err)
		}
	}
}

// A rule that reads what is never there, or compares what never
// compares, is an error at load with its file and line.
func TestRulesChecked(t *testing.T) {
	for _, c := range []struct{ text, want string }{
		{`forbid (principal, action, resource) when { context.args.amount > "100" };`, `> compares numbers, and "100" is a string`},
		{`forbid (principal, action, resource) when { "100" <= context.args.amount };`, `<= compares numbers, and "100" is a string`},
		{`forbid (principal, action, resource) when { resource.nmae == "x" };`, `resource has no attribute "nmae"`},
		{`forbid (principal, action, resource) when { context.arg.path like "/x*" };`, `context has no attribute "arg"`},
		{`forbid (principal, action, resource) when { context.person.mail == "x" };`, `context.person has no attribute "mail"`},
		{`forbid (principal, action, resource) when { resource.destructive like "t*" };`, `like matches strings, and resource.destructive is a boolean`},
		{`forbid (principal, action, resource) when { resource.name == 5 };`, `is decided by their types alone`},
		{`forbid (principal, action, resource) when { context.hour > resource.name };`, `resource.name is a string`},
		{`forbid (principal, action, resource) when { context.args.x > decimal("1.5") };`, `use .lessThan()`},
		{`forbid (principal, action, resource) unless { context.client < "b" };`, `context.client is a string`},
	} {
		_, err := Parse("x.cedar", []byte("\n"+c.text))
		if err == nil || !strings.Contains(err.Error(), "x.cedar:2: ") || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want x.cedar:2 and %q", c.text, err, c.want)
		}
	}
	for _, ok := range []string{
		`forbid (principal, action, resource) when { context.args has amount && context.args.amount > 100 };`,
		`forbid (principal, action, resource) when { context.args.amount.greaterThan(decimal("1.5")) };`,
		`forbid (principal, action, resource) when { context.person.claims.level > 3 && context.hour < 6 };`,
		`forbid (principal, action, resource) when { context.clean.path like "/etc/*" };`,
	} {
		if _, err := Parse("ok.cedar", []byte(ok)); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
}

// Rules that vanish by mistake do not open every call: a folder left
// with no rules file, or a file emptied, keeps the last good rules (and
// is refused at start); an operator who wants no rules says so in a file.
func TestRulesGoneKeepTheLastGood(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "team.cedar")
	os.WriteFile(file, []byte(`forbid (principal, action, resource) when { resource.name == "pay" };`), 0o644)
	l, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	pay := &Request{Tool: "pay", Name: "mcp__s__pay"}
	forbidden := func() bool { return l.Current().Decide(pay).Effect == Forbid }
	if !forbidden() {
		t.Fatal("the rule does not hold")
	}
	for _, tc := range []struct {
		name   string
		change func()
		want   string // in the reload's error; "" for a reload that takes
		forbid bool
	}{
		{"emptied", func() { os.WriteFile(file, []byte(" \n\n"), 0o644) }, "the file has no rules", true},
		{"comments alone", func() { os.WriteFile(file, []byte("/* nothing */\n"), 0o644) }, "the file has no rules", true},
		{"no rules, said in passing", func() { os.WriteFile(file, []byte("// there are no rules here yet\n"), 0o644) }, "the file has no rules", true},
		{"removed", func() { os.Remove(file) }, "has no *.cedar file", true},
		{"renamed away", func() { os.WriteFile(file+".bak", []byte("x"), 0o644) }, "has no *.cedar file", true},
		{"no rules, said so", func() { os.WriteFile(file, []byte("// no rules\r\n"), 0o644) }, "", false},
	} {
		tc.change()
		l.stamp = "before" // as if the files changed
		_, err := l.Reload()
		if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s: reload %v, want %q", tc.name, err, tc.want)
		}
		if forbidden() != tc.forbid {
			t.Errorf("%s: the rule holds: %v, want %v", tc.name, forbidden(), tc.forbid)
		}
	}
	empty := t.TempDir()
	if _, err := Open(empty); err == nil || !strings.Contains(err.Error(), "no *.cedar file") {
		t.Errorf("a folder of no rules at start: %v", err)
	}
}

// TestRulesSettleAndSayWhatTheyDrop: a rules file is read once it has
// settled (a file still being written is not taken); a reload that
// drops a rule names it at WARN; a rule that may not mean what it says
// is warned about when the rules load.
func TestRulesSettleAndSayWhatTheyDrop(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "team.cedar")
	two := `@id("no pay") forbid (principal, action, resource) when { resource.name == "pay" };
@id("no drop") forbid (principal, action, resource) when { resource.name == "drop" };
`
	os.WriteFile(file, []byte(two), 0o644)
	l, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	// Half written: cut at the end of the first rule. A look that sees
	// the change does not read it; the next, with the file as it was
	// at the last look, does.
	os.WriteFile(file, []byte(two[:strings.Index(two, "\n")+1]), 0o644)
	if l.settled() {
		t.Fatal("a file that just changed is taken as settled")
	}
	if !l.settled() {
		t.Fatal("a file that stayed as it was is not settled")
	}
	old := l.Current()
	if _, err := l.Reload(); err != nil {
		t.Fatal(err)
	}
	if got := l.Current().Dropped(old); len(got) != 1 || !strings.HasPrefix(got[0], "no drop (") {
		t.Errorf("dropped: %v", got)
	}
	// Moved, not dropped: the same rule on another line.
	os.WriteFile(file, []byte("\n\n"+two), 0o644)
	old = l.Current()
	l.stamp = "before"
	l.Reload()
	if got := l.Current().Dropped(old); len(got) != 0 {
		t.Errorf("a moved rule taken for dropped: %v", got)
	}

	s, err := Parse("w.cedar", []byte(`forbid (principal, action, resource) when { context.args.path like "/srv/ci/*" };`))
	if err != nil || len(s.Warnings) != 1 || !strings.Contains(s.Warnings[0], "test paths on context.clean") {
		t.Errorf("a raw path compared: %v %v", s.Warnings, err)
	}
}

// TestPatternsThatNeverMatch: a like on context.clean whose pattern no
// cleaned value holds is an error with its file and line.
func TestPatternsThatNeverMatch(t *testing.T) {
	for _, tc := range []struct{ pattern, err string }{
		{`/srv/ci/*`, ""},
		{`http://169.254.169.254/*`, ""},
		{`https://*.example.com/*`, ""},
		{`/srv/ci`, ""},
		{`100% sure`, ""},
		{`*.txt`, ""},
		{`/srv/ci/`, "trailing"},
		{`/srv//ci/*`, `no "//"`},
		{`/srv/ci/../*`, `".." segment`},
		{`/srv/./ci/*`, `".." segment`},
		{`\\srv\\ci\\*`, "every slash"},
		{`/srv/ci%2f*`, "percent-escapes"},
		{`／srv/*`, "NFKC"},
		{`HTTP://169.254.169.254/*`, "lower case"},
	} {
		_, err := Parse("p.cedar", []byte("\n"+`forbid (principal, action, resource) when { context.clean.path like "`+tc.pattern+`" };`))
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("%s: %v", tc.pattern, err)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), "p.cedar:2")):
			t.Errorf("%s: %v, want an error at p.cedar:2 with %q", tc.pattern, err, tc.err)
		}
	}
}

// TestComparisonsThatNeverHold: the load-time type check refuses an
// equality decided by types alone (both == and !=) and an ordering of
// what is not a long (a string, a decimal), each with its line.
func TestComparisonsThatNeverHold(t *testing.T) {
	for _, tc := range []struct{ cond, err string }{
		{`context.hour != "3"`, "!= of context.hour"},
		{`context.hour == "3"`, "== of context.hour"},
		{`resource.destructive != 1`, "!= of resource.destructive"},
		{`context.args.n >= "100"`, ">= compares numbers"},
		{`context.args.n > decimal("1.5")`, "is a decimal"},
		{`context.args.n <= decimal("1.5")`, "is a decimal"},
		{`context.args.n < context.hour`, ""},
		{`context.hour != 3`, ""},
	} {
		_, err := Parse("t.cedar", []byte("forbid (principal, action, resource) when { "+tc.cond+" };"))
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("%s: %v", tc.cond, err)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), "t.cedar:1")):
			t.Errorf("%s: %v, want %q", tc.cond, err, tc.err)
		}
	}
}
