package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ToolName is the name every face gives the tool that runs a program.
const ToolName = "run_code"

// InputSchema is the tool's input: the program.
var InputSchema = json.RawMessage(`{
  "type": "object",
  "properties": {
    "code": {"type": "string", "description": "The body of an async JavaScript function. Call tools as await tools.<server>.<tool>({...}), print with console.log, and return a value if you like."}
  },
  "required": ["code"],
  "additionalProperties": false
}`)

// Description is the tool's description for programs run with limits l.
func Description(l Limits) string {
	l = l.withDefaults()
	return "Run a JavaScript program that calls tools and returns only what it prints or returns. " +
		"Use it when a task takes several calls or when results need filtering, counting or joining: " +
		"intermediate results stay in the program instead of filling the conversation. " +
		"Find tools with the search tool first; each is a function such as " +
		"`tools.github.list_issues(args: {...}): Promise<...>`. In the program, `await tools.<server>.<tool>(args)` " +
		"returns the tool's structured result when it declares one, else its text (parsed when it is JSON); a tool error throws. " +
		"console.log prints; a returned value is printed last. There is no file system, network, require, process or timers. " +
		fmt.Sprintf("Limits: %v of CPU, %v in all, %d MiB of memory, %d tool calls of at most %d KiB of arguments each (%d KiB in all), %d bytes of output (the rest is cut).",
			l.CPU, l.Wall, l.Memory>>20, l.Calls, l.Arguments>>10, l.Sent>>10, l.Output)
}

// ParseInput reads the tool's input: the program, or an error the model
// can act on.
func ParseInput(raw json.RawMessage) (string, error) {
	var in struct {
		Code *string `json:"code"`
	}
	if err := json.Unmarshal(raw, &in); err != nil || in.Code == nil || len(*in.Code) == 0 {
		return "", fmt.Errorf(`%s: "code" is required: the body of an async JavaScript function`, ToolName)
	}
	return *in.Code, nil
}

// Text is how a program's end reads to the model: its output, then its
// error, if any.
func (r *Result) Text() string {
	text := r.Output
	if r.Error != "" {
		text += "\nError: " + r.Error
	}
	if text == "" {
		text = "(the program printed and returned nothing)"
	}
	if r.Waited > 0 {
		text += fmt.Sprintf("\n(the program waited %v for a turn: programs run a few at a time)", r.Waited.Round(time.Millisecond))
	}
	return text
}

// Value is what a program's await gets of a tool's result: its
// structured content, else its text (the JSON it holds, when it is
// JSON), else its content blocks; a tool error is an error, which the
// program may catch.
func Value(res *mcp.CallToolResult) (json.RawMessage, error) {
	var text strings.Builder
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			text.WriteString(t.Text)
		}
	}
	if res.IsError {
		return nil, errors.New(cutText(text.String(), 4096))
	}
	if res.StructuredContent != nil {
		return json.Marshal(res.StructuredContent)
	}
	if text.Len() > 0 || len(res.Content) == 0 {
		if t := strings.TrimSpace(text.String()); t != "" && json.Valid([]byte(t)) {
			return json.RawMessage(t), nil
		}
		return json.Marshal(text.String())
	}
	return json.Marshal(res.Content)
}
