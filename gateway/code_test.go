package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolshelf/toolshelf/config"
	"github.com/toolshelf/toolshelf/internal/mcptest"
	"github.com/toolshelf/toolshelf/internal/testenv"
	"github.com/toolshelf/toolshelf/sandbox"
	"github.com/toolshelf/toolshelf/upstream"
)

// filesServer is an upstream with two tools over three files, and
// admin one that must stay out of a profile's programs.
func filesServer() *mcp.Server {
	files := map[string]string{"a.go": "package a\n// TODO: one\n", "b.go": "package b\n", "notes.md": "TODO two\nTODO three\nend\n"}
	srv := mcp.NewServer(&mcp.Implementation{Name: "files", Version: "1"}, nil)
	srv.AddTool(&mcp.Tool{Name: "list_files", Description: "List the files in the folder", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: `["a.go","b.go","notes.md"]`}}}, nil
		})
	srv.AddTool(&mcp.Tool{Name: "read_file", Description: "Read a file's text", InputSchema: map[string]any{
		"type": "object", "properties": map[string]any{"path": map[string]any{"type": "string", "description": "the file"}}, "required": []string{"path"}}},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var in struct{ Path string }
			json.Unmarshal(req.Params.Arguments, &in)
			text, ok := files[in.Path]
			if !ok {
				return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "no such file " + in.Path}}}, nil
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}, nil
		})
	return srv
}

func adminServer(deleted *int) *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "admin", Version: "1"}, nil)
	srv.AddTool(&mcp.Tool{Name: "delete_everything", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			*deleted++
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "deleted"}}}, nil
		})
	return srv
}

func codeRunner(t *testing.T) *sandbox.Runner {
	t.Helper()
	r, err := sandbox.New(&sandbox.Options{Limits: sandbox.Limits{Wall: 30 * time.Second, Calls: 20}})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// In code mode the gateway lists run_code, search gives declarations,
// and a program's calls reach the profile's tools, and only them, each
// in the audit log as a call made via code.
func TestCodeMode(t *testing.T) {
	l, records := auditLog(t)

	var deleted int
	pool := upstream.NewPool([]config.ServerConfig{inMemory("files", filesServer()), inMemory("admin", adminServer(&deleted))}, nil)
	background(t, pool.Run)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := pool.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	g := newGateway(t, pool.Scope(&config.Profile{Name: "ro", Servers: []string{"files"}}), &Options{Code: codeRunner(t), Audit: l})
	cs := connect(t, g, nil)
	if names := listNames(t, cs); strings.Join(names, " ") != "call_tool run_code search_tools" {
		t.Fatalf("listed: %v", names)
	}
	found := text(call(t, cs, toolSearch, map[string]any{"query": "read a file"}))
	if !strings.Contains(found, `tools.files.read_file(args: {\n  /** the file */\n  path: string;\n})`) || strings.Contains(found, "input_schema") {
		t.Errorf("search in code mode: %s", found)
	}

	res := call(t, cs, toolCode, map[string]any{"code": `
		const names = await tools.files.list_files();
		const out = [];
		for (const path of names) {
			const text = await tools.files.read_file({path});
			const todos = text.split("\n").filter(l => l.includes("TODO")).length;
			if (todos > 0) out.push(path + " " + todos);
		}
		return out.join(", ");`})
	if res.IsError || text(res) != "result: a.go 1, notes.md 2\n" {
		t.Errorf("program: %v %q", res.IsError, text(res))
	}

	for _, program := range []string{
		`await tools.admin.delete_everything()`,
		`await tools["ad" + "min"]["delete_" + "everything"]()`,
		`for (const s of ["admin", "files"]) for (const t of ["delete_everything"]) await tools[s][t]()`,
	} {
		res := call(t, cs, toolCode, map[string]any{"code": program})
		if !res.IsError || !strings.Contains(text(res), "there is no tool tools.admin.delete_everything") {
			t.Errorf("%s: %v %s", program, res.IsError, text(res))
		}
	}
	if deleted != 0 {
		t.Errorf("a program reached a tool outside its profile %d times", deleted)
	}
	res = call(t, cs, toolCode, map[string]any{"code": `await tools.files.read_file({path: "nope"})`})
	if !res.IsError || !strings.Contains(text(res), "no such file nope") {
		t.Errorf("a tool's error: %s", text(res))
	}
	res = call(t, cs, toolCode, map[string]any{"code": `await tools.files.read_file({path: 7})`})
	if !res.IsError {
		t.Errorf("arguments against the schema: %s", text(res))
	}

	recs := records()
	var code, viaCode int
	for _, r := range recs {
		switch {
		case r.Kind == "code":
			code++
		case r.Kind == "call" && r.Via == "code":
			viaCode++
			if r.Server != "files" {
				t.Errorf("a call via code to %s", r.Tool)
			}
		}
	}
	if code != 6 || viaCode != 6 {
		t.Errorf("%d run_code records and %d calls via code, want 6 and 6", code, viaCode)
	}
}

// A program's limits end it with a message naming the limit, and the
// gateway serves the next request.
func TestCodeLimits(t *testing.T) {
	g, _ := gatewayFor(t, &Options{Code: codeRunner(t)}, inMemory("files", filesServer()))
	cs := connect(t, g, nil)
	res := call(t, cs, toolCode, map[string]any{"code": `for (let i = 0; i < 100; i++) await tools.files.list_files()`})
	if !res.IsError || !strings.Contains(text(res), "more than 20 tool calls (the calls limit)") {
		t.Errorf("calls: %s", text(res))
	}
	res = call(t, cs, toolCode, map[string]any{"code": `console.log("z".repeat(1 << 20))`})
	if res.IsError || !strings.Contains(text(res), fmt.Sprintf("output cut at %d bytes", 16<<10)) || len(text(res)) > 17<<10 {
		t.Errorf("output: %d bytes, ends %q", len(text(res)), text(res)[max(0, len(text(res))-120):])
	}
	if res := call(t, cs, toolCode, map[string]any{}); !res.IsError || !strings.Contains(text(res), `"code" is required`) {
		t.Errorf("no code: %s", text(res))
	}
	if res := call(t, cs, toolSearch, map[string]any{"query": "list files"}); res.IsError {
		t.Errorf("search after the limits: %s", text(res))
	}
}

// A program still running when its client goes away ends with it: the
// tool call it waits on is cancelled upstream.
func TestProgramEndsWithItsClient(t *testing.T) {
	cmd, env := mcptest.Command("serve", []string{"wait"})
	g, _ := gatewayFor(t, &Options{Code: codeRunner(t)}, config.ServerConfig{Name: "slow", Command: cmd, Env: env, Timeout: testenv.Timeout(config.DefaultTimeout),
		// Uncontained: it writes its marker in the test's temporary folder.
		NoContain: true})
	marker := filepath.Join(t.TempDir(), "marker")
	program, _ := json.Marshal(fmt.Sprintf(`await tools.slow.wait({marker: %q})`, marker))
	disconnectMidCall(t, httpGateway(t, g, &HTTPOptions{Stateless: true}), marker, `{"name":"run_code","arguments":{"code":`+string(program)+`}}`)
}

// Fifty clients run programs at once, five of them loops without end:
// each ends with its own answer or the CPU limit, and searches are
// served meanwhile.
func TestFiftyPrograms(t *testing.T) {
	r, err := sandbox.New(&sandbox.Options{Limits: sandbox.Limits{CPU: time.Second, Wall: testenv.Timeout(2 * time.Minute)}})
	if err != nil {
		t.Fatal(err)
	}
	g, _ := gatewayFor(t, &Options{Code: r}, inMemory("files", filesServer()))
	var wg sync.WaitGroup
	for i := range 50 {
		cs := connect(t, g, nil)
		wg.Go(func() {
			program := fmt.Sprintf(`return (await tools.files.list_files()).length * %d`, i)
			if i%10 == 0 {
				program = `while (true) {}`
			}
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: toolCode, Arguments: map[string]any{"code": program}})
			switch {
			case err != nil:
				t.Errorf("program %d: %v", i, err)
			case i%10 == 0 && (!res.IsError || !strings.Contains(text(res), "cpu limit")):
				t.Errorf("loop %d: %s", i, text(res))
			case i%10 != 0 && strings.TrimSuffix(waitNote.ReplaceAllString(text(res), ""), "\n") != fmt.Sprintf("result: %d", 3*i):
				t.Errorf("program %d: %s", i, text(res))
			}
		})
	}
	cs := connect(t, g, nil)
	for range 10 {
		if res := call(t, cs, toolSearch, map[string]any{"query": "read a file"}); res.IsError {
			t.Errorf("search while programs run: %s", text(res))
		}
	}
	wg.Wait()
}

// waitNote is what a program that waited for its turn says of it.
var waitNote = regexp.MustCompile(`\n\(the program waited [^)]*\)$`)
