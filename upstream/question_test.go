package upstream

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/toolshelf/toolshelf/catalog"
	"github.com/toolshelf/toolshelf/rules"
)

// The person asked about a call sees the arguments the rule reads first
// and whole, whatever comes before them in the call; one too long to
// show whole is not asked about (the call is refused).
func TestQuestionShowsWhatTheRuleReads(t *testing.T) {
	set, err := rules.Parse("ask.cedar", []byte(`@ask("Write outside the work folder?")
forbid (principal, action, resource) when { resource.name == "write_file" && !(context.clean.path like "/work/*") };`))
	if err != nil {
		t.Fatal(err)
	}
	ask := func(args string) (string, error) {
		r := &rules.Request{Tool: "write_file", Name: "mcp__fs__write_file", Args: json.RawMessage(args)}
		d := set.Decide(r)
		if d.Effect != rules.Ask {
			t.Fatalf("%.80s: %v %s", args, d.Effect, d.Message)
		}
		return question(d, &Call{Tool: &catalog.Entry{Name: "mcp__fs__write_file"}, Args: json.RawMessage(args)})
	}
	harmless := strings.Repeat("lorem ipsum ", 400)
	for _, args := range []string{
		`{"content":"` + harmless + `","path":"/etc/cron.d/x"}`,
		`{"a":"` + harmless + `","b":"` + harmless + `","path":"/etc/cron.d/x","z":1}`,
	} {
		q, err := ask(args)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(q, `path: "/etc/cron.d/x"`) || !strings.HasPrefix(q, "Write outside the work folder?") {
			t.Errorf("the question does not show the path whole:\n%.400s", q)
		}
		if i, j := strings.Index(q, "path:"), strings.Index(q, "lorem"); i < 0 || j < i {
			t.Errorf("the path is not first: %d, %d", i, j)
		}
	}
	long := `{"path":"/etc/` + strings.Repeat("a", 10000) + `"}`
	if _, err := ask(long); err == nil || !strings.Contains(err.Error(), "too long to show whole") {
		t.Errorf("a path too long to show: %v", err)
	}
}
