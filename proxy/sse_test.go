package proxy

import (
	"encoding/json"
	"fmt"
	"net/http"
)

// writeStream sends a whole message as the Messages API's server-sent
// events, as the API streams it: message_start, each content block's
// start, delta and stop, message_delta with the stop reason and usage,
// message_stop. The fake API streams its scripted answers with it;
// beforeStop, when set, runs between the last two.
func writeStream(w http.ResponseWriter, final []byte, beforeStop func()) {
	var msg map[string]json.RawMessage
	_ = json.Unmarshal(final, &msg)
	var content []map[string]json.RawMessage
	_ = json.Unmarshal(msg["content"], &content)
	var use map[string]json.RawMessage
	_ = json.Unmarshal(msg["usage"], &use)

	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	send := func(event string, data any) {
		b, _ := json.Marshal(data)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, b)
		if flusher != nil {
			flusher.Flush()
		}
	}

	start := map[string]json.RawMessage{}
	for k, v := range msg {
		start[k] = v
	}
	start["content"] = json.RawMessage(`[]`)
	start["stop_reason"] = json.RawMessage(`null`)
	start["stop_sequence"] = json.RawMessage(`null`)
	startUsage := map[string]json.RawMessage{}
	for k, v := range use {
		startUsage[k] = v
	}
	startUsage["output_tokens"] = json.RawMessage(`0`)
	start["usage"], _ = json.Marshal(startUsage)
	send("message_start", map[string]any{"type": "message_start", "message": start})

	for i, block := range content {
		var typ string
		_ = json.Unmarshal(block["type"], &typ)
		head := map[string]json.RawMessage{}
		for k, v := range block {
			head[k] = v
		}
		var delta map[string]any
		switch typ {
		case "text":
			var text string
			_ = json.Unmarshal(block["text"], &text)
			head["text"] = json.RawMessage(`""`)
			delta = map[string]any{"type": "text_delta", "text": text}
		case "tool_use":
			input := block["input"]
			if len(input) == 0 {
				input = json.RawMessage(`{}`)
			}
			head["input"] = json.RawMessage(`{}`)
			delta = map[string]any{"type": "input_json_delta", "partial_json": string(input)}
		case "thinking":
			var thinking, sig string
			_ = json.Unmarshal(block["thinking"], &thinking)
			_ = json.Unmarshal(block["signature"], &sig)
			head["thinking"], head["signature"] = json.RawMessage(`""`), json.RawMessage(`""`)
			send("content_block_start", map[string]any{"type": "content_block_start", "index": i, "content_block": head})
			send("content_block_delta", map[string]any{"type": "content_block_delta", "index": i, "delta": map[string]any{"type": "thinking_delta", "thinking": thinking}})
			delta = map[string]any{"type": "signature_delta", "signature": sig}
			send("content_block_delta", map[string]any{"type": "content_block_delta", "index": i, "delta": delta})
			send("content_block_stop", map[string]any{"type": "content_block_stop", "index": i})
			continue
		}
		// Other blocks (redacted thinking, server tool uses and their
		// results) come whole in their start event.
		send("content_block_start", map[string]any{"type": "content_block_start", "index": i, "content_block": head})
		if delta != nil {
			send("content_block_delta", map[string]any{"type": "content_block_delta", "index": i, "delta": delta})
		}
		send("content_block_stop", map[string]any{"type": "content_block_stop", "index": i})
	}
	send("message_delta", map[string]any{
		"type":  "message_delta",
		"delta": map[string]json.RawMessage{"stop_reason": orNull(msg["stop_reason"]), "stop_sequence": orNull(msg["stop_sequence"])},
		"usage": use,
	})
	if beforeStop != nil {
		beforeStop()
	}
	send("message_stop", map[string]any{"type": "message_stop"})
}

func orNull(v json.RawMessage) json.RawMessage {
	if len(v) == 0 {
		return json.RawMessage(`null`)
	}
	return v
}
