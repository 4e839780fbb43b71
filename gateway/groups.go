package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolshelf/toolshelf/catalog"
	"github.com/toolshelf/toolshelf/upstream"
)

// Groups (the draft io.modelcontextprotocol/groups extension of the
// Progressive Disclosure working group, revision 2026-09-28): a client
// lists groups by name and description (groups/list), and fetches one
// (groups/get) as the typed definitions of its tools, so that it loads
// them natively and calls them directly, by their names, through the
// gateway: search_tools and call_tool lose a tool's schema-constrained
// calling; a group keeps it. The gateway serves a group per server (its
// tools), one per configured set ("groups" in the configuration: tool
// patterns and skills), and one per skill (its SKILL.md as instructions,
// the tools its allowed-tools names, its files). A group holds what the
// caller's profile and the rules let it see; a tool a client loads from
// a group is called as any call is (the rules decide): discovery is not
// access. Served, as skills are, in front of the go-sdk's transport.

const (
	groupsExtension = "io.modelcontextprotocol/groups"
	groupsPage      = 100
)

// group is one group as the gateway serves it.
type group struct {
	Name        string `json:"name"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description"`

	tools  []*catalog.Entry
	skills []upstream.ServedSkill // their SKILL.md as resources
	// skill: the group is this skill's, its SKILL.md the instructions.
	skill *upstream.ServedSkill
}

var notGroupName = regexp.MustCompile(`[^a-z0-9]+`)

// groupNameOf makes s a group name: lowercase letters, digits and single
// hyphens, at most 64.
func groupNameOf(s string) string {
	n := strings.Trim(notGroupName.ReplaceAllString(strings.ToLower(s), "-"), "-")
	if len(n) > 64 {
		n = strings.TrimRight(n[:64], "-")
	}
	if n == "" {
		n = "group"
	}
	return n
}

// groups returns the groups the caller sees, by name: the configured
// ones first, then one per server, then one per skill; a name taken
// before gets a number.
func (s *Server) groups(ctx context.Context) []*group {
	snap := s.state.Load()
	if snap == nil {
		return nil
	}
	skills := s.up.Skills(ctx)
	var out []*group
	taken := map[string]bool{}
	add := func(g *group) {
		base := g.Name
		for i := 2; taken[g.Name]; i++ {
			g.Name = fmt.Sprintf("%s-%d", strings.TrimRight(base[:min(len(base), 60)], "-"), i)
		}
		taken[g.Name] = true
		out = append(out, g)
	}
	sets := s.settings.Load().Groups
	for i := range sets {
		cfg := &sets[i]
		g := &group{Name: cfg.Name, Description: cfg.Description}
		for e := range snap.Catalog.All() {
			if !e.Unverified && cfg.HasTool(e.Name) {
				g.tools = append(g.tools, e)
			}
		}
		for _, sk := range skills {
			if cfg.HasSkill(sk.Name, sk.URI) {
				g.skills = append(g.skills, sk)
			}
		}
		add(g)
	}
	byServer := map[string][]*catalog.Entry{}
	for e := range snap.Catalog.All() {
		if !e.Unverified {
			byServer[e.Server] = append(byServer[e.Server], e)
		}
	}
	for _, srv := range snap.Catalog.Servers() {
		tools := byServer[srv.Name]
		if len(tools) == 0 {
			continue
		}
		desc := fmt.Sprintf("The %d tools of server %s", len(tools), srv.Name)
		if srv.Title != "" && srv.Title != srv.Name {
			desc += " (" + srv.Title + ")"
		}
		add(&group{Name: groupNameOf(srv.Name), Title: srv.Title, Description: desc + ".", tools: tools})
	}
	for i := range skills {
		sk := &skills[i]
		g := &group{Name: groupNameOf(sk.Name), Title: sk.Name, Description: sk.Description, skill: sk}
		for _, t := range s.skillUses(snap, sk) {
			// As a configured group: only tools a server listed, never
			// the known-but-unverified names of a server's autoApprove.
			if e, ok := snap.Catalog.Find(t); ok && !e.Unverified {
				g.tools = append(g.tools, e)
			}
		}
		add(g)
	}
	return out
}

// skillUses are the qualified names of the tools of a skill's
// allowed-tools that the catalog has: by qualified name, or by the name
// the skill's server gives it.
func (s *Server) skillUses(snap *served, sk *upstream.ServedSkill) []string {
	var out []string
	for _, t := range sk.AllowedTools() {
		for _, name := range []string{t, catalog.Prefix + sk.Server + "__" + t} {
			if tool, ok := snap.Catalog.Find(name); ok && !slices.Contains(out, tool.Name) {
				out = append(out, tool.Name)
				break
			}
		}
	}
	return out
}

// groupsMethod answers groups/list or groups/get.
func (s *Server) groupsMethod(ctx context.Context, method string, p extensionParams) (any, json.RawMessage) {
	s.awaitPending(ctx, func(*served) bool { return false }) // as lists wait (awaitLists)
	all := s.groups(ctx)
	var res any
	if method == "groups/list" {
		start := 0
		if c := p.Cursor; c != "" {
			start = len(all)
			if i := slices.IndexFunc(all, func(g *group) bool { return g.Name == c }); i >= 0 {
				start = i + 1
			}
		}
		end := min(start+groupsPage, len(all))
		page := struct {
			Groups     []*group `json:"groups"`
			NextCursor string   `json:"nextCursor,omitempty"`
			ResultType string   `json:"resultType"`
		}{Groups: all[start:end], ResultType: "complete"}
		if page.Groups == nil {
			page.Groups = []*group{}
		}
		if end < len(all) {
			page.NextCursor = all[end-1].Name
		}
		res = page
	} else {
		i := slices.IndexFunc(all, func(g *group) bool { return g.Name == p.Name })
		if i < 0 {
			return nil, rpcError(-32002, fmt.Sprintf("no group is named %s", quoteClipped(p.Name)))
		}
		got, err := s.groupContents(ctx, all[i])
		if err != nil {
			return nil, rpcError(jsonrpc.CodeInternalError, fmt.Sprintf("group %s: %v", all[i].Name, err))
		}
		res = got
	}
	return res, nil
}

// groupResult is groups/get's answer.
type groupResult struct {
	ResultType   string        `json:"resultType"`
	Instructions string        `json:"instructions,omitempty"`
	Contents     groupContents `json:"contents"`
}

type groupContents struct {
	Tools     []*mcp.Tool     `json:"tools,omitempty"`
	Resources []*mcp.Resource `json:"resources,omitempty"`
}

// groupContents is a group as groups/get gives it: its tools' whole
// definitions as the gateway lists them, its skills' SKILL.md files as
// resources, and a skill's group its SKILL.md as instructions (read and
// checked against its pin) and its other files.
func (s *Server) groupContents(ctx context.Context, g *group) (*groupResult, error) {
	res := &groupResult{ResultType: "complete"}
	for _, e := range g.tools {
		res.Contents.Tools = append(res.Contents.Tools, directTool(e))
	}
	for _, sk := range g.skills {
		res.Contents.Resources = append(res.Contents.Resources, &mcp.Resource{URI: sk.URI, Name: sk.Name, Description: sk.Description, MIMEType: "text/markdown"})
	}
	if g.skill != nil {
		read, err := s.up.ReadSkillFile(ctx, g.skill.URI)
		if err != nil {
			return nil, err
		}
		res.Instructions = read.Contents[0].Text
		for _, f := range g.skill.Files {
			if f.URI != g.skill.URI {
				res.Contents.Resources = append(res.Contents.Resources, &mcp.Resource{URI: f.URI, Name: strings.TrimPrefix(f.URI, g.skill.Root()+"/"), Size: f.Size})
			}
		}
	}
	if res.Instructions == "" && len(res.Contents.Tools) == 0 && len(res.Contents.Resources) == 0 {
		res.Instructions = "Nothing of this group is open to you now: its tools are outside your profile or forbidden by the rules, or its servers are not connected."
	}
	return res, nil
}

// callScoped lets a client call a tool it loaded from a group (or found
// by search) by its name, directly, when the session does not list it:
// as a listed tool is called (forward), the rules deciding. A name the
// catalog does not have goes on to the SDK, which says so.
func (s *Server) callScoped(x *exposure) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			call, ok := req.(*mcp.CallToolRequest)
			if !ok || method != "tools/call" || call.Params == nil {
				return next(ctx, method, req)
			}
			name := call.Params.Name
			s.mu.Lock()
			_, listed := x.listed[name]
			s.mu.Unlock()
			snap := s.state.Load()
			if listed || snap == nil {
				return next(ctx, method, req)
			}
			e, found := snap.Catalog.Find(name)
			if !found || e.Unverified || e.Name != name {
				return next(ctx, method, req)
			}
			return s.forward(e.Name)(ctx, call)
		}
	}
}
