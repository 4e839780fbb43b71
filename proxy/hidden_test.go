package proxy

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/toolshelf/toolshelf/messages"
)

// The hidden rounds go back only where a conversation can be told for
// sure: no credential, or a message that cannot be encoded, and nothing
// is put back or kept; the store keeps within its bounds.
func TestHiddenRoundsRefuseWhatTheyCannotTell(t *testing.T) {
	req := messages.Request{Model: "m"}
	hdr := func(k, v string) http.Header { h := http.Header{}; h.Set(k, v); return h }
	if _, ok := conversationSeed(http.Header{}, req, "tools"); ok {
		t.Error("a request without a credential has a conversation seed")
	}
	a, okA := conversationSeed(hdr("X-Api-Key", "alice"), req, "tools")
	b, okB := conversationSeed(hdr("X-Api-Key", "bob"), req, "tools")
	c, okC := conversationSeed(hdr("Authorization", "Bearer alice"), req, "tools")
	if !okA || !okB || !okC || a == b || a == c {
		t.Error("two callers share a seed, or a caller has none")
	}

	user := func(text string) messages.Message {
		return messages.Message{Role: "user", Content: []messages.Block{messages.TextBlock(text)}}
	}
	round := []messages.Message{{Role: "assistant", Content: []messages.Block{messages.TextBlock("searching")}}}
	hr := newHiddenRounds()
	_, first, ok := hr.restore(a, []messages.Message{user("one")})
	if !ok {
		t.Fatal("no key for a plain history")
	}
	hr.keep(first, round)
	got, _, ok := hr.restore(a, []messages.Message{user("one"), user("two")})
	if !ok || len(got) != 3 || got[1].Content[0].String("text") != "searching" {
		t.Errorf("the kept round is not put back after its message: %+v", got)
	}
	if got, _, _ := hr.restore(b, []messages.Message{user("one"), user("two")}); len(got) != 2 {
		t.Errorf("another caller's history got the round: %+v", got)
	}
	bad := user("one")
	bad.Extra = map[string]json.RawMessage{"x": json.RawMessage("{")}
	if got, _, ok := hr.restore(a, []messages.Message{bad, user("two")}); ok || len(got) != 2 {
		t.Errorf("a history that cannot be encoded: ok %v, %d messages", ok, len(got))
	}

	// Bounds: the oldest go first; one turn may not take a quarter.
	for i := range maxHiddenEntries + 10 {
		var k [32]byte
		k[0], k[1], k[2] = byte(i), byte(i>>8), 1
		hr.keep(k, round)
	}
	if len(hr.by) > maxHiddenEntries {
		t.Errorf("%d turns kept, bound %d", len(hr.by), maxHiddenEntries)
	}
	if _, ok := hr.by[first]; ok {
		t.Error("the oldest turn was not the one to go")
	}
	huge := []messages.Message{user(strings.Repeat("a", maxHiddenBytes/4+1))}
	hr.keep([32]byte{9}, huge)
	if _, ok := hr.by[[32]byte{9}]; ok {
		t.Error("a turn over a quarter of the bound was kept")
	}
}
