package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolshelf/toolshelf/audit"
	"github.com/toolshelf/toolshelf/config"
	"github.com/toolshelf/toolshelf/policy"
	"github.com/toolshelf/toolshelf/upstream"
)

// bindingServer is a Go server whose write_file binds its arguments with
// encoding/json, as the go-sdk's typed tools (and many hand-written and
// mcp-go servers) do: keys matched whatever their case, the last kept.
// It notes the paths it was asked to write.
func bindingServer(t *testing.T) (config.ServerConfig, func() []string) {
	var mu sync.Mutex
	var wrote []string
	srv := mcp.NewServer(&mcp.Implementation{Name: "fs", Version: "1"}, nil)
	type in struct {
		Path    string `json:"path"`
		Content string `json:"content,omitempty"`
	}
	mcp.AddTool(srv, &mcp.Tool{Name: "write_file", Description: "Write a file"}, func(_ context.Context, _ *mcp.CallToolRequest, a in) (*mcp.CallToolResult, any, error) {
		mu.Lock()
		wrote = append(wrote, a.Path)
		mu.Unlock()
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "wrote " + a.Path}}}, nil, nil
	})
	cfg := config.ServerConfig{Name: "fs", Dial: func(ctx context.Context) (mcp.Transport, error) {
		st, ct := mcp.NewInMemoryTransports()
		go srv.Run(context.Background(), st)
		return ct, nil
	}}
	return cfg, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), wrote...)
	}
}

// TestOneFormOfACall: behind the README's rule, a Go server that binds
// keys whatever their case writes only what the rule judged, however the
// tool is reached: two keys one reader takes for one (path and PATH, a
// repeat, at any depth) are invalid params; a declared key in another
// case reaches the rule and the server as the parameter it is; the audit
// record holds the arguments the server got.
func TestOneFormOfACall(t *testing.T) {
	live, _ := rulesFile(t, `
@message("files are written only under /srv/ci")
forbid (principal, action == Action::"call", resource)
when { resource.name == "write_file" && !(context.clean has path && context.clean.path like "/srv/ci/*") };
`)
	cfg, wrote := bindingServer(t)
	pool := poolWith(t, &upstream.Options{Policies: live}, cfg)
	log, records := auditLog(t)
	search := connect(t, newGateway(t, pool.Scope(nil), &Options{Audit: log}), nil)
	direct := connect(t, newGateway(t, pool.Scope(nil), &Options{Settings: policy.Settings{Mode: policy.ModeStandard}}), nil)
	code := connect(t, newGateway(t, pool.Scope(nil), &Options{Code: codeRunner(t)}), nil)

	invalid := func(how string, res *mcp.CallToolResult, err error, want string) {
		t.Helper()
		var rpc *jsonrpc.Error
		if !errors.As(err, &rpc) || rpc.Code != jsonrpc.CodeInvalidParams || !strings.Contains(rpc.Message, want) {
			t.Errorf("%s: %v %v, want invalid params with %q", how, res, err, want)
		}
	}
	for _, args := range []string{
		`{"path": "/srv/ci/ok", "PATH": "/etc/passwd"}`,
		`{"PATH": "/etc/passwd", "path": "/srv/ci/ok"}`,
		`{"path": "/srv/ci/ok", "ｐａｔｈ": "/etc/passwd"}`,
		`{"path": "/srv/ci/ok", "path": "/etc/passwd"}`,
		`{"path": "/srv/ci/ok", "content": {"a": 1, "A": 2}}`,
	} {
		res, err := search.CallTool(context.Background(), &mcp.CallToolParams{Name: toolCall, Arguments: json.RawMessage(`{"name": "mcp__fs__write_file", "arguments": ` + args + `}`)})
		want := "one key"
		if strings.Contains(args, `"path": "/etc`) {
			want = "given twice"
		}
		invalid("call_tool "+args, res, err, want)
		res, err = direct.CallTool(context.Background(), &mcp.CallToolParams{Name: "mcp__fs__write_file", Arguments: json.RawMessage(args)})
		invalid("direct "+args, res, err, want)
	}
	res := call(t, code, "run_code", map[string]any{"code": `try { await tools.fs.write_file({path: "/srv/ci/ok", PATH: "/etc/passwd"}); return "ran" } catch (e) { return "caught: " + e.message }`})
	if !strings.Contains(text(res), "caught: ") || !strings.Contains(text(res), "one key") {
		t.Errorf("run_code: %s", text(res))
	}
	// The rule reads what the server binds: PATH alone is the path.
	res = call(t, search, toolCall, map[string]any{"name": "mcp__fs__write_file", "arguments": map[string]any{"PATH": "/etc/passwd"}})
	if !res.IsError || !strings.Contains(text(res), "files are written only under /srv/ci") {
		t.Errorf("PATH alone, outside: %s", text(res))
	}
	res = call(t, search, toolCall, map[string]any{"name": "mcp__fs__write_file", "arguments": map[string]any{"Path": "/srv/ci/a"}})
	if res.IsError {
		t.Errorf("Path alone, inside: %s", text(res))
	}
	if got := strings.Join(wrote(), " "); got != "/srv/ci/a" {
		t.Errorf("the server wrote %q, want only /srv/ci/a", got)
	}
	var last audit.Record
	for _, r := range records() {
		if r.Kind == "call" {
			last = r
		}
	}
	if last.ArgsSHA256 != audit.Hash(json.RawMessage(`{"path":"/srv/ci/a"}`)) {
		t.Errorf("the record's arguments are not the server's: %+v", last)
	}
}
