package proxy

import (
	"crypto/sha256"
	"encoding/json"
	"net/http"
	"sync"

	"github.com/toolshelf/toolshelf/messages"
)

// The proxy's search rounds are hidden from the client: it answers the
// model's searches itself and returns only the last round. The next
// turn's history, as the client sends it, lacks them — and so did the
// next turn's request, which then differed from the last request of the
// turn before right after the first message: the prompt cache broke on
// every turn that searched. So the hidden rounds of a turn are kept,
// keyed by the conversation up to where they went, and put back at the
// same place in every later turn's requests, which then extend the
// requests before them byte for byte.

// Bounds of what the hidden rounds kept hold.
const (
	maxHiddenBytes   = 32 << 20
	maxHiddenEntries = 4096
)

// hiddenRounds keeps recent turns' hidden rounds. A key is a chain of
// hashes: of the conversation's caller, model, system prompt and tools,
// then of each message of the history before the rounds, so that a
// conversation's rounds go back only into the same conversation of the
// same caller. The oldest go first once the bounds are reached.
type hiddenRounds struct {
	mu    sync.Mutex
	by    map[[32]byte]hiddenEntry
	order [][32]byte // oldest first
	bytes int
}

type hiddenEntry struct {
	msgs []messages.Message
	size int
}

func newHiddenRounds() *hiddenRounds { return &hiddenRounds{by: map[[32]byte]hiddenEntry{}} }

// conversationSeed is the start of a conversation's chain: who calls
// (their credential, hashed, never kept), with which model, system
// prompt and tools (toolsKey). A request with no credential of its own
// has no seed: whose conversation it is cannot be told, so nothing of
// another's is put into it, nor is its rounds kept.
func conversationSeed(h http.Header, req messages.Request, toolsKey string) (seed [32]byte, ok bool) {
	if h.Get("Authorization") == "" && h.Get("X-Api-Key") == "" {
		return seed, false
	}
	d := sha256.New()
	for _, f := range []string{h.Get("Authorization"), h.Get("X-Api-Key"), req.Model, string(req.Extra["system"]), toolsKey} {
		writeField(d, []byte(f))
	}
	d.Sum(seed[:0])
	return seed, true
}

// chain extends a key by one message; false when the message cannot be
// encoded, and so not told from another.
func chain(key [32]byte, m messages.Message) ([32]byte, bool) {
	b, err := json.Marshal(m)
	if err != nil {
		return key, false
	}
	d := sha256.New()
	d.Write(key[:])
	d.Write(b)
	var out [32]byte
	d.Sum(out[:0])
	return out, true
}

// restore returns history with the hidden rounds of earlier turns put
// back after the messages they followed, and the key of the whole
// history (for keep). Nothing is put after the last message: a turn
// sent again sends what it sent the first time. A history with a message
// that cannot be encoded gets nothing back and no key (ok false).
func (hr *hiddenRounds) restore(seed [32]byte, history []messages.Message) (msgs []messages.Message, key [32]byte, ok bool) {
	// The keys are hashed before the lock is taken: a long history costs
	// its own request the time, not every other conversation's.
	keys := make([][32]byte, len(history))
	key = seed
	for i, m := range history {
		if key, ok = chain(key, m); !ok {
			return history, key, false
		}
		keys[i] = key
	}
	var out []messages.Message
	hr.mu.Lock()
	defer hr.mu.Unlock()
	for i, m := range history {
		e, ok := hr.by[keys[i]]
		if !ok || i == len(history)-1 {
			if out != nil {
				out = append(out, m)
			}
			continue
		}
		if out == nil {
			out = make([]messages.Message, 0, len(history)+len(e.msgs))
			out = append(out, history[:i]...)
		}
		out = append(out, m)
		out = append(out, e.msgs...)
	}
	if out == nil {
		return history, key, true
	}
	return out, key, true
}

// keep records a turn's hidden rounds (the messages the proxy added after
// the history whose key is given).
func (hr *hiddenRounds) keep(key [32]byte, rounds []messages.Message) {
	if len(rounds) == 0 {
		return
	}
	b, _ := json.Marshal(rounds)
	size := len(b)
	if size > maxHiddenBytes/4 {
		return // one conversation may not push out every other
	}
	hr.mu.Lock()
	defer hr.mu.Unlock()
	if old, ok := hr.by[key]; ok {
		hr.bytes -= old.size
	} else {
		hr.order = append(hr.order, key)
	}
	hr.by[key] = hiddenEntry{msgs: rounds, size: size}
	hr.bytes += size
	for len(hr.order) > 0 && (hr.bytes > maxHiddenBytes || len(hr.by) > maxHiddenEntries) {
		k := hr.order[0]
		hr.order = hr.order[1:]
		if e, ok := hr.by[k]; ok {
			hr.bytes -= e.size
			delete(hr.by, k)
		}
	}
}
