package proxy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/toolshelf/toolshelf/messages"
)

// wire is a recorded request's top-level fields and messages as the
// proxy wrote them.
type wire struct {
	fields   map[string]json.RawMessage
	messages []json.RawMessage
}

func wireOf(t *testing.T, body []byte) wire {
	t.Helper()
	var w wire
	if err := json.Unmarshal(body, &w.fields); err != nil {
		t.Fatal(err)
	}
	json.Unmarshal(w.fields["messages"], &w.messages)
	return w
}

// prefixOf reports whether every message of a is b's message at the same
// place, byte for byte.
func prefixOf(a, b wire) bool {
	if len(a.messages) > len(b.messages) {
		return false
	}
	for i := range a.messages {
		if !bytes.Equal(a.messages[i], b.messages[i]) {
			return false
		}
	}
	return true
}

// For a model that takes tools in the middle of a conversation, the
// proxy's search rounds add the tools a search found as a system message
// of tool_addition blocks after the search's results, and never touch
// the request's tools or system prompt: recorded at the upstream, every
// request of every round and turn has the same tools and system prompt,
// byte for byte, and each request's messages begin with the messages of
// the one before it, in its turn and across turns: the search rounds
// hidden from the client are put back where they were, so the prompt
// cache holds. Another caller sending the same history gets none of
// them, and a turn sent again sends what it sent the first time.
// Without tool additions, the tools change as tools are found.
func TestToolAdditionsKeepThePrefix(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) { additionsKeepThePrefix(t, stream) })
	}
	withoutAdditions(t)
}

func additionsKeepThePrefix(t *testing.T, stream bool) {
	const model = "claude-opus-4-8"
	const listIssues = "mcp__github__list_issues"
	api := newFakeAPI(t,
		func(req messages.Request) (int, string) { // turn 1, round 1
			return 200, reply("tool_use", 1000, 20, toolUse("s1", messages.DefaultSearchTool, `{"query":"create a github issue"}`))
		},
		func(req messages.Request) (int, string) { // round 2: the tool was added
			return 200, reply("tool_use", 1100, 20, toolUse("c1", createIssue, `{"owner":"o","repo":"r","title":"crash"}`))
		},
		func(req messages.Request) (int, string) { // turn 2: another search
			return 200, reply("tool_use", 1200, 20, toolUse("s2", messages.DefaultSearchTool, `{"query":"list the issues of a github repository"}`))
		},
		func(req messages.Request) (int, string) {
			return 200, reply("end_turn", 1300, 5, text("Done."))
		},
		func(req messages.Request) (int, string) { // turn 3
			return 200, reply("end_turn", 1400, 5, text("Bye."))
		},
	)
	url := startProxy(t, api, &Options{Native: NativeNever})
	body := func(history string) []byte {
		tb, _ := json.Marshal(builtinTools())
		more := ""
		if stream {
			more = `,"stream":true`
		}
		return []byte(`{"model":"` + model + `","max_tokens":1024,"system":"You are helpful.","tools":` + string(tb) + `,"messages":` + history + more + `}`)
	}
	turn1 := `[{"role":"user","content":"Open an issue about the crash."}]`
	turn2 := `[{"role":"user","content":"Open an issue about the crash."},
		{"role":"assistant","content":[` + toolUse("c1", createIssue, `{"owner":"o","repo":"r","title":"crash"}`) + `]},
		{"role":"user","content":[{"type":"tool_result","tool_use_id":"c1","content":"created #7"}]}]`
	turn3 := strings.TrimSuffix(turn2, "]") + `,{"role":"assistant","content":[` + text("Done.") + `]},{"role":"user","content":"Thanks."}]`
	for i, h := range []string{turn1, turn2, turn3} {
		if status, _, b := post(t, url+"/v1/messages", body(h), nil); status != 200 {
			t.Fatalf("turn %d: %d %s", i+1, status, b)
		}
	}
	if len(api.bodies) != 5 {
		t.Fatalf("%d requests upstream, want 5", len(api.bodies))
	}
	var ws []wire
	for _, b := range api.bodies {
		ws = append(ws, wireOf(t, b))
	}
	for i, w := range ws {
		for _, f := range []string{"tools", "system"} {
			if !bytes.Equal(w.fields[f], ws[0].fields[f]) {
				t.Errorf("request %d's %s differ from the first request's", i+1, f)
			}
		}
		if !strings.Contains(api.betas[i], messages.BetaInlineTools) {
			t.Errorf("request %d lacks the beta: %q", i+1, api.betas[i])
		}
	}
	var tools []messages.Tool
	json.Unmarshal(ws[0].fields["tools"], &tools)
	if sent := names(tools); sent[createIssue] || !sent[messages.DefaultSearchTool] || !sent["Bash"] {
		t.Errorf("the request's tools: %v", sent)
	}
	// Within a turn, and from a turn's last request to the next turn's
	// first: the messages before are kept, the hidden rounds too.
	for _, pair := range [][2]int{{0, 1}, {1, 2}, {2, 3}, {3, 4}} {
		if !prefixOf(ws[pair[0]], ws[pair[1]]) {
			t.Errorf("request %d's messages do not begin with request %d's", pair[1]+1, pair[0]+1)
		}
	}
	adds := func(w wire, at int, tool string) bool {
		return at < len(w.messages) && strings.Contains(string(w.messages[at]), `"role":"system"`) &&
			strings.Contains(string(w.messages[at]), `"type":"tool_addition"`) && strings.Contains(string(w.messages[at]), `"name":"`+tool+`"`)
	}
	if !adds(ws[1], 3, createIssue) {
		t.Errorf("round 2 does not add the tool found after the search's results: %s", ws[1].fields["messages"])
	}
	if !adds(ws[2], 3, createIssue) {
		t.Errorf("turn 2 does not add the tool where turn 1 found it: %.600s", ws[2].fields["messages"])
	}
	if n := strings.Count(string(ws[4].fields["messages"]), `"name":"`+createIssue+`"},"type":"tool_definition"`); n != 1 {
		t.Errorf("turn 3 adds %s %d times, want once", createIssue, n)
	}
	if !adds(ws[3], len(ws[3].messages)-1, listIssues) {
		t.Errorf("turn 2's search does not add what it found: %.400s", ws[3].messages[len(ws[3].messages)-1])
	}

	// Another caller with the same history: no hidden round of the
	// first's, so the tool it called is added before the call. And the
	// first caller's turn 2 sent again is its first sending.
	api.mu.Lock()
	for range 2 {
		api.script = append(api.script, func(req messages.Request) (int, string) { return 200, reply("end_turn", 1500, 5, text("Done.")) })
	}
	api.mu.Unlock()
	post(t, url+"/v1/messages", body(turn2), map[string]string{"X-Api-Key": "sk-another-client"})
	if w := wireOf(t, api.bodies[5]); len(w.messages) != 4 || !adds(w, 1, createIssue) {
		t.Errorf("another caller's turn 2: %.600s", w.fields["messages"])
	}
	post(t, url+"/v1/messages", body(turn2), nil)
	if again := wireOf(t, api.bodies[6]); !bytes.Equal(again.fields["messages"], ws[2].fields["messages"]) {
		t.Errorf("turn 2 sent again differs from its first sending")
	}
}

// Without tool additions the found tool joins the tools.
func withoutAdditions(t *testing.T) {
	tb, _ := json.Marshal(builtinTools())
	body := []byte(`{"model":"claude-opus-4-8","max_tokens":1024,"system":"You are helpful.","tools":` + string(tb) + `,"messages":[{"role":"user","content":"Open an issue about the crash."}]}`)
	api2 := newFakeAPI(t,
		func(req messages.Request) (int, string) {
			return 200, reply("tool_use", 1000, 20, toolUse("s1", messages.DefaultSearchTool, `{"query":"create a github issue"}`))
		},
		func(req messages.Request) (int, string) {
			return 200, reply("tool_use", 1100, 20, toolUse("c1", createIssue, `{"title":"crash"}`))
		},
	)
	url2 := startProxy(t, api2, &Options{Native: NativeNever, ToolAdditions: ToolAdditionsNever})
	post(t, url2+"/v1/messages", body, nil)
	if a, b := wireOf(t, api2.bodies[0]), wireOf(t, api2.bodies[1]); bytes.Equal(a.fields["tools"], b.fields["tools"]) {
		t.Error("without tool additions the tools did not change as a tool was found")
	}
}
