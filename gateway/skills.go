package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolshelf/toolshelf/catalog"
	"github.com/toolshelf/toolshelf/upstream"
)

// Skills (the io.modelcontextprotocol/skills extension, SEP-2640) through
// the gateway: every server's trusted skills (upstream/skills.go), each
// under its server's name (skill://SERVER/...), listed by skills/list,
// described by skills/get, and their files read by resources/read, which
// returns a file only when its bytes are the ones pinned. The go-sdk has
// no methods for the extension, so skills/list and skills/get are
// answered in front of its transport (serveExtensions); files are a resource
// template of the gateway's own. The extension is declared once a server
// offers skills.
//
// When the go-sdk can serve methods of an extension, serveExtensions
// becomes handlers registered on the server.

const (
	skillTemplate = "skill://{+path}"
	skillsPage    = 100
)

// skillEntry is a skill as skills/list and skills/get answer it.
type skillEntry struct {
	URI         string               `json:"uri"`
	Frontmatter json.RawMessage      `json:"frontmatter"`
	Resources   []upstream.SkillFile `json:"resources"`
}

func entryOf(s upstream.ServedSkill) skillEntry {
	return skillEntry{URI: s.URI, Frontmatter: s.Frontmatter, Resources: s.Files}
}

// skillsMethod answers skills/list or skills/get.
func (s *Server) skillsMethod(ctx context.Context, method string, p extensionParams) (any, json.RawMessage) {
	// A server still starting may have skills: waited for, as lists
	// wait (awaitLists).
	s.awaitPending(ctx, func(*served) bool { return false })
	scope := s.listScope()
	var res map[string]any
	if method == "skills/get" {
		sk, err := s.up.Skill(ctx, p.URI)
		if err != nil {
			return nil, rpcError(jsonrpc.CodeInvalidParams, fmt.Sprintf("no skill is served at %s: %v", quoteClipped(p.URI), err))
		}
		res = map[string]any{"skill": entryOf(sk)}
	} else {
		all := s.up.Skills(ctx)
		// The cursor is the URI of the last skill of the page before:
		// stable while skills come and go.
		start := 0
		if c := p.Cursor; c != "" {
			start = len(all)
			for i, sk := range all {
				if sk.URI > c {
					start = i
					break
				}
			}
		}
		end := min(start+skillsPage, len(all))
		page := make([]skillEntry, 0, end-start)
		for _, sk := range all[start:end] {
			page = append(page, entryOf(sk))
		}
		res = map[string]any{"skills": page}
		if end < len(all) {
			res["nextCursor"] = all[end-1].URI
		}
	}
	res["resultType"], res["ttlMs"], res["cacheScope"] = "complete", listTTL, scope
	return res, nil
}

// readSkillFile reads a file of a trusted skill, as pinned.
func (s *Server) readSkillFile(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	uri := req.Params.URI
	res, err := s.up.ReadSkillFile(forCaller(ctx, req.Session, req.Params.GetProgressToken()), uri)
	switch {
	case errors.Is(err, upstream.ErrSkillUnknown):
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("resource %s: no skill served here lists it", quoteClipped(uri))}
	case err != nil:
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("resource %s: %v", quoteClipped(uri), err)}
	}
	s.up.Secrets().CutResource(res)
	return res, nil
}

// updateSkills makes the servers' trusted skills found by search_tools
// beside the tools, each naming the tools of its allowed-tools that can
// be called here.
func (s *Server) updateSkills() {
	snap := s.state.Load()
	if snap == nil {
		return
	}
	var entries []catalog.Entry
	for _, sk := range s.up.SkillIndex() {
		entries = append(entries, catalog.SkillEntry(sk.Server, sk.URI, sk.Name, sk.Description, s.skillUses(snap, &sk)))
	}
	if sn := s.shelf.UpdateSkills(catalog.New(entries, nil)); sn != nil && sn != snap.Snapshot {
		s.serve(sn)
	}
}

// directoryMethod answers resources/directory/read of a skill's folder
// (the skills extension's directoryRead, where a server offers it): the
// pinned files and folders of it that its server lists.
func (s *Server) directoryMethod(ctx context.Context, method string, p extensionParams) (any, json.RawMessage) {
	if p.URI == "" {
		return nil, rpcError(jsonrpc.CodeInvalidParams, method+": params.uri is required")
	}
	entries, next, err := s.up.SkillDirectory(ctx, p.URI, p.Cursor)
	if err != nil {
		return nil, rpcError(jsonrpc.CodeInvalidParams, fmt.Sprintf("%s is not a folder of a skill served here: %v", quoteClipped(p.URI), err))
	}
	if entries == nil {
		entries = []*mcp.Resource{}
	}
	res := map[string]any{"resultType": "complete", "resources": entries, "ttlMs": listTTL, "cacheScope": s.listScope()}
	if next != "" {
		res["nextCursor"] = next
	}
	return res, nil
}

// skillsSettings is the skills extension's settings as the gateway
// declares them.
func (s *Server) skillsSettings() map[string]any {
	if s.up.ReadsSkillDirectories() {
		return map[string]any{"directoryRead": true}
	}
	return map[string]any{}
}

// listScope is the cacheScope of what the gateway lists: private where
// what it lists depends on who asks.
func (s *Server) listScope() string {
	if s.opts.PrivateLists || s.opts.Activate {
		return "private"
	}
	return "public"
}
