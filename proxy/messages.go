package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/toolshelf/toolshelf/messages"
	"github.com/toolshelf/toolshelf/policy"
	"github.com/toolshelf/toolshelf/shelf"
)

// messages answers POST /v1/messages.
func (s *Server) messages(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	body, req, ok := s.readRequest(w, r)
	if !ok {
		return
	}
	p := s.planFor(r.Context(), messagesInput(&req))
	if p == nil {
		status, err := s.passBody(w, r, body)
		s.logPassed(status, err, "model", logCut(req.Model), "tools", len(req.Tools), "deferred", 0, "rounds", 0, "passed", true)
		return
	}
	if s.native(req.Model) {
		body, _ = json.Marshal(p.native(req))
		r.Header.Set("Anthropic-Beta", joinBeta(r.Header.Get("Anthropic-Beta"), messages.BetaToolSearch))
		status, err := s.passBody(w, r, body)
		s.logPassed(status, err, "model", logCut(req.Model), "tools", len(req.Tools), "deferred", len(p.deferred), "native", true)
		return
	}
	if p.additions = s.addsTools(req.Model); p.additions {
		r.Header.Set("Anthropic-Beta", joinBeta(r.Header.Get("Anthropic-Beta"), messages.BetaInlineTools))
	}
	var stream bool
	_ = json.Unmarshal(req.Extra["stream"], &stream)
	if stream {
		s.streamMessages(w, r, req, p, start)
		return
	}

	msgs, turn, keep := s.restoreHidden(r, req, p)
	history := len(msgs)
	var total usage
	rounds := 0
	for {
		rounds++
		out, _ := json.Marshal(p.rewrite(req, msgs))
		rr, span := s.startRound(r, req.Model, rounds)
		resp, raw, err := s.send(rr, out)
		if err != nil {
			endRound(span, nil, false, 0)
			if r.Context().Err() != nil {
				return // the client went away
			}
			writeError(w, http.StatusBadGateway, "api_error", "toolshelf proxy: the upstream cannot be reached: "+err.Error())
			return
		}
		if resp.StatusCode != http.StatusOK {
			endRound(span, nil, false, resp.StatusCode)
			relay(w, resp, raw)
			return
		}
		var reply struct {
			Content []messages.Block `json:"content"`
			Usage   usage            `json:"usage"`
		}
		if err := json.Unmarshal(raw, &reply); err != nil {
			endRound(span, nil, false, 0)
			writeError(w, http.StatusBadGateway, "api_error", "toolshelf proxy: the upstream's answer is not a message: "+err.Error())
			return
		}
		total.add(reply.Usage)
		var searches, calls []messages.Block
		for _, b := range reply.Content {
			if b.Type != "tool_use" {
				continue
			}
			if b.String("name") == p.searchName {
				searches = append(searches, b)
			} else {
				calls = append(calls, b)
			}
		}
		note := ""
		if len(searches) > 0 && len(calls) == 0 && rounds > s.opts.MaxRounds {
			note = fmt.Sprintf("(toolshelf: the model was still searching for tools after %d searches; stopped here.)", s.opts.MaxRounds)
		}
		hidden := len(searches) > 0 && len(calls) == 0 && note == ""
		endRound(span, reply.Usage, hidden, http.StatusOK)
		if !hidden {
			final, err := finalMessage(raw, p.searchName, total, note)
			if err != nil {
				writeError(w, http.StatusBadGateway, "api_error", "toolshelf proxy: "+err.Error())
				return
			}
			s.keepHidden(keep, turn, msgs[history:])
			copyHeaders(w.Header(), resp.Header)
			w.Header().Set("Content-Type", "application/json")
			w.Write(final)
			s.logDone(req, p, rounds, start)
			return
		}
		// The model searched: answer it, and ask again with what it found.
		was := maps.Clone(p.loaded)
		results := make([]messages.Block, 0, len(searches))
		for _, b := range searches {
			results = append(results, s.answerSearch(r.Context(), p, b))
		}
		msgs = append(msgs,
			messages.Message{Role: "assistant", Content: reply.Content},
			messages.Message{Role: "user", Content: results})
		msgs = p.afterSearch(req, msgs, was)
	}
}

// restoreHidden is the history a turn's rounds start from: with tool
// additions, the client's history with the hidden rounds of its earlier
// turns put back (hiddenRounds); turn is its key, for keepHidden, and
// keep whether there is one.
func (s *Server) restoreHidden(r *http.Request, req messages.Request, p *plan) (msgs []messages.Message, turn [32]byte, keep bool) {
	if !p.additions {
		return slices.Clone(req.Messages), turn, false
	}
	seed, ok := conversationSeed(r.Header, req, p.toolsKey)
	if !ok {
		return slices.Clone(req.Messages), turn, false
	}
	msgs, turn, keep = s.hidden.restore(seed, req.Messages)
	return slices.Clone(msgs), turn, keep
}

// keepHidden keeps a finished turn's hidden rounds, for the turns after.
func (s *Server) keepHidden(keep bool, turn [32]byte, rounds []messages.Message) {
	if keep {
		s.hidden.keep(turn, slices.Clone(rounds))
	}
}

// answerSearch runs one call of the search tool and loads what it finds.
func (s *Server) answerSearch(ctx context.Context, p *plan, call messages.Block) messages.Block {
	ctx, span := s.traceSearch(ctx, p.searchName)
	text, isErr := p.find(ctx, call.Raw("input"))
	endSearch(span, isErr)
	return messages.ToolResult(call.String("id"), []messages.Block{messages.TextBlock(text)}, isErr)
}

// find answers one call of the search tool (its input as the model wrote
// it): it searches the deferred tools, loads what it finds into the plan,
// and says what it did, with the search front end's note, for the model.
func (p *plan) find(ctx context.Context, input json.RawMessage) (text string, isErr bool) {
	in, err := shelf.ParseInput(input)
	if err != nil {
		return err.Error(), true
	}
	// Tools the request already carries are not searched for.
	exclude := map[string]bool{}
	for e := range p.set.snap.Catalog.All() {
		if !p.deferred[e.Name] || p.loaded[e.Name] {
			exclude[e.Name] = true
		}
	}
	req := in.Request()
	req.Exclude = exclude
	found, err := p.set.snap.Search(ctx, req)
	if err != nil {
		return "The search failed: " + err.Error(), true
	}
	var names []string
	for _, h := range found.Hits {
		if !p.deferred[h.Entry.Name] {
			continue // select: of a tool the request carries
		}
		p.loaded[h.Entry.Name] = true
		names = append(names, h.Entry.Name)
	}
	switch {
	case len(names) == 0 && len(found.Missing) > 0:
		return "No tool is named " + strings.Join(found.Missing, ", ") + ".", false
	case len(names) == 0 && found.Note != "":
		return found.Note, false
	case len(names) == 0:
		return "No deferred tool matches. Try other words, or call the tools you have.", false
	}
	text = "Loaded " + plural(len(names), "tool", "tools") + ": " + strings.Join(names, ", ") + ". Call them directly."
	if found.Note != "" {
		text += " " + found.Note
	}
	return text, false
}

// usage adds up the rounds' token counts, so that a client's cost display
// stays right. Unknown counters are added too.
type usage map[string]json.RawMessage

func (u *usage) add(v usage) {
	if *u == nil {
		*u = usage{}
	}
	for k, raw := range v {
		var n, m int64
		if json.Unmarshal(raw, &n) != nil {
			(*u)[k] = raw // not a count (service_tier): the last one
			continue
		}
		_ = json.Unmarshal((*u)[k], &m)
		b, _ := json.Marshal(n + m)
		(*u)[k] = b
	}
}

// finalMessage is the response the client gets: the last round's
// message, with the usage of every round and without calls of the search
// tool (the client has no such tool). A note replaces an unanswered
// search.
func finalMessage(raw []byte, searchName string, total usage, note string) ([]byte, error) {
	var msg map[string]json.RawMessage
	if err := json.Unmarshal(raw, &msg); err != nil {
		return nil, fmt.Errorf("the upstream's answer is not a message: %v", err)
	}
	var content []messages.Block
	_ = json.Unmarshal(msg["content"], &content)
	kept := content[:0]
	for _, b := range content {
		if b.Type == "tool_use" && b.String("name") == searchName {
			continue
		}
		kept = append(kept, b)
	}
	if note != "" {
		kept = append(kept, messages.TextBlock(note))
		msg["stop_reason"] = json.RawMessage(`"end_turn"`)
	}
	if kept == nil {
		kept = []messages.Block{}
	}
	msg["content"], _ = json.Marshal(kept)
	msg["usage"], _ = json.Marshal(total)
	return json.Marshal(msg)
}

// logDone writes the request's one log line.
func (s *Server) logDone(req messages.Request, p *plan, rounds int, start time.Time) {
	saved := 0
	for n := range p.deferred {
		if !p.loaded[n] {
			saved += p.set.view.Tool[n].Tokens
		}
	}
	s.logger.Info("proxy request", "model", logCut(req.Model), "tools", len(req.Tools), "deferred", len(p.deferred),
		"loaded", len(p.loaded), "rounds", rounds, "tokens_saved", saved*rounds, "ms", since(start))
}

// countTokens answers POST /v1/messages/count_tokens for the request as
// the proxy would send it.
func (s *Server) countTokens(w http.ResponseWriter, r *http.Request) {
	body, req, ok := s.readRequest(w, r)
	if !ok {
		return
	}
	if p := s.planFor(r.Context(), messagesInput(&req)); p != nil {
		body, _ = json.Marshal(p.rewrite(req, req.Messages))
	}
	resp, raw, err := s.send(r, body)
	if err != nil {
		writeError(w, http.StatusBadGateway, "api_error", "toolshelf proxy: the upstream cannot be reached: "+err.Error())
		return
	}
	relay(w, resp, raw)
}

// passBody sends a request that passes untouched, with the body already
// read.
func (s *Server) passBody(w http.ResponseWriter, r *http.Request, body []byte) (status int, err error) {
	var failure error
	r2 := r.Clone(context.WithValue(r.Context(), passErrKey{}, &failure))
	r2.Body = io.NopCloser(bytes.NewReader(body))
	r2.ContentLength = int64(len(body))
	sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
	s.pass.ServeHTTP(sw, r2)
	return sw.status, failure
}

// passErrKey carries, in a passed request's context, where the reverse
// proxy's error handler puts why the upstream could not be reached.
type passErrKey struct{}

// statusWriter remembers the status a response was written with.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	w.status = code
	w.ResponseWriter.WriteHeader(code)
}

// Flush passes flushes on: streams go through as they come.
func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// logPassed logs a request passed upstream, with the upstream's status,
// and at warn level with the error when the upstream failed.
func (s *Server) logPassed(status int, err error, args ...any) {
	args = append(args, "status", status)
	switch {
	case err != nil:
		s.logger.Warn("proxy request", append(args, "error", err.Error())...)
	case status >= 500:
		s.logger.Warn("proxy request", args...)
	default:
		s.logger.Info("proxy request", args...)
	}
}

// nativeTool is the API's own tool search (BM25 over the deferred tools'
// names, descriptions and arguments).
const nativeTool = `{"type":"tool_search_tool_bm25_20251119","name":"tool_search_tool_bm25"}`

// native reports whether a request for model uses the API's own tool
// search: the upstream must be Anthropic's API, which has it (gateways
// and bridges often do not), and the model one that reads tool_reference
// blocks (the policy's model gate).
func (s *Server) native(model string) bool {
	return chosen(s.opts.Native, func() bool {
		return s.upstream.Hostname() == "api.anthropic.com" && policy.ModelSupported(model, nil)
	})
}

// addsTools reports whether the proxy's search rounds add found tools in
// the middle of the conversation for a model (Options.ToolAdditions).
func (s *Server) addsTools(model string) bool {
	return chosen(s.opts.ToolAdditions, func() bool { return messages.AddsToolsMidConversation(model) })
}

// autoAlwaysNever checks a setting of auto, always or never (flag names
// it in the error); empty is auto.
func autoAlwaysNever(v *string, flag string) error {
	switch *v {
	case "":
		*v = "auto"
	case "auto", "always", "never":
	default:
		return fmt.Errorf("%s %q: want auto, always or never", flag, *v)
	}
	return nil
}

// chosen is a setting of auto, always or never: always, never, or what
// auto decides.
func chosen(v string, auto func() bool) bool {
	switch v {
	case "always":
		return true
	case "never":
		return false
	}
	return auto()
}

// native rewrites a request for the API's own tool search: the deferred
// tools are sent with defer_loading (the API keeps them out of the
// model's context until its search finds them), and the search tool is
// added. No round is the proxy's: the answer streams straight through.
func (p *plan) native(req messages.Request) messages.Request {
	out := req
	out.Tools = make([]messages.Tool, 0, len(req.Tools)+1)
	for _, t := range req.Tools {
		if t.Type == "" && p.deferred[t.Name] && !p.loaded[t.Name] {
			t.DeferLoading = true
			t.CacheControl = nil // the API refuses both on one tool
		}
		out.Tools = append(out.Tools, t)
	}
	var search messages.Tool
	_ = json.Unmarshal([]byte(nativeTool), &search)
	out.Tools = append(out.Tools, search)
	return out
}

// joinBeta adds a beta to an anthropic-beta header's list.
func joinBeta(header, beta string) string {
	for _, b := range strings.Split(header, ",") {
		if strings.TrimSpace(b) == beta {
			return header
		}
	}
	if strings.TrimSpace(header) == "" {
		return beta
	}
	return header + "," + beta
}
