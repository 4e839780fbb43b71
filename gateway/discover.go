package gateway

import (
	"context"
	"maps"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolshelf/toolshelf/upstream"
)

// narrowDiscover answers server/discover (MCP 2026-07-28) with what the
// gateway serves end to end now: prompts, resources and completions only
// when a server of this gateway's offers them, MCP Apps and skills only
// when one has an app or a skill. A session's capabilities last as long as it does, so initialize
// declares them all (servers connect after clients do); a discover answer
// is asked again when it expires (ttlMs), and a client of the new
// revision hears of servers' list changes on its listen stream.
//
// The versions stay the gateway's own: it speaks each server's revision
// to that server (versionClient), so a client of any revision it serves
// reaches every server, whichever revisions they speak. Tasks are the
// gateway's own too (it runs a call as a task whatever the server).
func (s *Server) narrowDiscover(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method != "server/discover" {
			return next(ctx, method, req)
		}
		// Servers still starting are waited for (awaitLists).
		res, err := next(ctx, method, req)
		d, ok := res.(*mcp.DiscoverResult)
		if err != nil || !ok || d.Capabilities == nil {
			return res, err
		}
		caps := *d.Capabilities
		caps.Extensions = maps.Clone(caps.Extensions)
		t := s.offers.Load()
		if t == nil || len(t.prompts) == 0 {
			caps.Prompts = nil
		}
		if t == nil || len(t.resources) == 0 && len(t.templates) == 0 && !t.skills {
			caps.Resources = nil // a skill's files are resources
		}
		if caps.Prompts == nil && (t == nil || len(t.templates) == 0) {
			caps.Completions = nil // what completion completes: prompts' and templates' arguments
		}
		if !t.hasApps() {
			delete(caps.Extensions, appsExtension)
		}
		// Skills as the servers offer them now (a session's initialize
		// declares what the server it was made from did: declareSkills).
		if t != nil && t.skills {
			caps.Extensions[upstream.SkillsExtension] = s.skillsSettings()
		} else {
			delete(caps.Extensions, upstream.SkillsExtension)
		}
		d.Capabilities = &caps
		return d, nil
	}
}

// hasApps reports whether a server offers an MCP App.
func (t *offerTable) hasApps() bool {
	if t == nil {
		return false
	}
	for uri := range t.resources {
		if isApp(uri) {
			return true
		}
	}
	return false
}
