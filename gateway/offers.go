package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolshelf/toolshelf/upstream"
	"github.com/yosida95/uritemplate/v3"
)

// The gateway serves its servers' prompts, resources and resource
// templates as its own, and sends prompts/get, resources/read,
// completion/complete and resources/subscribe to the server that owns
// what they name.
//
// Names are kept as the servers give them. Where two servers offer a
// prompt of the same name, each of those prompts is served as
// <server>__<name>; where two offer the same resource URI or template,
// each is served as toolshelf://<server>/<uri>. Nothing is renamed while
// its name is unique, so a user with one server sees exactly its names.

// collisionScheme prefixes a resource URI or template that two servers
// share.
const collisionScheme = "toolshelf://"

// offerTable is what the gateway serves of its servers' offers.
type offerTable struct {
	prompts   map[string]promptRef // by served name
	resources map[string]resRef    // by served URI
	templates []templateRef        // sorted by served template
	exposed   map[[2]string]string // {server, URI as the server names it} → served URI
	// skills: a server has trusted skills, whose files are read by the
	// gateway's own template (skills.go).
	skills bool
}

type promptRef struct {
	server string
	prompt mcp.Prompt // as served
	name   string     // as the server names it
}

type resRef struct {
	server   string
	resource mcp.Resource // as served
	uri      string       // as the server names it
}

type templateRef struct {
	server   string
	template mcp.ResourceTemplate // as served
	orig     string               // as the server writes it
	match    *uritemplate.Template
}

// newOfferTable names every offer uniquely. Offers that cannot be served
// (a URI that does not parse, a template that is not one) are left out
// and reported.
func newOfferTable(offers []upstream.Offer) (*offerTable, []error) {
	t := &offerTable{prompts: map[string]promptRef{}, resources: map[string]resRef{}, exposed: map[[2]string]string{}}
	var bad []error
	count := map[string]int{}
	for _, o := range offers {
		for _, p := range o.Prompts {
			count["p\x00"+p.Name]++
		}
		for _, r := range o.Resources {
			count["r\x00"+r.URI]++
		}
		for _, rt := range o.Templates {
			count["t\x00"+rt.URITemplate]++
		}
	}
	for _, o := range offers {
		if o.OffersSkills || len(o.Skills) > 0 {
			// A skills server's skill:// files, and every file under a
			// skill it listed, are served as its skills (their digests
			// checked) or not at all: a skill left out (a wrong digest,
			// held for a person) is not read as a resource instead.
			o.Resources = slices.DeleteFunc(slices.Clone(o.Resources), func(r *mcp.Resource) bool { return r != nil && skillFile(r.URI, o.SkillRoots) })
			o.Templates = slices.DeleteFunc(slices.Clone(o.Templates), func(t *mcp.ResourceTemplate) bool {
				return t != nil && skillFile(t.URITemplate, o.SkillRoots)
			})
		}
		for _, p := range o.Prompts {
			if p == nil || p.Name == "" {
				continue
			}
			served := *p
			if count["p\x00"+p.Name] > 1 {
				served.Name = o.Server + "__" + p.Name
			}
			t.prompts[served.Name] = promptRef{o.Server, served, p.Name}
		}
		for _, r := range o.Resources {
			if r == nil {
				continue
			}
			served := *r
			switch {
			case isApp(r.URI):
				// Apps are named by their server, as tools are.
				served.URI = upstream.AppURI(o.Server, o.Unprefixed, r.URI)
			case count["r\x00"+r.URI] > 1:
				served.URI = collisionScheme + o.Server + "/" + r.URI
			}
			if u, err := url.Parse(served.URI); err != nil || u.Scheme == "" {
				bad = append(bad, fmt.Errorf("server %s: resource URI %q is not an absolute URI; left out", o.Server, cut(r.URI, echoLimit)))
				continue
			}
			t.resources[served.URI] = resRef{o.Server, served, r.URI}
			t.exposed[[2]string{o.Server, r.URI}] = served.URI
		}
		// An app a tool names but the server does not list is served too:
		// the client reads it by the URI the tool names.
		for _, uri := range slices.Sorted(maps.Keys(o.Apps)) {
			if _, ok := t.exposed[[2]string{o.Server, uri}]; ok {
				continue
			}
			served := upstream.AppURI(o.Server, o.Unprefixed, uri)
			r := mcp.Resource{URI: served, Name: uri}
			if app := o.Apps[uri]; len(app.Contents) > 0 && app.Contents[0] != nil {
				r.MIMEType = app.Contents[0].MIMEType
			}
			t.resources[served] = resRef{o.Server, r, uri}
			t.exposed[[2]string{o.Server, uri}] = served
		}
		for _, rt := range o.Templates {
			if rt == nil {
				continue
			}
			served := *rt
			if count["t\x00"+rt.URITemplate] > 1 {
				served.URITemplate = collisionScheme + o.Server + "/" + rt.URITemplate
			}
			m, err := uritemplate.New(served.URITemplate)
			if err != nil {
				bad = append(bad, fmt.Errorf("server %s: resource template %q: %v; left out", o.Server, cut(rt.URITemplate, echoLimit), err))
				continue
			}
			t.templates = append(t.templates, templateRef{o.Server, served, rt.URITemplate, m})
		}
	}
	slices.SortFunc(t.templates, func(a, b templateRef) int {
		return strings.Compare(a.template.URITemplate, b.template.URITemplate)
	})
	return t, bad
}

// owner returns the server of a served resource URI (listed, or matching
// a template) and the URI as that server names it.
func (t *offerTable) owner(uri string) (server, orig string, ok bool) {
	if r, ok := t.resources[uri]; ok {
		return r.server, r.uri, true
	}
	for _, rt := range t.templates {
		if rt.match.Regexp().MatchString(uri) {
			orig := uri
			if rt.orig != rt.template.URITemplate {
				orig = strings.TrimPrefix(uri, collisionScheme+rt.server+"/")
			}
			return rt.server, orig, true
		}
	}
	return "", "", false
}

// served returns the URI under which a server's resource is served.
func (t *offerTable) served(server, uri string) string {
	if s, ok := t.exposed[[2]string{server, uri}]; ok {
		return s
	}
	for _, rt := range t.templates {
		if rt.server == server && rt.orig != rt.template.URITemplate {
			if u := collisionScheme + server + "/" + uri; rt.match.Regexp().MatchString(u) {
				return u
			}
		}
	}
	return uri
}

// updateOffers makes tbl the offers every session is served.
func (s *Server) updateOffers(offers []upstream.Offer) {
	tbl, bad := newOfferTable(offers)
	for _, err := range bad {
		s.logger.Warn("a server's offer cannot be served", "error", err)
	}
	tbl.skills = s.up.HasSkills()
	s.offers.Store(tbl)
	if tbl.skills {
		s.declareSkills()
	}
	s.mu.Lock()
	xs := make([]*exposure, 0, len(s.sessions))
	for _, x := range s.sessions {
		xs = append(xs, x)
	}
	s.mu.Unlock()
	for _, x := range xs {
		s.syncOffers(x, tbl)
	}
}

// syncOffers makes an mcp.Server serve what tbl holds; the SDK tells its
// sessions (prompts or resources list_changed).
func (s *Server) syncOffers(x *exposure, tbl *offerTable) {
	s.mu.Lock()
	defer s.mu.Unlock()
	want := map[string]string{}
	def := func(v any) string { b, _ := json.Marshal(v); return string(b) }
	for name, p := range tbl.prompts {
		want["p\x00"+name] = def(p)
	}
	for uri, r := range tbl.resources {
		want["r\x00"+uri] = def(r.resource) + r.server
	}
	for _, rt := range tbl.templates {
		want["t\x00"+rt.template.URITemplate] = def(rt.template) + rt.server
	}
	if tbl.skills {
		want["t\x00"+skillTemplate] = "skills"
	}
	var prompts, resources, templates []string
	for k := range x.offered {
		if _, ok := want[k]; !ok {
			kind, name, _ := strings.Cut(k, "\x00")
			switch kind {
			case "p":
				prompts = append(prompts, name)
			case "r":
				resources = append(resources, name)
			case "t":
				templates = append(templates, name)
			}
			delete(x.offered, k)
		}
	}
	x.server.RemovePrompts(prompts...)
	x.server.RemoveResources(resources...)
	x.server.RemoveResourceTemplates(templates...)
	for k, v := range want {
		if x.offered[k] == v {
			continue
		}
		kind, name, _ := strings.Cut(k, "\x00")
		switch kind {
		case "p":
			p := tbl.prompts[name]
			x.server.AddPrompt(&p.prompt, s.getPrompt)
		case "r":
			r := tbl.resources[name]
			x.server.AddResource(&r.resource, s.readResource)
		case "t":
			if name == skillTemplate && v == "skills" {
				x.server.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: skillTemplate, Name: upstream.SkillsExtension,
					Description: "The files of the servers' skills (skills/list names them)"}, s.readSkillFile)
			}
			for _, rt := range tbl.templates {
				if rt.template.URITemplate == name {
					x.server.AddResourceTemplate(&rt.template, s.readResource)
				}
			}
		}
		x.offered[k] = v
	}
}

// forCaller returns the context of a request to a server made for the
// session of req.
func forCaller(ctx context.Context, ss *mcp.ServerSession, token any) context.Context {
	if ss == nil {
		return ctx
	}
	return upstream.WithClient(ctx, ss, token)
}

func (s *Server) getPrompt(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
	p, ok := s.offers.Load().prompts[req.Params.Name]
	if !ok {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown prompt %s", quoteClipped(req.Params.Name))}
	}
	params := *req.Params
	params.Name = p.name
	ctx = forCaller(ctx, req.Session, req.Params.GetProgressToken())
	args, _ := json.Marshal(req.Params.Arguments)
	if err := s.up.Offered(ctx, "prompt", p.server, req.Params.Name, args); err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("prompt %s: %v", quoteClipped(req.Params.Name), err)}
	}
	var res *mcp.GetPromptResult
	err := s.up.Session(ctx, p.server, func(ctx context.Context, cs *mcp.ClientSession) error {
		var err error
		res, err = cs.GetPrompt(ctx, &params)
		return err
	})
	s.up.Secrets().CutPrompt(res)
	return res, passOn(err)
}

func (s *Server) readResource(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	server, orig, ok := s.offers.Load().owner(req.Params.URI)
	if !ok {
		return nil, mcp.ResourceNotFoundError(req.Params.URI)
	}
	params := *req.Params
	params.URI = orig
	ctx = forCaller(ctx, req.Session, req.Params.GetProgressToken())
	if err := s.up.Offered(ctx, "read", server, req.Params.URI, nil); err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("resource %s: %v", quoteClipped(req.Params.URI), err)}
	}
	var res *mcp.ReadResourceResult
	if isApp(orig) {
		// The copy the lock file trusts, not whatever the server says
		// now (see upstream.Scope.App).
		app, err := s.up.App(server, orig)
		if err != nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("resource %s: %v", quoteClipped(req.Params.URI), err)}
		}
		res = cloneRead(app)
	} else {
		err := s.up.Session(ctx, server, func(ctx context.Context, cs *mcp.ClientSession) error {
			var err error
			res, err = cs.ReadResource(ctx, &params)
			return err
		})
		if err != nil {
			return nil, passOn(err)
		}
	}
	s.up.Secrets().CutResource(res)
	for _, c := range res.Contents {
		if c != nil && c.URI == orig {
			c.URI = req.Params.URI
		}
	}
	return res, nil
}

// cloneRead copies a read result, so that what is rewritten for one
// answer is not the pool's copy.
func cloneRead(r *mcp.ReadResourceResult) *mcp.ReadResourceResult {
	out := &mcp.ReadResourceResult{Meta: r.Meta}
	for _, c := range r.Contents {
		if c != nil {
			cc := *c
			out.Contents = append(out.Contents, &cc)
		}
	}
	return out
}

func (s *Server) complete(ctx context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
	tbl := s.offers.Load()
	params := *req.Params
	ref := *req.Params.Ref
	var server string
	switch ref.Type {
	case "ref/prompt":
		p, ok := tbl.prompts[ref.Name]
		if !ok {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown prompt %s", quoteClipped(ref.Name))}
		}
		server, ref.Name = p.server, p.name
	case "ref/resource":
		for _, rt := range tbl.templates {
			if rt.template.URITemplate == ref.URI {
				server, ref.URI = rt.server, rt.orig
			}
		}
		if server == "" {
			var ok bool
			if server, ref.URI, ok = tbl.owner(ref.URI); !ok {
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("no resource or template %s", quoteClipped(req.Params.Ref.URI))}
			}
		}
	default:
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown reference type %s", quoteClipped(ref.Type))}
	}
	params.Ref = &ref
	var res *mcp.CompleteResult
	err := s.up.Session(forCaller(ctx, req.Session, nil), server, func(ctx context.Context, cs *mcp.ClientSession) error {
		var err error
		res, err = cs.Complete(ctx, &params)
		return err
	})
	return res, passOn(err)
}

// passOn returns a server's error as the gateway's answer: a JSON-RPC
// error keeps its code and message (a prompt's missing argument is the
// client's to fix); anything else is an internal error that says which
// server failed.
//
// maxErrorText bounds the text of an error passed on: a server can write a
// megabyte.
const maxErrorText = 10_000

func passOn(err error) error {
	if err == nil {
		return nil
	}
	// err's text has had secrets removed; the error it wraps has not, so
	// only its code is taken from it.
	var rpc *jsonrpc.Error
	if errors.As(err, &rpc) {
		return &jsonrpc.Error{Code: rpc.Code, Message: cut(err.Error(), maxErrorText)}
	}
	return err
}

// skillFile reports whether a resource URI (or template) of a skills
// server is a skill's: skill://, or under the root of a skill it listed.
func skillFile(uri string, roots []string) bool {
	if strings.HasPrefix(strings.ToLower(uri), "skill://") {
		return true
	}
	for _, r := range roots {
		if uri == r || strings.HasPrefix(uri, strings.TrimSuffix(r, "/")+"/") {
			return true
		}
	}
	return false
}
