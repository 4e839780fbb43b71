package proxy

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/toolshelf/toolshelf/messages"
)

// The Chat Completions face: POST /v1/chat/completions, for agents on
// OpenAI's API and the many servers that speak it. Every function tool is
// deferrable (such agents have no core tools), and the announcement is a
// system message.

// chatTool is one entry of a Chat Completions request's tools.
type chatTool struct {
	Type     string `json:"type"`
	Function struct {
		Name        string          `json:"name"`
		Description string          `json:"description,omitempty"`
		Parameters  json.RawMessage `json:"parameters,omitempty"`
	} `json:"function"`
}

// chatCall is a tool call in an assistant message.
type chatCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// openAIError answers with the Chat Completions error shape.
func openAIError(w http.ResponseWriter, status int, kind, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	b, _ := json.Marshal(map[string]any{"error": map[string]any{"message": msg, "type": kind, "param": nil, "code": nil}})
	w.Write(b)
}

// chat answers POST /v1/chat/completions.
func (s *Server) chat(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	body, err := readLimited(w, r, s.opts.MaxRequestBytes)
	if err != nil {
		openAIError(w, err.status, "invalid_request_error", "toolshelf proxy: "+err.msg)
		return
	}
	var req map[string]json.RawMessage
	var tools []chatTool
	var msgs []json.RawMessage
	var model string
	if json.Unmarshal(body, &req) != nil || json.Unmarshal(orJSON(req["tools"], "[]"), &tools) != nil ||
		json.Unmarshal(orJSON(req["messages"], "[]"), &msgs) != nil || json.Unmarshal(orJSON(req["model"], `""`), &model) != nil {
		openAIError(w, http.StatusBadRequest, "invalid_request_error", "toolshelf proxy: the request is not a chat completion request")
		return
	}
	if msg := s.tooManyTools(len(tools)); msg != "" {
		openAIError(w, http.StatusRequestEntityTooLarge, "request_too_large", msg)
		return
	}
	in := planInput{model: model, deferAll: true}
	for _, t := range tools {
		typ := ""
		if t.Type != "function" {
			typ = t.Type // not a function: kept, never searched
		}
		in.tools = append(in.tools, messages.Tool{Type: typ, Name: t.Function.Name, Description: t.Function.Description, InputSchema: orJSON(t.Function.Parameters, `{"type":"object"}`)})
	}
	for _, m := range msgs {
		var am struct {
			Role      string     `json:"role"`
			ToolCalls []chatCall `json:"tool_calls"`
		}
		if json.Unmarshal(m, &am) == nil && am.Role == "assistant" {
			for _, c := range am.ToolCalls {
				in.called = append(in.called, c.Function.Name)
			}
		}
	}
	p := s.planFor(r.Context(), in)
	if p == nil {
		s.logger.Info("proxy request", "api", "chat", "model", logCut(model), "tools", len(tools), "deferred", 0, "rounds", 0, "passed", true)
		s.passBody(w, r, body)
		return
	}
	var stream bool
	_ = json.Unmarshal(req["stream"], &stream)
	var total usage
	rounds := 0
	for {
		rounds++
		out := s.chatRound(req, tools, msgs, p)
		rr, span := s.startRound(r, model, rounds)
		resp, raw, err := s.send(rr, out)
		if err != nil {
			endRound(span, nil, false, 0)
			if r.Context().Err() != nil {
				return
			}
			openAIError(w, http.StatusBadGateway, "api_error", "toolshelf proxy: the upstream cannot be reached: "+err.Error())
			return
		}
		if resp.StatusCode != http.StatusOK {
			endRound(span, nil, false, resp.StatusCode)
			relay(w, resp, raw)
			return
		}
		var reply struct {
			Choices []struct {
				Message json.RawMessage `json:"message"`
			} `json:"choices"`
			Usage usage `json:"usage"`
		}
		var message struct {
			ToolCalls []chatCall `json:"tool_calls"`
		}
		if json.Unmarshal(raw, &reply) != nil || len(reply.Choices) == 0 || json.Unmarshal(reply.Choices[0].Message, &message) != nil {
			endRound(span, nil, false, 0)
			openAIError(w, http.StatusBadGateway, "api_error", "toolshelf proxy: the upstream's answer is not a chat completion")
			return
		}
		total.add(reply.Usage)
		var searches []chatCall
		others := 0
		for _, c := range message.ToolCalls {
			if c.Function.Name == p.searchName {
				searches = append(searches, c)
			} else {
				others++
			}
		}
		note := ""
		if len(searches) > 0 && others == 0 && rounds > s.opts.MaxRounds {
			note = fmt.Sprintf("(toolshelf: the model was still searching for tools after %d searches; stopped here.)", s.opts.MaxRounds)
		}
		hidden := len(searches) > 0 && others == 0 && note == ""
		endRound(span, reply.Usage, hidden, http.StatusOK)
		if !hidden {
			final := finalChat(raw, p.searchName, total, note)
			copyHeaders(w.Header(), resp.Header)
			if stream {
				writeChatStream(w, final, includeUsage(req))
			} else {
				w.Header().Set("Content-Type", "application/json")
				w.Write(final)
			}
			s.logger.Info("proxy request", "api", "chat", "model", logCut(model), "tools", len(tools), "deferred", len(p.deferred),
				"loaded", len(p.loaded), "rounds", rounds, "ms", since(start))
			return
		}
		msgs = append(msgs, reply.Choices[0].Message)
		for _, c := range searches {
			ctx, span := s.traceSearch(r.Context(), p.searchName)
			text, isErr := p.find(ctx, json.RawMessage(c.Function.Arguments))
			endSearch(span, isErr)
			b, _ := json.Marshal(map[string]string{"role": "tool", "tool_call_id": c.ID, "content": text})
			msgs = append(msgs, b)
		}
	}
}

// chatRound is the body of one round: the deferred tools that are not
// loaded left out, the search tool added, and the announcement as a
// system message after the client's own.
func (s *Server) chatRound(req map[string]json.RawMessage, tools []chatTool, msgs []json.RawMessage, p *plan) []byte {
	out := make(map[string]json.RawMessage, len(req))
	for k, v := range req {
		out[k] = v
	}
	var kept []chatTool
	var announced []string
	for _, t := range tools {
		if t.Type == "function" && p.deferred[t.Function.Name] && !p.loaded[t.Function.Name] {
			announced = append(announced, t.Function.Name)
			continue
		}
		kept = append(kept, t)
	}
	slices.Sort(announced)
	st := searchTool(p.searchName, len(announced))
	var search chatTool
	search.Type = "function"
	search.Function.Name, search.Function.Description, search.Function.Parameters = st.Name, st.Description, st.InputSchema
	out["tools"], _ = json.Marshal(append(kept, search))
	text := messages.Announcement(announced, p.set.servers) +
		"\nThese tools are not loaded: call " + p.searchName + " to load the ones you need, then call them."
	sys, _ := json.Marshal(map[string]string{"role": "system", "content": text})
	at := 0
	for at < len(msgs) {
		var m struct {
			Role string `json:"role"`
		}
		if json.Unmarshal(msgs[at], &m) != nil || (m.Role != "system" && m.Role != "developer") {
			break
		}
		at++
	}
	all := slices.Concat(msgs[:at], []json.RawMessage{sys}, msgs[at:])
	out["messages"], _ = json.Marshal(all)
	delete(out, "stream")
	delete(out, "stream_options")
	b, _ := json.Marshal(out)
	return b
}

// finalChat is the completion the client gets: the last round's, with the
// usage of every round, without calls of the search tool.
func finalChat(raw []byte, searchName string, total usage, note string) []byte {
	var c map[string]json.RawMessage
	_ = json.Unmarshal(raw, &c)
	var choices []map[string]json.RawMessage
	_ = json.Unmarshal(c["choices"], &choices)
	if len(choices) > 0 {
		var msg map[string]json.RawMessage
		_ = json.Unmarshal(choices[0]["message"], &msg)
		var calls []chatCall
		_ = json.Unmarshal(msg["tool_calls"], &calls)
		calls = slices.DeleteFunc(calls, func(c chatCall) bool { return c.Function.Name == searchName })
		if len(calls) == 0 {
			delete(msg, "tool_calls")
			choices[0]["finish_reason"] = json.RawMessage(`"stop"`)
		} else {
			msg["tool_calls"], _ = json.Marshal(calls)
		}
		if note != "" {
			var content string
			_ = json.Unmarshal(msg["content"], &content)
			if content != "" {
				content += "\n"
			}
			msg["content"], _ = json.Marshal(content + note)
		}
		choices[0]["message"], _ = json.Marshal(msg)
		c["choices"], _ = json.Marshal(choices[:1])
	}
	if total != nil {
		c["usage"], _ = json.Marshal(total)
	}
	b, _ := json.Marshal(c)
	return b
}

// includeUsage reports stream_options.include_usage.
func includeUsage(req map[string]json.RawMessage) bool {
	var o struct {
		IncludeUsage bool `json:"include_usage"`
	}
	_ = json.Unmarshal(req["stream_options"], &o)
	return o.IncludeUsage
}

// writeChatStream sends a whole completion as Chat Completions stream
// chunks: the role and content, the tool calls, the finish reason, the
// usage when asked for, then [DONE].
func writeChatStream(w http.ResponseWriter, final []byte, withUsage bool) {
	var c map[string]json.RawMessage
	_ = json.Unmarshal(final, &c)
	var choices []struct {
		Message struct {
			Role      string          `json:"role"`
			Content   json.RawMessage `json:"content"`
			ToolCalls []chatCall      `json:"tool_calls"`
		} `json:"message"`
		FinishReason json.RawMessage `json:"finish_reason"`
	}
	_ = json.Unmarshal(c["choices"], &choices)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	chunk := func(choice any, use json.RawMessage) {
		out := map[string]any{"id": c["id"], "object": "chat.completion.chunk", "created": c["created"], "model": c["model"], "choices": []any{}}
		if choice != nil {
			out["choices"] = []any{choice}
		}
		if use != nil {
			out["usage"] = use
		}
		b, _ := json.Marshal(out)
		fmt.Fprintf(w, "data: %s\n\n", b)
		if flusher != nil {
			flusher.Flush()
		}
	}
	if len(choices) > 0 {
		m := choices[0].Message
		delta := map[string]any{"role": "assistant", "content": orJSON(m.Content, "null")}
		chunk(map[string]any{"index": 0, "delta": delta, "finish_reason": nil}, nil)
		for i, call := range m.ToolCalls {
			chunk(map[string]any{"index": 0, "delta": map[string]any{"tool_calls": []any{map[string]any{
				"index": i, "id": call.ID, "type": "function",
				"function": map[string]any{"name": call.Function.Name, "arguments": call.Function.Arguments},
			}}}, "finish_reason": nil}, nil)
		}
		chunk(map[string]any{"index": 0, "delta": map[string]any{}, "finish_reason": orJSON(choices[0].FinishReason, "null")}, nil)
	}
	if withUsage {
		chunk(nil, orJSON(c["usage"], "null"))
	}
	fmt.Fprint(w, "data: [DONE]\n\n")
	if flusher != nil {
		flusher.Flush()
	}
}

// orJSON returns v, or def when v is empty.
func orJSON(v json.RawMessage, def string) json.RawMessage {
	if len(v) == 0 || string(v) == "null" {
		return json.RawMessage(def)
	}
	return v
}
