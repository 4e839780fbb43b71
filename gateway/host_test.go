package gateway

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolshelf/toolshelf/config"
	"github.com/toolshelf/toolshelf/internal/testenv"
	"github.com/toolshelf/toolshelf/policy"
	"github.com/toolshelf/toolshelf/upstream"
)

// Host.Apply changes a profile's tools and the gateways' settings in
// place: an open session lists again (list_changed) and sees the new
// tools, a tool the profile lost is refused, a group added is served;
// a change of who opens a profile is left for a restart, changing nothing.
func TestHostAppliesProfilesInPlace(t *testing.T) {
	pool := upstream.NewPool(standardUpstreams(t), nil)
	const token = "ro-token-0123456789abcdef"
	ro := config.Profile{Name: "ro", Servers: []string{"github"}, Tokens: []string{token}}
	host, err := NewHost(pool, &HostOptions{Profiles: []config.Profile{ro},
		Server: Options{Settings: policy.Settings{Mode: policy.ModeStandard}}})
	if err != nil {
		t.Fatal(err)
	}
	background(t, host.Run)
	ctx, cancel := context.WithTimeout(context.Background(), testenv.Timeout(time.Minute))
	defer cancel()
	pool.Wait(ctx)
	g := host.Gateway("ro")
	changed := make(chan struct{}, 16)
	cs := connect(t, g, &mcp.ClientOptions{ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
		select {
		case changed <- struct{}{}:
		default:
		}
	}})
	of := func(server string) func(string) bool {
		return func(n string) bool { return strings.Contains(n, server) }
	}
	testenv.Eventually(t, time.Minute, "the profile's tools to be listed", func() bool {
		names := listNames(t, cs)
		return slices.ContainsFunc(names, of("github")) && !slices.ContainsFunc(names, of("slack"))
	})
	drain: // the list_changed of the servers' start
	for {
		select {
		case <-changed:
		default:
			break drain
		}
	}
	var githubTool string
	for _, n := range listNames(t, cs) {
		if strings.Contains(n, "create_issue") {
			githubTool = n
		}
	}

	moved := ro
	moved.Servers = []string{"slack"}
	if left := host.Apply([]config.Profile{moved}, Settings{Groups: []config.GroupConfig{{Name: "chat", Description: "Talk in Slack", Tools: []string{"*post_message*"}}}}); len(left) > 0 {
		t.Fatalf("a change of a profile's tools was left for a restart: %v", left)
	}
	select {
	case <-changed:
	case <-ctx.Done():
		t.Fatal("timed out: no list_changed for the profile's new tools")
	}
	testenv.Eventually(t, time.Minute, "the session to list the profile's new tools", func() bool {
		names := listNames(t, cs)
		return slices.ContainsFunc(names, of("slack")) && !slices.ContainsFunc(names, of("github"))
	})
	if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: githubTool, Arguments: map[string]any{}}); err == nil && !res.IsError {
		t.Errorf("a tool the profile lost was called: %s", text(res))
	}
	if !slices.ContainsFunc(g.groups(ctx), func(gr *group) bool { return gr.Name == "chat" }) {
		t.Error("the group added is not served")
	}

	// Who opens the profile changes: nothing is applied.
	other := moved
	other.Servers = []string{"github"}
	other.Tokens = []string{"new-token-0123456789abcdef"}
	if left := host.Apply([]config.Profile{other}, Settings{}); len(left) == 0 {
		t.Error("a profile's new token was applied in place")
	}
	if names := listNames(t, cs); slices.ContainsFunc(names, of("github")) {
		t.Errorf("a change left for a restart changed the tools: %v", names)
	}
}
