package upstream

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolshelf/toolshelf/catalog"
	"github.com/toolshelf/toolshelf/pin"
)

// Skills (the io.modelcontextprotocol/skills extension, SEP-2640): a
// server serves directories of instructions, each a SKILL.md and its
// files, as resources, and lists them with skills/list: each entry the
// SKILL.md's frontmatter as written and every file's sha256 digest and
// size. The pool lists a server's skills with its other offers, judges
// each against the lock file as it judges tools (a skill is pinned by its
// frontmatter and its files' digests, so a changed SKILL.md or a file
// added is held until approved), and serves the trusted ones under the
// server's name: skill://SERVER/<the server's skill path>/<file>. A file
// is served only when it is listed in its trusted skill and its bytes
// have the listed digest and size.

// SkillsExtension is the extension's identifier.
const SkillsExtension = "io.modelcontextprotocol/skills"

// Limits of one skill, as the extension fixes them.
const (
	maxSkillFiles = 512
	maxSkillBytes = 16 << 20
)

// Skill is one skill as its server lists it.
type Skill struct {
	// URI is the server's URI of the skill's SKILL.md.
	URI string `json:"uri"`
	// Frontmatter is SKILL.md's frontmatter as JSON, verbatim.
	Frontmatter json.RawMessage `json:"frontmatter"`
	Files       []SkillFile     `json:"resources"`
	// Name and Description are the frontmatter's.
	Name        string `json:"-"`
	Description string `json:"-"`
	// body is SKILL.md as read when the skill was listed (and its digest
	// checked), for the poisoning check; read says it was.
	body string
	read bool
}

// SkillFile is a file of a skill: its URI, digest ("sha256:HEX") and size.
type SkillFile struct {
	URI    string `json:"uri"`
	Digest string `json:"digest"`
	Size   int64  `json:"size"`
}

// UnmarshalJSON reads an entry and the frontmatter's name and description.
func (s *Skill) UnmarshalJSON(b []byte) error {
	type plain Skill
	if err := json.Unmarshal(b, (*plain)(s)); err != nil {
		return err
	}
	var fm struct {
		Name        string `json:"name"`
		Description string `json:"description"`
	}
	if err := json.Unmarshal(s.Frontmatter, &fm); err != nil {
		return fmt.Errorf("frontmatter: %w", err)
	}
	s.Name, s.Description = fm.Name, fm.Description
	return nil
}

// Root is the skill's folder URI: its SKILL.md's without "/SKILL.md".
func (s *Skill) Root() string { return strings.TrimSuffix(s.URI, "/SKILL.md") }

// File returns the listed file at uri.
func (s *Skill) File(uri string) (SkillFile, bool) {
	for _, f := range s.Files {
		if f.URI == uri {
			return f, true
		}
	}
	return SkillFile{}, false
}

// AllowedTools is the frontmatter's allowed-tools, as written: a request
// for tools, which toolshelf never grants (rules decide every call).
func (s *Skill) AllowedTools() []string {
	var fm struct {
		Allowed any `json:"allowed-tools"`
	}
	json.Unmarshal(s.Frontmatter, &fm)
	switch v := fm.Allowed.(type) {
	case string:
		return strings.Fields(v)
	case []any:
		var out []string
		for _, t := range v {
			if s, ok := t.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

// check says what makes an entry one the extension forbids a host to
// load, or one toolshelf cannot pin: nil for a good one.
func (s *Skill) check() error {
	if !strings.HasPrefix(s.URI, "skill://") || !strings.HasSuffix(s.URI, "/SKILL.md") {
		return fmt.Errorf("skill %s: toolshelf serves skills whose URI is skill://PATH/SKILL.md", strconv.Quote(s.URI))
	}
	root := s.Root()
	if s.Name == "" || s.Description == "" {
		return fmt.Errorf("skill %s: its frontmatter has no name or no description", strconv.Quote(s.URI))
	}
	if path.Base(root) != s.Name || root == "skill://"+"" || strings.Contains(root[len("skill://"):], "..") {
		return fmt.Errorf("skill %s: the last segment of its path is not its name %s", strconv.Quote(s.URI), strconv.Quote(s.Name))
	}
	if len(s.Files) == 0 {
		return fmt.Errorf("skill %s: its files are \"dynamic\" or not listed, so toolshelf cannot pin them; it is not served", strconv.Quote(s.URI))
	}
	if len(s.Files) > maxSkillFiles {
		return fmt.Errorf("skill %s: %d files, more than the %d a skill may have", strconv.Quote(s.URI), len(s.Files), maxSkillFiles)
	}
	var total int64
	seen := map[string]bool{}
	for _, f := range s.Files {
		if !strings.HasPrefix(f.URI, root+"/") || strings.Contains(f.URI[len(root):], "/../") || strings.HasSuffix(f.URI, "/..") {
			return fmt.Errorf("skill %s: file %s is not in the skill's folder", strconv.Quote(s.URI), strconv.Quote(f.URI))
		}
		if seen[f.URI] {
			return fmt.Errorf("skill %s: file %s is listed twice", strconv.Quote(s.URI), strconv.Quote(f.URI))
		}
		seen[f.URI] = true
		if hexPart, ok := strings.CutPrefix(f.Digest, "sha256:"); !ok || len(hexPart) != 64 || strings.ToLower(hexPart) != hexPart {
			return fmt.Errorf("skill %s: file %s has no sha256:HEX digest", strconv.Quote(s.URI), strconv.Quote(f.URI))
		} else if _, err := hex.DecodeString(hexPart); err != nil {
			return fmt.Errorf("skill %s: file %s has no sha256:HEX digest", strconv.Quote(s.URI), strconv.Quote(f.URI))
		}
		if f.Size < 0 {
			return fmt.Errorf("skill %s: file %s has a negative size", strconv.Quote(s.URI), strconv.Quote(f.URI))
		}
		total += f.Size
	}
	if !seen[s.URI] {
		return fmt.Errorf("skill %s: its files do not list its SKILL.md", strconv.Quote(s.URI))
	}
	if total > maxSkillBytes {
		return fmt.Errorf("skill %s: %d bytes, more than the %d a skill may have", strconv.Quote(s.URI), total, maxSkillBytes)
	}
	return nil
}

// offersSkills reports whether the server's capabilities declare the
// skills extension.
func offersSkills(caps *mcp.ServerCapabilities) bool {
	if caps == nil {
		return false
	}
	_, ok := caps.Extensions[SkillsExtension]
	return ok
}

// readsSkillDirectories reports whether the server's skills extension
// says directoryRead: it serves resources/directory/read.
func readsSkillDirectories(caps *mcp.ServerCapabilities) bool {
	settings, _ := caps.Extensions[SkillsExtension].(map[string]any)
	read, _ := settings["directoryRead"].(bool)
	return read
}

// listSkills pages through the server's skills/list. Entries the
// extension calls invalid, or that toolshelf cannot pin, are left out and
// reported in err; the rest are kept.
//
// roots are the roots of every entry listed that names a URI, kept or
// left out: no file under one is served but as a skill's.
func (c *conn) listSkills(ctx context.Context) ([]Skill, []string, error) {
	var out []Skill
	var roots []string
	var errs []error
	seen := map[string]bool{}
	cursor := ""
	for range maxPages {
		params := map[string]any{}
		if cursor != "" {
			params["cursor"] = cursor
		}
		raw, err := c.request(ctx, "skills/list", params)
		if err != nil {
			if rpc := (*jsonrpc.Error)(nil); errors.As(err, &rpc) && rpc.Code == jsonrpc.CodeMethodNotFound {
				return out, roots, errors.Join(errs...)
			}
			return out, roots, errors.Join(append(errs, fmt.Errorf("skills/list: %w", err))...)
		}
		var page struct {
			Skills     []json.RawMessage `json:"skills"`
			NextCursor string            `json:"nextCursor"`
		}
		if err := json.Unmarshal(raw, &page); err != nil {
			return out, roots, errors.Join(append(errs, fmt.Errorf("skills/list: not a list of skills: %v", err))...)
		}
		for _, e := range page.Skills {
			var named struct {
				URI string `json:"uri"`
			}
			if json.Unmarshal(e, &named) == nil && named.URI != "" && len(roots) < maxOffered {
				roots = append(roots, strings.TrimSuffix(named.URI, "/SKILL.md"))
			}
			var s Skill
			if err := json.Unmarshal(e, &s); err != nil {
				errs = append(errs, fmt.Errorf("skills/list: an entry that is not a skill: %v", err))
				continue
			}
			if err := s.check(); err != nil {
				errs = append(errs, err)
				continue
			}
			if seen[s.URI] {
				continue
			}
			seen[s.URI] = true
			if len(out) == maxOffered {
				return out, roots, errors.Join(append(errs, fmt.Errorf("skills/list: more than %d skills; the rest are left out", maxOffered))...)
			}
			out = append(out, s)
		}
		if page.NextCursor == "" || page.NextCursor == cursor {
			break
		}
		cursor = page.NextCursor
	}
	slices.SortFunc(out, func(a, b Skill) int { return strings.Compare(a.URI, b.URI) })
	for i := range min(len(out), maxSkillsRead) {
		if err := c.readSkillBody(ctx, &out[i]); err != nil {
			errs = append(errs, err)
		}
	}
	out = slices.DeleteFunc(out, func(s Skill) bool { return s.body == "" && s.read })
	return out, roots, errors.Join(errs...)
}

// maxSkillsRead bounds the SKILL.md files read when a server lists its
// skills; a skill past it is not checked for poisoning, and so is held
// for a person when it is new or changed (skillRisk).
const maxSkillsRead = 1000

// readSkillBody reads a skill's SKILL.md for the poisoning check. A read
// whose bytes are not the listed ones leaves the skill out (its entry and
// its content disagree: marked read with no body); one that fails leaves
// it unread.
func (c *conn) readSkillBody(ctx context.Context, s *Skill) error {
	res, err := c.session.ReadResource(ctx, &mcp.ReadResourceParams{URI: s.URI})
	if err != nil {
		return fmt.Errorf("skill %s: reading its SKILL.md: %w", strconv.Quote(s.URI), err)
	}
	f, _ := s.File(s.URI)
	if err := matchesPin(res, f); err != nil {
		s.read, s.body = true, ""
		return fmt.Errorf("skill %s: its SKILL.md is not the file its entry lists (%v); left out", strconv.Quote(s.URI), err)
	}
	s.read, s.body = true, bodyOf(res.Contents[0])
	return nil
}

// bodyOf is a read content's bytes as text.
func bodyOf(c *mcp.ResourceContents) string {
	if c.Blob != nil {
		return string(c.Blob)
	}
	return c.Text
}

// matchesPin checks that a read returned one content whose bytes have
// the file's digest and size.
func matchesPin(res *mcp.ReadResourceResult, f SkillFile) error {
	if res == nil || len(res.Contents) != 1 || res.Contents[0] == nil {
		return errors.New("the read returned other than one content")
	}
	body := bodyOf(res.Contents[0])
	sum := sha256.Sum256([]byte(body))
	if got := "sha256:" + hex.EncodeToString(sum[:]); int64(len(body)) != f.Size || got != f.Digest {
		return fmt.Errorf("%d bytes, %s; listed %d bytes, %s", len(body), got, f.Size, f.Digest)
	}
	return nil
}

// request sends a request the go-sdk has no method for, with the _meta a
// server of MCP 2026-07-28 needs on every request.
func (c *conn) request(ctx context.Context, method string, params map[string]any) (json.RawMessage, error) {
	if c.tap == nil {
		return nil, fmt.Errorf("%s: the connection cannot send it", method)
	}
	if v := c.version.Load(); v != nil && *v >= "2026-07-28" {
		params["_meta"] = map[string]any{mcp.MetaKeyProtocolVersion: *v, mcp.MetaKeyClientInfo: &mcp.Implementation{Name: ClientName},
			mcp.MetaKeyClientCapabilities: map[string]any{}}
	}
	return c.tap.call(ctx, method, params)
}

// skillDefinition is what the lock file pins of a skill: its URI, its
// frontmatter and its files' digests and sizes, in the form of a tool's
// definition (so that tools diff shows a change field by field).
func skillDefinition(s *Skill) (pin.Definition, error) {
	raw, err := json.Marshal(map[string]any{"name": s.URI, "description": s.Description,
		"_meta": map[string]any{SkillsExtension: map[string]any{"frontmatter": s.Frontmatter, "resources": s.Files}}})
	if err != nil {
		return nil, err
	}
	return pin.Canonical(raw)
}

// skillRisk is the poisoning check of a skill, as of a tool's
// definition: its frontmatter and its SKILL.md, which is what a model
// reads of it. A skill whose SKILL.md was not read cannot be checked, and
// is held for a person.
func skillRisk(s *Skill) func() string {
	return func() string {
		if !s.read {
			return "its SKILL.md could not be read for the check of what it tells the model: a person reviews it"
		}
		raw, _ := json.Marshal(map[string]any{"name": s.Name, "description": s.Description, "frontmatter": s.Frontmatter, "instructions": s.body})
		e := catalog.Entry{Name: s.Name, Tool: s.Name, Description: s.Description, Raw: raw}
		return e.Poisoning()
	}
}

// judgeSkills judges a server's skills against the lock file, as
// judgeApps does its apps. Called by publish, with pubMu held.
func (p *Pool) judgeSkills(s *server, skills []Skill) (trusted []Skill, held []Quarantined) {
	if p.opts.Pins == nil {
		return skills, nil
	}
	for i := range skills {
		sk := &skills[i]
		def, err := skillDefinition(sk)
		if err != nil {
			continue
		}
		v := p.judgeTool(s, sk.URI, def, skillRisk(sk))
		if v.OK() {
			trusted = append(trusted, *sk)
			continue
		}
		held = append(held, Quarantined{Server: s.cfg.Name, Tool: sk.URI, Name: SkillURI(s.cfg.Name, sk.URI),
			Status: v.Status, Why: "a skill: " + strings.Replace(v.Why, "its definition", "its frontmatter or files", 1), Pinned: v.Pinned, Current: def})
	}
	return trusted, held
}

// SkillURI is the URI the gateway serves a server's skill URI under:
// the server's name as the first segment of the skill's path.
func SkillURI(server, uri string) string {
	return "skill://" + server + "/" + strings.TrimPrefix(uri, "skill://")
}

// ServedSkill is a server's trusted skill as the gateway serves it.
type ServedSkill struct {
	Server string
	Skill  // URIs as the gateway serves them (SkillURI)
	// Orig is the server's URI of the SKILL.md.
	Orig string
}

// served is sk with the gateway's URIs.
func servedSkill(server string, sk Skill) ServedSkill {
	out := ServedSkill{Server: server, Skill: sk, Orig: sk.URI}
	out.URI = SkillURI(server, sk.URI)
	out.Files = make([]SkillFile, len(sk.Files))
	for i, f := range sk.Files {
		f.URI = SkillURI(server, f.URI)
		out.Files[i] = f
	}
	return out
}

// ErrSkillUnknown is a skill, or a file of one, that no trusted skill of
// the profile's servers lists.
var ErrSkillUnknown = errors.New("no skill served here lists it")

// Skills returns the trusted skills of the scope's servers that the rules
// let its callers read, by URI.
func (sc *Scope) Skills(ctx context.Context) []ServedSkill {
	p := sc.pool
	p.pubMu.Lock()
	var out []ServedSkill
	for _, server := range slices.Sorted(maps.Keys(p.skills)) {
		if !sc.HasServer(server) {
			continue
		}
		for _, sk := range p.skills[server] {
			out = append(out, servedSkill(server, sk))
		}
	}
	p.pubMu.Unlock()
	return slices.DeleteFunc(out, func(s ServedSkill) bool {
		return sc.Offered(ctx, "skill", s.Server, s.Orig, nil) != nil
	})
}

// Skill returns the trusted skill whose SKILL.md the gateway serves at
// uri, if the rules let the caller read it: ErrSkillUnknown, or the
// rules' refusal.
func (sc *Scope) Skill(ctx context.Context, uri string) (ServedSkill, error) {
	for _, s := range sc.SkillIndex() {
		if s.URI == uri {
			if err := sc.Offered(ctx, "skill", s.Server, s.Orig, nil); err != nil {
				return ServedSkill{}, err
			}
			return s, nil
		}
	}
	return ServedSkill{}, ErrSkillUnknown
}

// SkillIndex is every trusted skill of the scope's servers, the rules
// not asked: for indexing. What is served of it is what Skill, Skills
// and ReadSkillFile let the caller have.
func (sc *Scope) SkillIndex() []ServedSkill {
	p := sc.pool
	p.pubMu.Lock()
	defer p.pubMu.Unlock()
	var out []ServedSkill
	for server, sks := range p.skills {
		if sc.HasServer(server) {
			for _, sk := range sks {
				out = append(out, servedSkill(server, sk))
			}
		}
	}
	return out
}

// ReadSkillFile reads a file of a trusted skill at the URI the gateway
// serves it under, from its server, and returns it only when its bytes
// have the digest and size the pinned skill lists: a file changed since,
// or one the skill does not list, is refused.
func (sc *Scope) ReadSkillFile(ctx context.Context, uri string) (*mcp.ReadResourceResult, error) {
	var owner ServedSkill
	var file SkillFile
	found := false
	for _, s := range sc.SkillIndex() {
		if f, ok := s.File(uri); ok {
			owner, file, found = s, f, true
			break
		}
	}
	if !found {
		return nil, ErrSkillUnknown
	}
	if err := sc.Offered(ctx, "skill", owner.Server, owner.Orig, nil); err != nil {
		return nil, err
	}
	orig := "skill://" + strings.TrimPrefix(uri, "skill://"+owner.Server+"/")
	var res *mcp.ReadResourceResult
	err := sc.pool.Session(ctx, owner.Server, func(ctx context.Context, cs *mcp.ClientSession) error {
		var err error
		res, err = cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: orig})
		return err
	})
	if err != nil {
		return nil, err
	}
	if err := matchesPin(res, file); err != nil {
		return nil, fmt.Errorf("%w: %s is not the file pinned with skill %s (%v): the skill changed since it was approved; it is served again once its server lists it anew and a person approves the change",
			ErrQuarantined, strconv.Quote(uri), strconv.Quote(owner.URI), err)
	}
	c := res.Contents[0]
	out := &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: c.MIMEType, Text: c.Text, Blob: c.Blob, Meta: c.Meta}}}
	return out, nil
}

// HasSkills reports whether a server of the scope has a trusted skill.
func (sc *Scope) HasSkills() bool {
	p := sc.pool
	p.pubMu.Lock()
	defer p.pubMu.Unlock()
	for server, sks := range p.skills {
		if len(sks) > 0 && sc.HasServer(server) {
			return true
		}
	}
	return false
}

// ReadsSkillDirectories reports whether a server of the scope with
// trusted skills reads their folders (resources/directory/read).
func (sc *Scope) ReadsSkillDirectories() bool {
	for _, s := range sc.pool.list() {
		if !sc.HasServer(s.cfg.Name) {
			continue
		}
		s.offers.mu.Lock()
		reads := s.offers.offer.SkillDirectories && len(s.offers.offer.Skills) > 0
		s.offers.mu.Unlock()
		if reads {
			return true
		}
	}
	return false
}

// SkillDirectory lists a folder of a trusted skill (the skill's root or a
// folder within it, at the URI the gateway serves it under), as its
// server lists it, keeping only what the pinned skill holds: its listed
// files, and folders that hold some. A file the server lists that the
// skill does not is left out: it was not pinned.
func (sc *Scope) SkillDirectory(ctx context.Context, uri, cursor string) (entries []*mcp.Resource, next string, err error) {
	uri = strings.TrimSuffix(uri, "/")
	var owner ServedSkill
	found := false
	for _, s := range sc.SkillIndex() {
		if uri == s.Root() || strings.HasPrefix(uri, s.Root()+"/") {
			owner, found = s, true
			break
		}
	}
	if !found {
		return nil, "", ErrSkillUnknown
	}
	if err := sc.Offered(ctx, "skill", owner.Server, owner.Orig, nil); err != nil {
		return nil, "", err
	}
	held := false
	for _, f := range owner.Files {
		held = held || strings.HasPrefix(f.URI, uri+"/")
	}
	if !held {
		return nil, "", fmt.Errorf("%w: %s holds no file of skill %s", ErrSkillUnknown, strconv.Quote(uri), strconv.Quote(owner.URI))
	}
	s, c, err := sc.pool.ready(ctx, owner.Server)
	if err != nil {
		return nil, "", err
	}
	if !s.offersSkillDirectories() {
		return nil, "", fmt.Errorf("server %s does not read its skills' folders", owner.Server)
	}
	prefix := "skill://" + owner.Server + "/"
	params := map[string]any{"uri": "skill://" + strings.TrimPrefix(uri, prefix)}
	if cursor != "" {
		params["cursor"] = cursor
	}
	raw, err := c.request(ctx, "resources/directory/read", params)
	if err != nil {
		return nil, "", err
	}
	var page struct {
		Resources  []*mcp.Resource `json:"resources"`
		NextCursor string          `json:"nextCursor"`
	}
	if err := json.Unmarshal(raw, &page); err != nil {
		return nil, "", fmt.Errorf("server %s answered resources/directory/read with something else: %v", owner.Server, err)
	}
	for _, r := range page.Resources {
		if r == nil || !strings.HasPrefix(r.URI, "skill://") {
			continue
		}
		r.URI = SkillURI(owner.Server, r.URI)
		if _, ok := owner.File(r.URI); ok {
			entries = append(entries, r)
			continue
		}
		for _, f := range owner.Files {
			if strings.HasPrefix(f.URI, r.URI+"/") { // a folder that holds pinned files
				entries = append(entries, r)
				break
			}
		}
	}
	return entries, page.NextCursor, nil
}

// offersSkillDirectories reports whether the server said directoryRead.
func (s *server) offersSkillDirectories() bool {
	s.offers.mu.Lock()
	defer s.offers.mu.Unlock()
	return s.offers.offer.SkillDirectories
}
