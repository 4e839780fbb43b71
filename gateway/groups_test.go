package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolshelf/toolshelf/config"
	"github.com/toolshelf/toolshelf/internal/mcptest"
	"github.com/toolshelf/toolshelf/internal/testenv"
	"github.com/toolshelf/toolshelf/rules"
	"github.com/toolshelf/toolshelf/upstream"
)

// groupsClient is a client of the draft groups extension, written to it:
// it finds the extension in server/discover, lists groups, fetches one,
// and calls the tools it brought by their names.
type groupsClient struct {
	t   *testing.T
	url string
}

func (c *groupsClient) rpc(method string, params map[string]any) (result json.RawMessage, rpcErr map[string]any) {
	c.t.Helper()
	params["_meta"] = map[string]any{"io.modelcontextprotocol/protocolVersion": "2026-07-28",
		"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "groups-client", "version": "1"},
		"io.modelcontextprotocol/clientCapabilities": map[string]any{"extensions": map[string]any{groupsExtension: map[string]any{}}}}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 7, "method": method, "params": params})
	name, _ := params["name"].(string)
	_, got, err := postWith(c.url+"/mcp", string(body), map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": method, "Mcp-Name": name})
	if err != nil {
		c.t.Fatal(err)
	}
	if i := strings.Index(got, "data: "); i >= 0 {
		got = strings.TrimSpace(got[i+len("data: "):])
	}
	var resp struct {
		Result json.RawMessage `json:"result"`
		Error  map[string]any  `json:"error"`
	}
	if err := json.Unmarshal([]byte(got), &resp); err != nil {
		c.t.Fatalf("%s: %v: %s", method, err, got)
	}
	return resp.Result, resp.Error
}

// get fetches a group: its instructions and the names of its tools.
func (c *groupsClient) get(name string) (instructions string, tools []mcp.Tool, rpcErr map[string]any) {
	c.t.Helper()
	raw, e := c.rpc("groups/get", map[string]any{"name": name})
	if e != nil {
		return "", nil, e
	}
	var res struct {
		Instructions string `json:"instructions"`
		Contents     struct {
			Tools []mcp.Tool `json:"tools"`
		} `json:"contents"`
	}
	if err := json.Unmarshal(raw, &res); err != nil {
		c.t.Fatalf("groups/get %s: %v", name, err)
	}
	return res.Instructions, res.Contents.Tools, nil
}

func toolNames(ts []mcp.Tool) []string {
	var out []string
	for _, t := range ts {
		out = append(out, t.Name)
	}
	slices.Sort(out)
	return out
}

// Groups through the gateway, to a client written to the draft: a group
// per server (its tools), one per configured set (tool patterns), one per
// skill (its SKILL.md as instructions and the tools it names); fetching
// one gives the tools' whole definitions, as the profile and the rules
// allow, and the client calls them by name although search mode lists
// only search_tools and call_tool; an unknown group is -32002.
func TestGroups(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "jobs", Version: "1"}, nil)
	addJobs(srv, make(chan struct{}))
	mcp.AddTool(srv, &mcp.Tool{Name: "quick", Description: "Answer at once"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "quick answer"}}}, nil, nil
	})
	skills := &mcptest.SkillsServer{}
	md := "---\nname: refunds\ndescription: Refund an order\nallowed-tools: mcp__jobs__quick\n---\nCall quick first.\n"
	skills.Add("refunds", map[string]any{"name": "refunds", "description": "Refund an order", "allowed-tools": "mcp__jobs__quick"}, map[string]string{"SKILL.md": md})
	file := filepath.Join(t.TempDir(), "team.cedar")
	os.WriteFile(file, []byte(`forbid (principal, action, resource) when { resource.name == "stuck" };`+"\n"), 0o644)
	live, err := rules.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	pool := upstream.NewPool([]config.ServerConfig{inMemory("jobs", srv), {Name: "shop", Dial: skills.Dial}}, &upstream.Options{Policies: live})
	background(t, pool.Run)
	ctx, cancel := context.WithTimeout(context.Background(), testenv.Timeout(time.Minute))
	defer cancel()
	if err := pool.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	g := newGateway(t, pool.Scope(nil), &Options{Groups: []config.GroupConfig{{Name: "quick-things", Description: "Things done at once", Tools: []string{"mcp__jobs__q*"}}}})
	url := httpGateway(t, g, nil)
	c := &groupsClient{t: t, url: url}

	cs := httpClient(t, url, nil, nil) // the go-sdk's 2026-07-28 client discovers
	if _, ok := cs.InitializeResult().Capabilities.Extensions[groupsExtension]; !ok {
		t.Errorf("server/discover does not declare %s: %+v", groupsExtension, cs.InitializeResult().Capabilities.Extensions)
	}
	var listed []string
	testenv.Eventually(t, 30*time.Second, "the skill's group", func() bool {
		raw, e := c.rpc("groups/list", map[string]any{})
		var res struct {
			Groups []group `json:"groups"`
		}
		json.Unmarshal(raw, &res)
		listed = nil
		for _, g := range res.Groups {
			listed = append(listed, g.Name)
		}
		return e == nil && slices.Contains(listed, "refunds")
	})
	if want := []string{"quick-things", "jobs", "refunds"}; !slices.Equal(listed, want) {
		t.Errorf("groups/list: %v, want %v", listed, want)
	}
	_, tools, e := c.get("jobs")
	if got := toolNames(tools); e != nil || !slices.Equal(got, []string{"mcp__jobs__quick", "mcp__jobs__slow_report"}) {
		t.Errorf("groups/get jobs: %v %v (the forbidden tool must not be among them)", got, e)
	}
	for _, tool := range tools {
		if tool.InputSchema == nil {
			t.Errorf("%s came without its input schema", tool.Name)
		}
	}
	if _, tools, _ := c.get("quick-things"); !slices.Equal(toolNames(tools), []string{"mcp__jobs__quick"}) {
		t.Errorf("the configured group: %v", toolNames(tools))
	}
	instructions, tools, e := c.get("refunds")
	if e != nil || instructions != md || !slices.Equal(toolNames(tools), []string{"mcp__jobs__quick"}) {
		t.Errorf("the skill's group: %q %v %v", instructions, toolNames(tools), e)
	}
	if _, _, e := c.get("nothing-here"); e == nil || e["code"] != float64(-32002) {
		t.Errorf("an unknown group: %v, want -32002", e)
	}
	// Params of a shape the methods do not take are refused, for every
	// method the gateway answers itself.
	for _, method := range []string{"groups/list", "skills/list"} {
		if res, e := c.rpc(method, map[string]any{"cursor": []int{1}}); e == nil || e["code"] != float64(-32602) {
			t.Errorf("%s with a cursor that is no string: %s %v, want -32602", method, res, e)
		}
	}

	// Search mode lists only the meta tools; the client calls what the
	// group brought by its name.
	list, err := cs.ListTools(ctx, nil)
	if err != nil || len(list.Tools) != 2 {
		t.Fatalf("tools/list in search mode: %v %v", list, err)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "mcp__jobs__quick", Arguments: map[string]any{}})
	if err != nil || res.IsError || !strings.Contains(fmt.Sprint(res.Content[0]), "quick answer") {
		t.Errorf("calling a group's tool by its name: %v %v", res, err)
	}
	if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "mcp__jobs__stuck", Arguments: map[string]any{}}); err == nil && !res.IsError {
		t.Errorf("a forbidden tool was called by its name: %v", res)
	}
}

// A group holds only tools a server listed: a configured group, or a
// skill's, that names a tool known only by a server's autoApprove (the
// server did not answer tools/list) does not hold it.
func TestGroupsHoldOnlyListedTools(t *testing.T) {
	cmd, env := mcptest.Command("exit", nil)
	approved := config.ServerConfig{Name: "approved", Command: cmd, Env: env, NoContain: true, AutoApprove: []string{"send_message"}, Timeout: testenv.Timeout(5 * time.Second)}
	skills := &mcptest.SkillsServer{}
	md := "---\nname: notify\ndescription: Tell the team\nallowed-tools: mcp__approved__send_message\n---\nSend it.\n"
	skills.Add("notify", map[string]any{"name": "notify", "description": "Tell the team", "allowed-tools": "mcp__approved__send_message"}, map[string]string{"SKILL.md": md})
	pool := upstream.NewPool([]config.ServerConfig{approved, {Name: "shop", Dial: skills.Dial}}, &upstream.Options{RestartDelay: time.Hour})
	background(t, pool.Run)
	ctx, cancel := context.WithTimeout(context.Background(), testenv.Timeout(time.Minute))
	defer cancel()
	if err := pool.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if e, ok := pool.Catalog().Lookup("mcp__approved__send_message"); !ok || !e.Unverified {
		t.Fatalf("the autoApprove name is not in the catalog as unverified: %+v", e)
	}
	g := newGateway(t, pool.Scope(nil), &Options{Groups: []config.GroupConfig{{Name: "messaging", Description: "Messages", Tools: []string{"mcp__approved__*"}}}})
	seen := 0
	for _, grp := range g.groups(ctx) {
		if grp.Name != "messaging" && grp.Name != "notify" {
			continue
		}
		seen++
		for _, e := range grp.tools {
			t.Errorf("group %s holds %s, a tool no server listed", grp.Name, e.Name)
		}
	}
	if seen != 2 {
		t.Errorf("saw %d of the two groups", seen)
	}
}
