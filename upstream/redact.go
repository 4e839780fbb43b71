package upstream

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Redacted replaces a secret in what toolshelf prints, logs or serves.
const Redacted = "[redacted]"

// minSecret is the shortest configured value taken for a secret: shorter
// values ("1", "true", "dev") are settings, and hiding them would hide
// words of every message.
const minSecret = 6

// A Redactor removes secrets from text: the values a server's
// configuration holds (see config.ServerConfig.SecretValues), credentials in any URL,
// and values of well-known secret shapes (GitHub, OpenAI, Slack and AWS
// keys, JSON web tokens, "token=…", "Bearer …"). A server's stderr, its
// errors and its status pass through one before anyone sees them.
type Redactor struct {
	secrets []string // longest first, so that a secret containing another goes whole
	// literal are the secrets and their encoded forms, longest first;
	// skeletons the letters and digits of the long ones, and their
	// reverse (see cutTexts).
	literal   []string
	skeletons []string
	// literalSet and skeletonSet find them in one pass each.
	literalSet, skeletonSet patterns
	// shortest is the length of the shortest of them: a decoded view
	// shorter cannot hold one, and is not made.
	shortest int
}

// NewRedactor returns a redactor of the given secrets (and the shapes
// every redactor knows).
func NewRedactor(secrets ...string) *Redactor {
	r := &Redactor{}
	for _, s := range secrets {
		s = strings.TrimSpace(s)
		if len(s) >= minSecret && !slices.Contains(r.secrets, s) {
			r.secrets = append(r.secrets, s)
		}
	}
	slices.SortFunc(r.secrets, func(a, b string) int { return len(b) - len(a) })
	for _, s := range r.secrets {
		r.literal = append(r.literal, s)
		r.literal = append(r.literal, forms(s)...)
		if sk := skeleton(s); len(sk) >= minSkeleton {
			rev := slices.Clone(sk)
			slices.Reverse(rev)
			r.skeletons = append(r.skeletons, string(sk), string(rev))
		}
	}
	byLength := func(a, b string) int { return len(b) - len(a) }
	slices.SortFunc(r.literal, byLength)
	r.literal = slices.Compact(r.literal)
	slices.SortFunc(r.skeletons, byLength)
	r.skeletons = slices.Compact(r.skeletons)
	r.literalSet, r.skeletonSet = newPatterns(r.literal), newPatterns(r.skeletons)
	if n := len(r.literal); n > 0 {
		r.shortest = len(r.literal[n-1])
	}
	if n := len(r.skeletons); n > 0 {
		r.shortest = min(r.shortest, len(r.skeletons[n-1]))
	}
	return r
}

var (
	urlPattern    = regexp.MustCompile(`[a-zA-Z][a-zA-Z0-9+.-]*://[^\s"'<>]+`)
	secretShapes  = regexp.MustCompile(`\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}|sk-[A-Za-z0-9_-]{20,}|xox[abprs]-[A-Za-z0-9-]{10,}|AKIA[0-9A-Z]{16}|eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,})`)
	secretAssigns = regexp.MustCompile(`(?i)\b((?:bearer|basic)\s+|(?:access[_-]?token|api[_-]?key|apikey|auth[_-]?token|client[_-]?secret|password|passwd|secret|token)["']?\s*[:=]\s*["']?)([^\s"',;&]{4,})`)
)

// Redact returns s without the secrets it holds.
func (r *Redactor) Redact(s string) string {
	s = r.CutText(s)
	s = urlPattern.ReplaceAllStringFunc(s, redactURL)
	s = secretShapes.ReplaceAllString(s, Redacted)
	return secretAssigns.ReplaceAllString(s, "${1}"+Redacted)
}

// redactURL hides a URL's password and query values, keeping the rest:
// which host failed is worth knowing.
func redactURL(match string) string {
	// Punctuation that ends a sentence is not the URL's.
	raw := strings.TrimRight(match, ".,:;!?)")
	tail := match[len(raw):]
	u, err := url.Parse(raw)
	if err != nil {
		return match
	}
	changed := false
	if _, ok := u.User.Password(); ok {
		u.User = url.UserPassword(u.User.Username(), "x")
		changed = true
	}
	if u.RawQuery != "" {
		q := u.Query()
		for k := range q {
			q[k] = []string{"x"}
		}
		u.RawQuery = q.Encode()
		changed = true
	}
	if !changed {
		return match
	}
	return strings.NewReplacer(":x@", ":"+Redacted+"@", "=x", "="+Redacted).Replace(u.String()) + tail
}

// redactingHandler passes log records on with their message and string
// and error attributes redacted.
type redactingHandler struct {
	slog.Handler
	r func() *Redactor // the pool's current redactor (see Pool.Reconfigure)
}

func (h *redactingHandler) Handle(ctx context.Context, rec slog.Record) error {
	out := slog.NewRecord(rec.Time, rec.Level, h.r().Redact(rec.Message), rec.PC)
	rec.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(h.attr(a))
		return true
	})
	return h.Handler.Handle(ctx, out)
}

func (h *redactingHandler) attr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		return slog.String(a.Key, h.r().Redact(v.String()))
	case slog.KindAny:
		if err, ok := v.Any().(error); ok {
			return slog.String(a.Key, h.r().Redact(err.Error()))
		}
	case slog.KindGroup:
		attrs := v.Group()
		red := make([]any, len(attrs))
		for i, g := range attrs {
			red[i] = h.attr(g)
		}
		return slog.Group(a.Key, red...)
	}
	return a
}

func (h *redactingHandler) WithAttrs(as []slog.Attr) slog.Handler {
	red := make([]slog.Attr, len(as))
	for i, a := range as {
		red[i] = h.attr(a)
	}
	return &redactingHandler{h.Handler.WithAttrs(red), h.r}
}

func (h *redactingHandler) WithGroup(name string) slog.Handler {
	return &redactingHandler{h.Handler.WithGroup(name), h.r}
}

// cut replaces the redactor's secrets in s, and nothing else: for what
// a tool returns, where URLs and "token=" are the tool's business.
func (r *Redactor) cut(s string) (string, bool) {
	out := r.cutTexts([]string{s})
	return out[0], out[0] != s
}

// CutText removes the redactor's secrets from a text a client will read,
// in the forms cutTexts knows.
func (r *Redactor) CutText(s string) string {
	out, _ := r.cut(s)
	return out
}

// cutResult removes the redactor's secrets from a tool's result, in place:
// its text and embedded resources' text, read as one text so that a
// secret split between two blocks is cut from both, and its structured
// content.
func (r *Redactor) cutResult(res *mcp.CallToolResult) {
	if r == nil || len(r.secrets) == 0 || res == nil {
		return
	}
	var texts []*string
	for i, c := range res.Content {
		switch c := c.(type) {
		case *mcp.TextContent:
			texts = append(texts, &c.Text)
		case *mcp.EmbeddedResource:
			if c.Resource != nil {
				texts = append(texts, &c.Resource.Text)
				if r.holdsBytes(c.Resource.Blob) {
					c.Resource.Blob = nil
					c.Resource.Text = Redacted
				}
			}
		case *mcp.ImageContent:
			if r.holdsBytes(c.Data) {
				res.Content[i] = &mcp.TextContent{Text: Redacted + " (an image that held a secret)"}
			}
		case *mcp.AudioContent:
			if r.holdsBytes(c.Data) {
				res.Content[i] = &mcp.TextContent{Text: Redacted + " (audio that held a secret)"}
			}
		}
	}
	r.cutAll(texts)
	res.StructuredContent = r.cutJSON(res.StructuredContent)
	r.cutRest(res)
}

// cutRest cuts the secrets from every other string of a result a client
// reads, known field or not: its _meta, each block's _meta and
// annotations, a resource link's URI, name, title and description, an
// embedded resource's URI and type (see cutFields).
func (r *Redactor) cutRest(res *mcp.CallToolResult) {
	ok := cutFields(r, res, func(res *mcp.CallToolResult) *mcp.CallToolResult {
		rest := &mcp.CallToolResult{Meta: res.Meta, IsError: res.IsError}
		for _, c := range res.Content {
			rest.Content = append(rest.Content, withoutBody(c))
		}
		return rest
	}, func(cut, orig *mcp.CallToolResult) bool {
		if len(cut.Content) != len(orig.Content) {
			return false
		}
		for i, c := range cut.Content {
			cut.Content[i] = withBody(c, orig.Content[i])
		}
		orig.Meta, orig.Content = cut.Meta, cut.Content
		return true
	})
	if !ok {
		*res = *secretResult()
	}
}

// cutFields cuts the secrets from every string of v's JSON, at any depth,
// but the bodies (texts, data) cut already: blank makes a copy without
// them, which is cut, and put puts the cut fields back into v with its
// bodies; ok is false when the cut copy no longer reads (v must then not
// be sent as it is).
func cutFields[T any](r *Redactor, v *T, blank func(*T) *T, put func(cut, v *T) bool) (ok bool) {
	b, err := json.Marshal(blank(v))
	if err != nil {
		return false
	}
	cut := r.CutRaw(b)
	if string(cut) == string(b) {
		return true
	}
	var out T
	if json.Unmarshal(cut, &out) != nil {
		return false
	}
	return put(&out, v)
}

// secretResult is what a client gets instead of a result that held a
// secret where it could not be cut out.
func secretResult() *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: Redacted + " (the result held a secret where it could not be cut out)"}}}
}

// withoutBody is a copy of a content block without its text or data,
// which cutResult cut already.
func withoutBody(c mcp.Content) mcp.Content {
	switch c := c.(type) {
	case *mcp.TextContent:
		cp := *c
		cp.Text = ""
		return &cp
	case *mcp.ImageContent:
		cp := *c
		cp.Data = nil
		return &cp
	case *mcp.AudioContent:
		cp := *c
		cp.Data = nil
		return &cp
	case *mcp.EmbeddedResource:
		cp := *c
		if c.Resource != nil {
			rc := *c.Resource
			rc.Text, rc.Blob = "", nil
			cp.Resource = &rc
		}
		return &cp
	}
	return c
}

// withBody puts back into a cut copy the text or data of the block it was
// made from.
func withBody(cut, from mcp.Content) mcp.Content {
	switch c := cut.(type) {
	case *mcp.TextContent:
		if f, ok := from.(*mcp.TextContent); ok {
			c.Text = f.Text
		}
	case *mcp.ImageContent:
		if f, ok := from.(*mcp.ImageContent); ok {
			c.Data = f.Data
		}
	case *mcp.AudioContent:
		if f, ok := from.(*mcp.AudioContent); ok {
			c.Data = f.Data
		}
	case *mcp.EmbeddedResource:
		if f, ok := from.(*mcp.EmbeddedResource); ok && c.Resource != nil && f.Resource != nil {
			c.Resource.Text, c.Resource.Blob = f.Resource.Text, f.Resource.Blob
		}
	}
	return cut
}

// holdsBytes reports whether binary data (an image, a blob) holds a
// secret: as it is, or in a decoded view of it read as text.
func (r *Redactor) holdsBytes(b []byte) bool {
	if r == nil || len(r.secrets) == 0 || len(b) == 0 {
		return false
	}
	s := string(b)
	out := r.cutTexts([]string{s})
	return out[0] != s
}

// CutPrompt removes the redactor's secrets from a prompt, in place.
func (r *Redactor) CutPrompt(res *mcp.GetPromptResult) {
	if r == nil || len(r.secrets) == 0 || res == nil {
		return
	}
	texts := []*string{&res.Description}
	for _, m := range res.Messages {
		if m == nil {
			continue
		}
		switch c := m.Content.(type) {
		case *mcp.TextContent:
			texts = append(texts, &c.Text)
		case *mcp.EmbeddedResource:
			if c.Resource != nil {
				texts = append(texts, &c.Resource.Text)
			}
		}
	}
	r.cutAll(texts)
	// Every other string (a prompt is small: read whole again).
	if !r.CutParams(res) {
		*res = mcp.GetPromptResult{Description: Redacted + " (the prompt held a secret where it could not be cut out)"}
	}
}

// CutResource removes the redactor's secrets from a resource's contents,
// in place.
func (r *Redactor) CutResource(res *mcp.ReadResourceResult) {
	if r == nil || len(r.secrets) == 0 || res == nil {
		return
	}
	var texts []*string
	for _, c := range res.Contents {
		if c != nil {
			texts = append(texts, &c.Text)
			if r.holdsBytes(c.Blob) {
				c.Blob, c.Text = nil, Redacted
			}
		}
	}
	r.cutAll(texts)
	ok := cutFields(r, res, func(res *mcp.ReadResourceResult) *mcp.ReadResourceResult {
		rest := &mcp.ReadResourceResult{Meta: res.Meta}
		for _, c := range res.Contents {
			if c != nil {
				cp := *c
				cp.Text, cp.Blob = "", nil
				c = &cp
			}
			rest.Contents = append(rest.Contents, c)
		}
		return rest
	}, func(cut, res *mcp.ReadResourceResult) bool {
		if len(cut.Contents) != len(res.Contents) {
			return false
		}
		for i, c := range cut.Contents {
			if c != nil && res.Contents[i] != nil {
				c.Text, c.Blob = res.Contents[i].Text, res.Contents[i].Blob
			}
		}
		res.Meta, res.Contents = cut.Meta, cut.Contents
		return true
	})
	if !ok {
		*res = mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: "redacted:", Text: Redacted + " (the resource held a secret where it could not be cut out)"}}}
	}
}

// cutAll cuts the texts in place, as one.
func (r *Redactor) cutAll(texts []*string) {
	in := make([]string, len(texts))
	for i, t := range texts {
		in[i] = *t
	}
	for i, t := range r.cutTexts(in) {
		*texts[i] = t
	}
}

// cutJSON cuts a structured value's secrets: never the secret, even when
// the cut text no longer parses.
func (r *Redactor) cutJSON(v any) any {
	if v == nil {
		return nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return v
	}
	raw := r.CutRaw(b)
	if string(raw) == string(b) {
		return v
	}
	var out any
	if json.Unmarshal(raw, &out) == nil {
		return out
	}
	return nil
}

// CutRaw cuts the secrets from a JSON message: every string in it (its
// keys too) is cut as a text is, in every form cutTexts finds, so that
// the message stays JSON; one that does not parse is cut as text.
func (r *Redactor) CutRaw(raw json.RawMessage) json.RawMessage {
	if r == nil || len(r.secrets) == 0 || len(raw) == 0 {
		return raw
	}
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil {
		return json.RawMessage(r.CutText(string(raw)))
	}
	changed := false
	var walk func(v any) any
	walk = func(v any) any {
		switch v := v.(type) {
		case string:
			if out, cut := r.cut(v); cut {
				changed = true
				return out
			}
		case []any:
			for i := range v {
				v[i] = walk(v[i])
			}
		case map[string]any:
			for k, x := range v {
				x = walk(x)
				if nk, cut := r.cut(k); cut {
					changed = true
					delete(v, k)
					k = nk
				}
				v[k] = x
			}
		}
		return v
	}
	v = walk(v)
	if !changed {
		return raw
	}
	out, err := json.Marshal(v)
	if err != nil {
		return json.RawMessage(`"` + Redacted + `"`)
	}
	return out
}

// CutParams cuts the secrets from what a server sends a client beyond a
// result (a log message, a progress message, an elicitation's or a
// sampling request's texts), in place, through its JSON: ok is false
// when the cut message no longer fits p, which must then not be sent.
func (r *Redactor) CutParams(p any) (ok bool) {
	if r == nil || len(r.secrets) == 0 || p == nil {
		return true
	}
	b, err := json.Marshal(p)
	if err != nil {
		return false
	}
	raw := r.CutRaw(b)
	if string(raw) == string(b) {
		return true
	}
	return json.Unmarshal(raw, p) == nil
}
