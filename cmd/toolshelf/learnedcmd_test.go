package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolshelf/toolshelf/learn"
)

// A session searches, calls a tool it found, and the gateway learns the
// pair: learned show lists it (without the arguments). One session alone
// moves no ranking; once a second session has shown the pair, a later
// search in similar words ranks the tool first. learned forget clears it; usage, its earlier name, still works.
func TestServeLearnsFromUse(t *testing.T) {
	t.Parallel()
	vars := ownFolders(t)
	vars[envLearned] = filepath.Join(t.TempDir(), "learned.db")
	cfg := fakeConfig(t, map[string][2]string{"notes": {"serve", "append_entry,list_entries,archive_book"}})
	const query = `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"search_tools","arguments":{"query":"keep an entry for later"}}}`
	names := func(r map[string]any) []string {
		var res struct {
			Matches []struct{ Name string }
		}
		json.Unmarshal([]byte(resultText(r)), &res)
		var out []string
		for _, m := range res.Matches {
			out = append(out, m.Name)
		}
		return out
	}
	session := func() *stdioSession {
		s := startServeWith(t, vars, "--config", cfg)
		s.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
		s.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
		return s
	}
	similar := func() []string {
		s := session()
		defer s.hangUp()
		return names(s.send(strings.Replace(fmt.Sprintf(query, 2), "keep", "please keep", 1)))
	}

	var used string
	for i := range 2 {
		s := session()
		// The search finds both entry tools; the session calls the
		// second, twice: a session's pair counts once.
		resp := s.send(fmt.Sprintf(query, 2))
		first := names(resp)
		if len(first) < 2 {
			t.Fatalf("search: %v\n%v\n%s", first, resp, s.stderr)
		}
		used = first[1]
		for id := 3; id < 5; id++ {
			r := s.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"call_tool","arguments":{"name":"`+used+`","arguments":{"text":"secret-argument-value"}}}}`, id))
			if !strings.Contains(resultText(r), "secret-argument-value") {
				t.Fatalf("call: %v", r)
			}
		}
		s.hangUp()
		<-s.done // serve writes what it learned before it returns
		s.done <- 0

		show := runCLIWith(t, vars, "learned", "show", "--json")
		var pairs []learn.Pair
		if err := json.Unmarshal([]byte(show.stdout), &pairs); err != nil || len(pairs) != 1 {
			t.Fatalf("learned show: %v\n%s%s", err, show.stdout, show.stderr)
		}
		if p := pairs[0]; p.Tool != used || p.Query != "keep an entry for later" || p.Count != i+1 {
			t.Errorf("after session %d, pair: %+v", i+1, p)
		}
		if strings.Contains(show.stdout, "secret-argument-value") {
			t.Error("the store kept an argument value")
		}
		if again := similar(); i == 0 && len(again) > 0 && again[0] == used {
			t.Errorf("one session moved the ranking: %v", again)
		}
	}
	if again := similar(); len(again) == 0 || again[0] != used {
		t.Errorf("a similar query after two sessions' use: %v", again)
	}

	if f := runCLIWith(t, vars, "learned", "forget", "--all"); f.code != 0 || !strings.Contains(f.stdout, "forgot 1") {
		t.Errorf("learned forget: %d %s%s", f.code, f.stdout, f.stderr)
	}
	if show := runCLIWith(t, vars, "learned", "show"); !strings.Contains(show.stdout, "nothing learned yet") {
		t.Errorf("after forget: %s", show.stdout)
	}
	// 'usage' was the former name of 'learned': its subcommands are
	// pointed there.
	if old := runCLIWith(t, vars, "usage", "show"); old.code != exitUsage || !strings.Contains(old.stderr, "toolshelf learned show") {
		t.Errorf("usage show: %d %s", old.code, old.stderr)
	}
	if bad := runCLIWith(t, vars, "learned", "forget"); bad.code != exitUsage {
		t.Errorf("forget without a filter: %d", bad.code)
	}
}
