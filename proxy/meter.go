package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/toolshelf/toolshelf/ledger"
)

// meter is the transport under every request the proxy sends upstream:
// a model request of an admitted client request (see admit) is counted
// in the ledger as it goes, held at its most, and settled from the usage
// its answer reports, read from the answer as the reader (the proxy, or
// the client through the reverse proxy) reads it. Every path (searched,
// passed untouched, the API's own tool search, streamed or whole) goes
// through here, so none is missed and none counted twice.
type meter struct {
	next    http.RoundTripper
	logger  *slog.Logger
	metrics *ledgerMetrics
}

func (m *meter) RoundTrip(req *http.Request) (*http.Response, error) {
	a, _ := req.Context().Value(accountKey{}).(*account)
	if a == nil || !metered(req.URL.Path) {
		return m.next.RoundTrip(req)
	}
	e, err := a.round(req.Context(), max(req.ContentLength, 0))
	if err != nil {
		// The round is not sent: what cannot be counted is not spent.
		return nil, err
	}
	start := time.Now()
	resp, err := m.next.RoundTrip(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		// Not answered, or an API error (invalid, overloaded, rate
		// limited): the API bills neither.
		e.Void, e.Outcome, e.DurationMS = true, "not answered", ms(start)
		if err == nil {
			e.Outcome = "status " + resp.Status
		}
		m.settle(a, e)
		return resp, err
	}
	resp.Body = &usageReader{
		body: resp.Body, stream: strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream"),
		done: func(u readUsage) {
			e.Tokens, e.Outcome, e.DurationMS = u.settled(e.Tokens), u.outcome(), ms(start)
			m.settle(a, e)
		},
	}
	return resp, nil
}

func (m *meter) settle(a *account, e *ledger.Entry) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := a.l.Settle(ctx, e); err != nil {
		// The held entry stays: counted at its most.
		m.logger.Error("the ledger did not take a round's usage; it stays counted at its most", "error", err)
	}
	m.metrics.observe(a.l, e)
}

func ms(start time.Time) float64 { return float64(time.Since(start).Microseconds()) / 1000 }

// readUsage is what an answer said of its usage.
type readUsage struct {
	Tokens   ledger.Tokens
	input    bool // the input's counts were read
	output   bool // the final output count was read
	complete bool // the answer ended as it should
}

// settled is what a round is counted at: what its answer reported, and
// for what it did not report, the most (held).
func (u readUsage) settled(held ledger.Tokens) ledger.Tokens {
	t := u.Tokens
	if !u.input {
		t.Input, t.CacheRead, t.CacheWrite = held.Input, 0, 0
	}
	if !u.output {
		t.Output = max(t.Output, held.Output)
	}
	return t
}

func (u readUsage) outcome() string {
	switch {
	case u.complete && u.input && u.output:
		return "ok"
	case u.complete:
		return "usage not reported"
	}
	return "cut short"
}

// usageReader reads an answer's usage as its reader reads the answer: a
// JSON answer whole (within maxUsageAnswer), a stream line by line. done
// is called once, at the end or when the reader closes early.
type usageReader struct {
	body   io.ReadCloser
	stream bool
	done   func(readUsage)

	once  sync.Once
	buf   []byte // a JSON answer, or a stream's unfinished line
	over  bool   // the answer outgrew what is kept
	usage readUsage
}

// maxUsageAnswer bounds what is kept of a JSON answer to read its usage,
// and a stream's line.
const maxUsageAnswer = 32 << 20

func (r *usageReader) Read(p []byte) (int, error) {
	n, err := r.body.Read(p)
	if n > 0 {
		r.take(p[:n])
	}
	if err == io.EOF {
		r.end(true)
	}
	return n, err
}

func (r *usageReader) Close() error {
	err := r.body.Close()
	r.end(false)
	return err
}

func (r *usageReader) take(b []byte) {
	if !r.stream {
		if !r.over && len(r.buf)+len(b) <= maxUsageAnswer {
			r.buf = append(r.buf, b...)
		} else {
			r.over, r.buf = true, nil
		}
		return
	}
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			if len(r.buf)+len(b) <= maxUsageAnswer {
				r.buf = append(r.buf, b...)
			} else {
				r.over = true
			}
			return
		}
		line := b[:i]
		if len(r.buf) > 0 {
			line = append(r.buf, line...)
			r.buf = r.buf[:0]
		}
		if r.over {
			r.over = false // the end of a line too long to read
		} else {
			r.line(line)
		}
		b = b[i+1:]
	}
}

// line reads one line of a stream: the data of Messages API events
// (message_start's usage, message_delta's) and of Chat Completions
// chunks (the last carries usage when the client asks for it).
func (r *usageReader) line(line []byte) {
	data, ok := bytes.CutPrefix(bytes.TrimRight(line, "\r"), []byte("data:"))
	if !ok {
		return
	}
	data = bytes.TrimSpace(data)
	if string(data) == "[DONE]" {
		r.usage.complete = true
		return
	}
	if !bytes.Contains(data, []byte(`"usage"`)) && !bytes.Contains(data, []byte(`"message_stop"`)) {
		return
	}
	var ev struct {
		Type    string `json:"type"`
		Message struct {
			Usage *wireUsage `json:"usage"`
		} `json:"message"`
		Usage *wireUsage `json:"usage"`
	}
	if json.Unmarshal(data, &ev) != nil {
		return
	}
	switch ev.Type {
	case "message_start":
		if u := ev.Message.Usage; u != nil {
			r.usage.Tokens.Input, r.usage.Tokens.CacheRead, r.usage.Tokens.CacheWrite = u.InputTokens, u.CacheRead, u.CacheWrite
			r.usage.Tokens.Output = u.OutputTokens
			r.usage.input = true
		}
	case "message_delta":
		if u := ev.Usage; u != nil {
			// Counts here are the message's so far, not increments.
			r.usage.Tokens.Output = u.OutputTokens
			r.usage.output = true
			if u.InputTokens > 0 {
				r.usage.Tokens.Input, r.usage.input = u.InputTokens, true
			}
			r.usage.Tokens.CacheRead = max(r.usage.Tokens.CacheRead, u.CacheRead)
			r.usage.Tokens.CacheWrite = max(r.usage.Tokens.CacheWrite, u.CacheWrite)
		}
	case "message_stop":
		r.usage.complete = true
	case "":
		if u := ev.Usage; u != nil { // a Chat Completions chunk
			u.chat(&r.usage)
		}
	}
}

func (r *usageReader) end(eof bool) {
	r.once.Do(func() {
		if !r.stream && eof && !r.over {
			var answer struct {
				Usage *wireUsage `json:"usage"`
			}
			if json.Unmarshal(r.buf, &answer) == nil {
				r.usage.complete = true
				if u := answer.Usage; u != nil {
					if u.PromptTokens > 0 || u.CompletionTokens > 0 {
						u.chat(&r.usage)
					} else {
						r.usage.Tokens = ledger.Tokens{Input: u.InputTokens, Output: u.OutputTokens, CacheRead: u.CacheRead, CacheWrite: u.CacheWrite}
						r.usage.input, r.usage.output = true, true
					}
				}
			}
		}
		r.buf = nil
		r.done(r.usage)
	})
}

// wireUsage is a usage object of either API.
type wireUsage struct {
	// The Messages API's.
	InputTokens  int64 `json:"input_tokens"`
	OutputTokens int64 `json:"output_tokens"`
	CacheRead    int64 `json:"cache_read_input_tokens"`
	CacheWrite   int64 `json:"cache_creation_input_tokens"`
	// Chat Completions' (prompt_tokens counts the cached tokens too).
	PromptTokens     int64 `json:"prompt_tokens"`
	CompletionTokens int64 `json:"completion_tokens"`
	Details          struct {
		Cached int64 `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
}

func (u *wireUsage) chat(r *readUsage) {
	cached := min(u.Details.Cached, u.PromptTokens)
	r.Tokens = ledger.Tokens{Input: u.PromptTokens - cached, CacheRead: cached, Output: u.CompletionTokens}
	r.input, r.output = true, true
}
