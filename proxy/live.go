package proxy

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"strings"
	"time"

	"github.com/toolshelf/toolshelf/messages"
)

// Streaming clients get the final round as it comes. Each round streams
// from the upstream; the proxy holds back one content block at a time
// until it sees what follows: a call of the search tool makes the round a
// hidden one (its blocks are dropped, the search answered, and the next
// round streams on into the same message), anything else lets the held
// block through. The client sees one message: one message_start, its
// blocks numbered in order, one message_delta with every round's usage.

// sseEvent is one server-sent event.
type sseEvent struct {
	name string
	data []byte
}

// maxEventBytes bounds one event of a stream (a line, or the lines of
// one event): the API's events are a few kilobytes; one that never ends
// its line must not take the proxy's memory.
const maxEventBytes = 4 << 20

// readEvent reads the next event of a stream, of at most maxEventBytes,
// and returns the bytes it read.
func readEvent(r *bufio.Reader) (sseEvent, int, error) {
	var ev sseEvent
	read := 0
	for {
		line, err := readLine(r, maxEventBytes-read)
		read += len(line)
		if err != nil {
			if err == io.EOF && len(line) == 0 && (ev.name != "" || ev.data != nil) {
				return ev, read, nil
			}
			return ev, read, err
		}
		line = bytes.TrimRight(line, "\r\n")
		switch {
		case len(line) == 0:
			if ev.name != "" || ev.data != nil {
				return ev, read, nil
			}
		case bytes.HasPrefix(line, []byte("event:")):
			ev.name = string(bytes.TrimSpace(line[len("event:"):]))
		case bytes.HasPrefix(line, []byte("data:")):
			d := bytes.TrimPrefix(line[len("data:"):], []byte(" "))
			if ev.data != nil {
				ev.data = append(append(ev.data, '\n'), d...)
			} else {
				ev.data = append([]byte(nil), d...)
			}
		}
	}
}

// maxSearchInput bounds the input of a call of the search tool kept
// from a stream.
const maxSearchInput = 256 << 10

// errEventTooLarge is an event over maxEventBytes.
var errEventTooLarge = fmt.Errorf("an event of the upstream's stream is over %d bytes", maxEventBytes)

// readLine reads a line of at most max bytes. The line is valid until
// the next read.
func readLine(r *bufio.Reader, max int) ([]byte, error) {
	var long []byte // a line longer than the reader's buffer
	for {
		frag, err := r.ReadSlice('\n')
		if len(long)+len(frag) > max {
			return nil, errEventTooLarge
		}
		if err == bufio.ErrBufferFull {
			long = append(long, frag...)
			continue
		}
		if long == nil {
			return frag, err
		}
		return append(long, frag...), err
	}
}

// liveBlock is one content block of a round, as it streams.
type liveBlock struct {
	block  map[string]json.RawMessage // content_block_start's block
	text   strings.Builder            // text, thinking
	sig    strings.Builder            // thinking's signature
	input  strings.Builder            // tool_use's partial_json
	events []sseEvent                 // held for the client
	search bool                       // a call of the proxy's search tool
}

// whole returns the block with its deltas applied, for the history.
func (b *liveBlock) whole() messages.Block {
	m := make(map[string]json.RawMessage, len(b.block))
	for k, v := range b.block {
		m[k] = v
	}
	var typ string
	_ = json.Unmarshal(m["type"], &typ)
	switch typ {
	case "text":
		m["text"], _ = json.Marshal(b.text.String())
	case "thinking":
		m["thinking"], _ = json.Marshal(b.text.String())
		m["signature"], _ = json.Marshal(b.sig.String())
	case "tool_use", "server_tool_use":
		if in := b.input.String(); in != "" {
			m["input"] = json.RawMessage(in)
		}
	}
	raw, _ := json.Marshal(m)
	var out messages.Block
	_ = json.Unmarshal(raw, &out)
	return out
}

// liveStream is one client's stream across rounds.
type liveStream struct {
	w       http.ResponseWriter
	flusher http.Flusher
	started bool // message_start sent
	next    int  // the client's next block index
	total   usage
	round   usage // the last round's, for its span
	gone    error // the client could not be written to: it has left
}

func (l *liveStream) send(name string, data []byte) {
	if l.gone != nil {
		return
	}
	if _, err := fmt.Fprintf(l.w, "event: %s\ndata: %s\n\n", name, data); err != nil {
		l.gone = err
		return
	}
	if l.flusher != nil {
		l.flusher.Flush()
	}
}

// emit sends a held block's events under the client's next index.
func (l *liveStream) emit(b *liveBlock) {
	idx := l.next
	l.next++
	for _, ev := range b.events {
		var m map[string]json.RawMessage
		if json.Unmarshal(ev.data, &m) == nil {
			m["index"], _ = json.Marshal(idx)
			ev.data, _ = json.Marshal(m)
		}
		l.send(ev.name, ev.data)
	}
}

// fail ends a stream already started with the API's error event.
func (l *liveStream) fail(kind, msg string) {
	l.send("error", errorJSON(kind, msg))
}

// streamMessages serves a streaming client whose request the plan
// rewrites.
func (s *Server) streamMessages(w http.ResponseWriter, r *http.Request, req messages.Request, p *plan, start time.Time) {
	flusher, _ := w.(http.Flusher)
	l := &liveStream{w: w, flusher: flusher}
	msgs, turn, keep := s.restoreHidden(r, req, p)
	history := len(msgs)
	for rounds := 1; ; rounds++ {
		round := p.rewrite(req, msgs)
		round.Extra["stream"] = json.RawMessage(`true`)
		body, _ := json.Marshal(round)
		rr, span := s.startRound(r, req.Model, rounds)
		resp, err := s.open(rr, body)
		if err != nil {
			endRound(span, nil, false, 0)
			if r.Context().Err() != nil {
				return
			}
			s.failStream(w, l, http.StatusBadGateway, "api_error", "toolshelf proxy: the upstream cannot be reached: "+err.Error())
			return
		}
		if resp.StatusCode != http.StatusOK {
			endRound(span, nil, false, resp.StatusCode)
			raw, _ := s.readAnswer(resp)
			resp.Body.Close()
			if !l.started {
				relay(w, resp, raw)
				return
			}
			var e errorBody
			if json.Unmarshal(raw, &e) != nil || e.Error.Type == "" {
				e.Error.Type, e.Error.Message = "api_error", fmt.Sprintf("the upstream answered %d", resp.StatusCode)
			}
			l.fail(e.Error.Type, e.Error.Message)
			return
		}
		if !l.started {
			copyHeaders(w.Header(), resp.Header)
			w.Header().Set("Content-Type", "text/event-stream")
			w.Header().Set("Cache-Control", "no-cache")
			w.WriteHeader(http.StatusOK)
		}
		blocks, done, err := s.streamRound(rr.Context(), l, resp.Body, p, rounds > s.opts.MaxRounds)
		if !done && err == nil {
			// A hidden search round is left at its message_delta; the
			// rest (message_stop) is read, a little at most, so that the
			// round's meter sees it end as it should rather than cut
			// short — whether it had already come with the delta
			// depended on how the bytes arrived.
			io.CopyN(io.Discard, resp.Body, roundTail)
		}
		resp.Body.Close()
		status := http.StatusOK
		if err != nil {
			status = 0
		}
		endRound(span, l.round, !done && err == nil, status)
		if err != nil {
			if r.Context().Err() == nil && l.gone == nil {
				l.fail("api_error", "toolshelf proxy: the upstream's stream broke off: "+err.Error())
			}
			return
		}
		if done {
			s.keepHidden(keep, turn, msgs[history:])
			s.logDone(req, p, rounds, start)
			return
		}
		var content, results []messages.Block
		was := maps.Clone(p.loaded)
		for _, b := range blocks {
			whole := b.whole()
			content = append(content, whole)
			if b.search {
				results = append(results, s.answerSearch(r.Context(), p, whole))
			}
		}
		msgs = append(msgs, messages.Message{Role: "assistant", Content: content}, messages.Message{Role: "user", Content: results})
		msgs = p.afterSearch(req, msgs, was)
	}
}

// failStream answers with an error: the API's error response before the
// stream has started, its error event after.
func (s *Server) failStream(w http.ResponseWriter, l *liveStream, status int, kind, msg string) {
	if l.started {
		l.fail(kind, msg)
		return
	}
	writeError(w, status, kind, msg)
}

// streamRound reads one round's stream, passing on what the client must
// see. It returns the round's blocks, and whether the client's message is
// finished: a round that is not is a hidden search, to be answered.
// last makes a searching round the last one, with a note.
//
// What a round keeps (its blocks' text and input, for the history of a
// hidden round) is bounded by the bytes read, MaxResponseBytes a round as
// for an answer read whole; reading stops when the client has gone.
func (s *Server) streamRound(ctx context.Context, l *liveStream, body io.Reader, p *plan, last bool) (blocks []*liveBlock, done bool, err error) {
	searched := false // the round calls the search tool
	rd := bufio.NewReaderSize(body, 64<<10)
	byIndex := map[int]*liveBlock{}
	var held *liveBlock // the block waiting to see what follows it
	// The round's usage: message_start's, then message_delta's counts,
	// which are the round's totals so far.
	round := usage{}
	release := func() {
		if held != nil && !searched {
			l.emit(held)
		}
		held = nil
	}
	var read int64
	for {
		ev, n, rerr := readEvent(rd)
		if rerr != nil {
			return blocks, false, rerr
		}
		if read += int64(n); read > s.opts.MaxResponseBytes {
			return blocks, false, fmt.Errorf("one round of the stream is over %d bytes", s.opts.MaxResponseBytes)
		}
		if ctx.Err() != nil {
			return blocks, false, ctx.Err()
		}
		if l.gone != nil {
			return blocks, false, l.gone
		}
		var m struct {
			Type         string                     `json:"type"`
			Index        int                        `json:"index"`
			Message      map[string]json.RawMessage `json:"message"`
			ContentBlock map[string]json.RawMessage `json:"content_block"`
			Delta        map[string]json.RawMessage `json:"delta"`
			Usage        usage                      `json:"usage"`
		}
		_ = json.Unmarshal(ev.data, &m)
		switch ev.name {
		case "ping":
			if l.started {
				l.send(ev.name, ev.data)
			}
		case "message_start":
			_ = json.Unmarshal(m.Message["usage"], &round)
			if !l.started {
				l.started = true
				l.send(ev.name, ev.data)
			}
		case "content_block_start":
			b := &liveBlock{block: m.ContentBlock, events: []sseEvent{ev}}
			var typ, name string
			_ = json.Unmarshal(m.ContentBlock["type"], &typ)
			_ = json.Unmarshal(m.ContentBlock["name"], &name)
			b.search = typ == "tool_use" && name == p.searchName
			byIndex[m.Index] = b
			blocks = append(blocks, b)
			switch {
			case b.search:
				// What came before belongs to a hidden round.
				held, searched = nil, true
			case typ == "tool_use" && searched:
				// The model also calls a tool of the client's: the
				// round is the client's answer after all, without the
				// search.
				searched = false
				held = b
			default:
				release()
				held = b
			}
		case "content_block_delta", "content_block_stop":
			b := byIndex[m.Index]
			if b == nil {
				continue
			}
			if ev.name == "content_block_delta" {
				var s string
				switch {
				case json.Unmarshal(m.Delta["text"], &s) == nil && s != "":
					b.text.WriteString(s)
				case json.Unmarshal(m.Delta["thinking"], &s) == nil && s != "":
					b.text.WriteString(s)
				case json.Unmarshal(m.Delta["signature"], &s) == nil && s != "":
					b.sig.WriteString(s)
				case json.Unmarshal(m.Delta["partial_json"], &s) == nil:
					if b.search && b.input.Len()+len(s) > maxSearchInput {
						// Its query is searched cut to a few kilobytes:
						// an input this long is not a search.
						return blocks, false, fmt.Errorf("the search tool's input is over %d bytes", maxSearchInput)
					}
					b.input.WriteString(s)
				}
			}
			if b.search {
				continue
			}
			if b == held {
				b.events = append(b.events, ev)
			}
		case "message_delta":
			for k, v := range m.Usage {
				round[k] = v
			}
			l.total.add(round)
			l.round = round
			if searched && !last {
				return blocks, false, nil // hidden: the next round goes on
			}
			release()
			delta := m.Delta
			if searched { // the last round, still searching
				note := &liveBlock{events: []sseEvent{
					{"content_block_start", []byte(`{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`)},
					{"content_block_delta", mustJSON(map[string]any{"type": "content_block_delta", "index": 0, "delta": map[string]any{"type": "text_delta",
						"text": fmt.Sprintf("(toolshelf: the model was still searching for tools after %d searches; stopped here.)", s.opts.MaxRounds)}})},
					{"content_block_stop", []byte(`{"type":"content_block_stop","index":0}`)},
				}}
				l.emit(note)
				delta = map[string]json.RawMessage{"stop_reason": json.RawMessage(`"end_turn"`), "stop_sequence": json.RawMessage(`null`)}
			}
			l.send("message_delta", mustJSON(map[string]any{"type": "message_delta", "delta": delta, "usage": l.total}))
		case "message_stop":
			l.send(ev.name, ev.data)
			return blocks, true, nil
		case "error":
			l.send(ev.name, ev.data)
			return blocks, true, nil
		}
	}
}

// roundTail bounds what is read of a search round after its
// message_delta: its message_stop is a few dozen bytes.
const roundTail = 64 << 10

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

// open posts a round upstream and returns the response unread, for
// streaming.
func (s *Server) open(client *http.Request, body []byte) (*http.Response, error) {
	req, err := s.upstreamRequest(client, body)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "text/event-stream")
	return s.opts.Client.Do(req)
}
