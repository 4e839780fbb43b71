//lint:file-ignore SA1019 sampling, roots and logging are deprecated by MCP 2026-07-28 (SEP-2577) but clients and servers on earlier revisions use them, and toolshelf relays them on purpose during the deprecation window.

package mcptest

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Fixture returns a server with the tools, resources and prompts that the
// MCP conformance suite's server scenarios call by name (test_simple_text,
// test://static-text, test_simple_prompt, ...), each behaving as the
// scenario describes. Tests run the suite against it directly and through
// the gateway, and compare.
func Fixture() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "conformance-fixture", Version: "test"}, &mcp.ServerOptions{
		CompletionHandler: func(_ context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
			var values []string
			for _, v := range []string{"paris", "park", "party", "test", "testing"} {
				if strings.HasPrefix(v, req.Params.Argument.Value) {
					values = append(values, v)
				}
			}
			return &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: values, Total: len(values)}}, nil
		},
		SubscribeHandler:   func(context.Context, *mcp.SubscribeRequest) error { return nil },
		UnsubscribeHandler: func(context.Context, *mcp.UnsubscribeRequest) error { return nil },
	})
	fixtureTools(s)
	fixtureResources(s)
	fixturePrompts(s)
	return s
}

// A 1×1 red PNG and a silent 8-sample WAV.
var (
	redPixel, _  = base64.StdEncoding.DecodeString("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==")
	silentWAV, _ = base64.StdEncoding.DecodeString("UklGRiwAAABXQVZFZm10IBAAAAABAAEAQB8AAIA+AAACABAAZGF0YQgAAAAAAAAAAAAAAA==")
)

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

func fixtureTools(s *mcp.Server) {
	noArgs := map[string]any{"type": "object"}
	stringArg := func(name string) map[string]any {
		return map[string]any{"type": "object", "properties": map[string]any{name: map[string]any{"type": "string"}}, "required": []string{name}}
	}
	add := func(name string, schema any, h func(context.Context, *mcp.CallToolRequest, map[string]any) (*mcp.CallToolResult, error)) {
		s.AddTool(&mcp.Tool{Name: name, Description: "Conformance fixture: " + name, InputSchema: schema}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var args map[string]any
			_ = json.Unmarshal(req.Params.Arguments, &args)
			return h(ctx, req, args)
		})
	}
	add("test_simple_text", noArgs, func(context.Context, *mcp.CallToolRequest, map[string]any) (*mcp.CallToolResult, error) {
		return text("This is a simple text response for testing."), nil
	})
	add("test_image_content", noArgs, func(context.Context, *mcp.CallToolRequest, map[string]any) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.ImageContent{Data: redPixel, MIMEType: "image/png"}}}, nil
	})
	add("test_audio_content", noArgs, func(context.Context, *mcp.CallToolRequest, map[string]any) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.AudioContent{Data: silentWAV, MIMEType: "audio/wav"}}}, nil
	})
	add("test_embedded_resource", noArgs, func(context.Context, *mcp.CallToolRequest, map[string]any) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{
			URI: "test://embedded-resource", MIMEType: "text/plain", Text: "This is an embedded resource content."}}}}, nil
	})
	add("test_multiple_content_types", noArgs, func(context.Context, *mcp.CallToolRequest, map[string]any) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{
			&mcp.TextContent{Text: "Multiple content types test:"},
			&mcp.ImageContent{Data: redPixel, MIMEType: "image/png"},
			&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "test://mixed-content-resource", MIMEType: "application/json", Text: `{"test":"data","value":123}`}},
		}}, nil
	})
	add("test_tool_with_logging", noArgs, func(ctx context.Context, req *mcp.CallToolRequest, _ map[string]any) (*mcp.CallToolResult, error) {
		for i, msg := range []string{"Tool execution started", "Tool processing data", "Tool execution completed"} {
			if i > 0 {
				pause(ctx, 50*time.Millisecond)
			}
			_ = req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "info", Data: msg})
		}
		return text("Tool with logging executed successfully"), nil
	})
	add("test_tool_with_progress", noArgs, func(ctx context.Context, req *mcp.CallToolRequest, _ map[string]any) (*mcp.CallToolResult, error) {
		token := req.Params.GetProgressToken()
		for i, p := range []float64{0, 50, 100} {
			if i > 0 {
				pause(ctx, 50*time.Millisecond)
			}
			if token != nil {
				_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token, Progress: p, Total: 100})
			}
		}
		return text(fmt.Sprint(token)), nil
	})
	add("test_error_handling", noArgs, func(context.Context, *mcp.CallToolRequest, map[string]any) (*mcp.CallToolResult, error) {
		r := text("This tool intentionally returns an error for testing")
		r.IsError = true
		return r, nil
	})
	add("test_sampling", stringArg("prompt"), func(ctx context.Context, req *mcp.CallToolRequest, args map[string]any) (*mcp.CallToolResult, error) {
		prompt, _ := args["prompt"].(string)
		resp, ok := req.Params.InputResponses["sampling"]
		if !ok {
			return ask("sampling", &mcp.CreateMessageParams{
				Messages:  []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: prompt}}},
				MaxTokens: 100,
			}), nil
		}
		reply := ""
		if r, ok := resp.(*mcp.CreateMessageWithToolsResult); ok {
			for _, c := range r.Content {
				if t, ok := c.(*mcp.TextContent); ok {
					reply += t.Text
				}
			}
		}
		return text("LLM response: " + reply), nil
	})
	add("test_elicitation", stringArg("message"), func(ctx context.Context, req *mcp.CallToolRequest, args map[string]any) (*mcp.CallToolResult, error) {
		msg, _ := args["message"].(string)
		return elicit(ctx, req, msg, map[string]any{
			"type": "object",
			"properties": map[string]any{
				"username": map[string]any{"type": "string", "description": "User's response"},
				"email":    map[string]any{"type": "string", "description": "User's email address"},
			},
			"required": []string{"username", "email"},
		})
	})
	add("test_elicitation_sep1034_defaults", noArgs, func(ctx context.Context, req *mcp.CallToolRequest, _ map[string]any) (*mcp.CallToolResult, error) {
		return elicit(ctx, req, "Please review your information", map[string]any{
			"type": "object",
			"properties": map[string]any{
				"name":     map[string]any{"type": "string", "default": "John Doe"},
				"age":      map[string]any{"type": "integer", "default": 30},
				"score":    map[string]any{"type": "number", "default": 95.5},
				"status":   map[string]any{"type": "string", "enum": []string{"active", "inactive", "pending"}, "default": "active"},
				"verified": map[string]any{"type": "boolean", "default": true},
			},
		})
	})
	add("test_elicitation_sep1330_enums", noArgs, func(ctx context.Context, req *mcp.CallToolRequest, _ map[string]any) (*mcp.CallToolResult, error) {
		titled := func(prefix, word string) []map[string]any {
			var out []map[string]any
			for i, t := range []string{"First", "Second", "Third"} {
				out = append(out, map[string]any{"const": fmt.Sprintf("%s%d", prefix, i+1), "title": t + " " + word})
			}
			return out
		}
		return elicit(ctx, req, "Please choose", map[string]any{
			"type": "object",
			"properties": map[string]any{
				"untitledSingle": map[string]any{"type": "string", "enum": []string{"option1", "option2", "option3"}},
				"titledSingle":   map[string]any{"type": "string", "oneOf": titled("value", "Option")},
				"legacyEnum":     map[string]any{"type": "string", "enum": []string{"opt1", "opt2", "opt3"}, "enumNames": []string{"Option One", "Option Two", "Option Three"}},
				"untitledMulti":  map[string]any{"type": "array", "items": map[string]any{"type": "string", "enum": []string{"option1", "option2", "option3"}}},
				"titledMulti":    map[string]any{"type": "array", "items": map[string]any{"anyOf": titled("value", "Choice")}},
			},
		})
	})
	add("json_schema_2020_12_tool", json.RawMessage(`{
		"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object",
		"$defs": {"address": {"type": "object", "properties": {"street": {"type": "string"}, "city": {"type": "string"}}}},
		"properties": {"name": {"type": "string"}, "address": {"$ref": "#/$defs/address"}},
		"additionalProperties": false}`),
		func(_ context.Context, req *mcp.CallToolRequest, _ map[string]any) (*mcp.CallToolResult, error) {
			return text(string(req.Params.Arguments)), nil
		})
}

// elicit asks the client to fill in a form and reports its answer.
func elicit(_ context.Context, req *mcp.CallToolRequest, msg string, schema map[string]any) (*mcp.CallToolResult, error) {
	resp, ok := req.Params.InputResponses["form"]
	if !ok {
		return ask("form", &mcp.ElicitParams{Message: msg, RequestedSchema: schema}), nil
	}
	res, ok := resp.(*mcp.ElicitResult)
	if !ok {
		return nil, fmt.Errorf("the answer to the form is a %T", resp)
	}
	content, _ := json.Marshal(res.Content)
	return text(fmt.Sprintf("Elicitation completed: action=%s, content=%s", res.Action, content)), nil
}

// ask returns a result that asks the client for input. On MCP 2026-07-28
// the client answers and calls again with the answer in InputResponses
// (multi round trip); for an older client the go-sdk sends the request
// itself (elicitation/create, sampling/createMessage) and calls the
// handler again with the answer. Either way, the fixture works for the
// gateway (2026-07-28 with its go-sdk client) and for the suite's older
// client.
func ask(id string, r mcp.InputRequest) *mcp.CallToolResult {
	return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{id: r}}
}

// pause waits d or until ctx is done: the scenarios want messages spread
// over the call.
func pause(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

func fixtureResources(s *mcp.Server) {
	read := func(contents func(uri string) *mcp.ResourceContents) mcp.ResourceHandler {
		return func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{contents(req.Params.URI)}}, nil
		}
	}
	s.AddResource(&mcp.Resource{Name: "static-text", URI: "test://static-text", MIMEType: "text/plain"}, read(func(uri string) *mcp.ResourceContents {
		return &mcp.ResourceContents{URI: uri, MIMEType: "text/plain", Text: "This is the content of the static text resource."}
	}))
	s.AddResource(&mcp.Resource{Name: "static-binary", URI: "test://static-binary", MIMEType: "image/png"}, read(func(uri string) *mcp.ResourceContents {
		return &mcp.ResourceContents{URI: uri, MIMEType: "image/png", Blob: redPixel}
	}))
	s.AddResource(&mcp.Resource{Name: "watched-resource", URI: "test://watched-resource", MIMEType: "text/plain"}, read(func(uri string) *mcp.ResourceContents {
		return &mcp.ResourceContents{URI: uri, MIMEType: "text/plain", Text: "watched"}
	}))
	s.AddResourceTemplate(&mcp.ResourceTemplate{Name: "template", URITemplate: "test://template/{id}/data", MIMEType: "application/json"}, read(func(uri string) *mcp.ResourceContents {
		id := strings.TrimSuffix(strings.TrimPrefix(uri, "test://template/"), "/data")
		body, _ := json.Marshal(map[string]any{"id": id, "templateTest": true, "data": "Data for ID: " + id})
		return &mcp.ResourceContents{URI: uri, MIMEType: "application/json", Text: string(body)}
	}))
}

func fixturePrompts(s *mcp.Server) {
	user := func(c mcp.Content) *mcp.PromptMessage { return &mcp.PromptMessage{Role: "user", Content: c} }
	s.AddPrompt(&mcp.Prompt{Name: "test_simple_prompt", Description: "A simple prompt"}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{user(&mcp.TextContent{Text: "This is a simple prompt for testing."})}}, nil
	})
	s.AddPrompt(&mcp.Prompt{Name: "test_prompt_with_arguments", Description: "A prompt with arguments", Arguments: []*mcp.PromptArgument{
		{Name: "arg1", Description: "First test argument", Required: true},
		{Name: "arg2", Description: "Second test argument", Required: true},
	}}, func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		a := req.Params.Arguments
		return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{user(&mcp.TextContent{Text: fmt.Sprintf("Prompt with arguments: arg1='%s', arg2='%s'", a["arg1"], a["arg2"])})}}, nil
	})
	s.AddPrompt(&mcp.Prompt{Name: "test_prompt_with_embedded_resource", Description: "A prompt with an embedded resource", Arguments: []*mcp.PromptArgument{
		{Name: "resourceUri", Description: "URI of the resource to embed", Required: true},
	}}, func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{
			user(&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: req.Params.Arguments["resourceUri"], MIMEType: "text/plain", Text: "Embedded resource content for testing."}}),
			user(&mcp.TextContent{Text: "Please process the embedded resource above."}),
		}}, nil
	})
	s.AddPrompt(&mcp.Prompt{Name: "test_prompt_with_image", Description: "A prompt with an image"}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{
			user(&mcp.ImageContent{Data: redPixel, MIMEType: "image/png"}),
			user(&mcp.TextContent{Text: "Please analyze the image above."}),
		}}, nil
	})
}
