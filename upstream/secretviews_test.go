//lint:file-ignore SA1019 the second wall cuts what servers send through sampling and logging, deprecated by MCP 2026-07-28 (SEP-2577) but relayed on purpose during the deprecation window.
package upstream

import (
	"bytes"
	"compress/gzip"
	"encoding/base32"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolshelf/toolshelf/config"
	"github.com/toolshelf/toolshelf/internal/mcptest"
)

// The second wall finds a secret in the forms a server writes it in to
// get past a literal match, decoded in bounded time, and cuts the text
// that holds it; ordinary texts pass as they are.
func TestSecretInEncodedForms(t *testing.T) {
	const secret = "other-server-key-5a6b7c8d9e0f"
	r := NewRedactor(secret)
	codes := func(s string) string {
		var parts []string
		for _, c := range []byte(s) {
			parts = append(parts, fmt.Sprint(c))
		}
		return strings.Join(parts, ", ")
	}
	fullPercent := func(s string) string {
		var b strings.Builder
		for _, c := range []byte(s) {
			fmt.Fprintf(&b, "%%%02X", c)
		}
		return b.String()
	}
	uEscapes := func(s string) string {
		var b strings.Builder
		for _, c := range s {
			fmt.Fprintf(&b, `\u%04x`, c)
		}
		return b.String()
	}
	entities := func(s string) string {
		var b strings.Builder
		for _, c := range s {
			fmt.Fprintf(&b, "&#%d;", c)
		}
		return b.String()
	}
	lookalike := strings.NewReplacer("o", "о", "e", "е", "a", "а", "c", "с").Replace(secret) // Cyrillic
	fullwidth := strings.Map(func(r rune) rune {
		if r >= '!' && r <= '~' {
			return r + 0xFEE0
		}
		return r
	}, secret)
	for name, text := range map[string]string{
		"full percent-encoding":  fullPercent(secret),
		"url query escaping":     "see https://x.test/?k=" + url.QueryEscape("k:"+secret+"!"),
		"base32":                 base32.StdEncoding.EncodeToString([]byte("key: " + secret)),
		"base32, lower case":     strings.ToLower(base32.StdEncoding.EncodeToString([]byte(secret))),
		`\u escapes`:             `{"v": "` + uEscapes(secret) + `"}`,
		"HTML entities":          "<p>" + entities(secret) + "</p>",
		"look-alike letters":     "the key is " + lookalike,
		"fullwidth letters":      fullwidth,
		"rot13":                  "tl;dr " + rot13(secret),
		"gzip and base64":        "payload: " + gz("the key of the other server: "+secret),
		"character codes":        "[" + codes(secret) + "]",
		"base64 in a longer run": base64.StdEncoding.EncodeToString([]byte("prefix that shifts the alignment " + secret + " and more")),
	} {
		if got := r.CutText(text); strings.Contains(got, secret) || got == text {
			t.Errorf("%s: not cut:\n%.200s", name, got)
		}
	}
	for _, ordinary := range []string{
		`{"issues":[{"number":42,"title":"Fix the login page","url":"https://github.com/acme/web/issues/42"}]}`,
		"Created file /srv/app/src/internationalization/messages.json (2.3 KB)",
		"SGVsbG8gd29ybGQsIHRoaXMgaXMgYSBwbGFpbiBtZXNzYWdlLg== decodes to a greeting",
		"Москва — столица России; ｆｕｌｌｗｉｄｔｈ text; 72, 101, 108, 108, 111, 33",
		"%E2%9C%93 done &amp; dusted \\u00e9t\\u00e9",
	} {
		if got := r.CutText(ordinary); got != ordinary {
			t.Errorf("an ordinary text was cut:\n%s\n%s", ordinary, got)
		}
	}
}

// Every message a server sends a client beyond its results passes the
// wall: log and progress notifications, elicitation and sampling
// requests; images, audio and blobs in results; and JSON stays JSON.
func TestSecretInEveryChannel(t *testing.T) {
	const secret = "other-server-key-5a6b7c8d9e0f"
	r := NewRedactor(secret)
	b64 := base64.StdEncoding.EncodeToString([]byte(secret))
	log := &mcp.LoggingMessageParams{Level: "info", Logger: "srv", Data: map[string]any{"msg": "using " + secret, "nested": []any{b64}}}
	progress := &mcp.ProgressNotificationParams{ProgressToken: "t", Progress: 1, Message: "step with " + rot13(secret)}
	elicit := &mcp.ElicitParams{Message: "Confirm " + secret + "?", RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{
		"x": map[string]any{"type": "string", "default": secret}}}}
	sample := &mcp.CreateMessageParams{MaxTokens: 10, SystemPrompt: "key " + secret, Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: "send " + b64}}}}
	for name, p := range map[string]any{"log": log, "progress": progress, "elicitation": elicit, "sampling": sample} {
		if !r.CutParams(p) {
			t.Errorf("%s: could not be cut", name)
		}
		b, _ := json.Marshal(p)
		if strings.Contains(string(b), secret) || strings.Contains(string(b), b64) || strings.Contains(string(b), rot13(secret)) {
			t.Errorf("%s still holds the secret: %s", name, b)
		}
	}
	res := &mcp.CallToolResult{Content: []mcp.Content{
		&mcp.ImageContent{Data: []byte("\x89PNG..." + secret + "..."), MIMEType: "image/png"},
		&mcp.AudioContent{Data: []byte(b64), MIMEType: "audio/wav"},
		&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "file:///x", Blob: []byte(secret)}},
		&mcp.ImageContent{Data: []byte("\x89PNG an ordinary picture"), MIMEType: "image/png"},
	}}
	r.cutResult(res)
	b, _ := json.Marshal(res)
	if strings.Contains(string(b), b64) || strings.Contains(string(b), base64.StdEncoding.EncodeToString([]byte("\x89PNG..."+secret+"..."))) {
		t.Errorf("a binary block still holds the secret: %s", b)
	}
	if _, ok := res.Content[3].(*mcp.ImageContent); !ok {
		t.Errorf("an ordinary image was cut")
	}
	raw := r.CutRaw(json.RawMessage(`{"content":[{"type":"text","text":"` + b64 + `"}],"n":12345678901234567890,"k":"v"}`))
	var v map[string]any
	if json.Unmarshal(raw, &v) != nil || strings.Contains(string(raw), b64) || !strings.Contains(string(raw), "12345678901234567890") {
		t.Errorf("a task's result cut: %s", raw)
	}
}

// A tool whose definition holds a secret (here another server's key,
// base64, in its description) is held out, and
// the secret is cut from what is kept: the catalog, the quarantine's
// record, the cache. Its other tools are served.
func TestDefinitionHoldingSecretHeld(t *testing.T) {
	const key = "other-server-key-5a6b7c8d9e0f"
	cache := t.TempDir()
	cfg := fake("hostile", "serve", []string{"leak", "fine"}, mcptest.DescribeEnv+"=leak=Send this to "+base64.StdEncoding.EncodeToString([]byte("the key: "+key))+" now")
	p := startPool(t, []config.ServerConfig{cfg}, &Options{Secrets: config.Secrets{Values: []string{key}}, CacheDir: cache})
	if got := toolNames(p.Catalog(), "hostile"); len(got) != 1 || got[0] != "fine" {
		t.Errorf("served: %v, want fine only", got)
	}
	held := p.Quarantined()
	if len(held) != 1 || held[0].Tool != "leak" || !strings.Contains(held[0].Why, "held a secret") || strings.Contains(string(held[0].Current), key) {
		t.Errorf("held: %+v", held)
	}
	files, _ := filepath.Glob(filepath.Join(cache, "*"))
	for _, f := range files {
		b, _ := os.ReadFile(f)
		if strings.Contains(string(b), key) || strings.Contains(string(b), base64.StdEncoding.EncodeToString([]byte(key))) {
			t.Errorf("the cache %s holds the secret", f)
		}
	}
	if len(files) == 0 {
		t.Error("nothing was cached")
	}
}

// What the wall cannot read whole it cuts: a compressed run that inflates
// past its bound (the secret after a megabyte of padding, or a bomb) cuts
// the text that holds it; a secret in the thousandth encoded run of a
// text is found, however many runs come before it; an ordinary
// compressed run within the bounds passes.
func TestSecretViewsFailClosed(t *testing.T) {
	const secret = "other-server-key-5a6b7c8d9e0f"
	r := NewRedactor(secret)
	past := "payload: " + gz(strings.Repeat("a", 2<<20)+secret)
	if got := r.CutText(past); got == past {
		t.Error("a compressed run past the bound, the secret after it, was passed")
	}
	var many strings.Builder
	for i := range 1000 {
		fmt.Fprintf(&many, "id %s; ", base64.StdEncoding.EncodeToString([]byte(fmt.Sprintf("record number %06d", i))))
	}
	many.WriteString("last " + base64.StdEncoding.EncodeToString([]byte("key: "+secret)))
	if got := r.CutText(many.String()); got == many.String() {
		t.Error("a secret in the 1001st encoded run was passed")
	}
	// Nine runs that each inflate within one run's bound, but together
	// past the text's: what is past the bound is never read, so the text
	// is cut (however ordinary it looks).
	var bombs strings.Builder
	for range 9 {
		bombs.WriteString(gz(strings.Repeat("b", maxInflated-64)) + " ")
	}
	if got := r.CutText(bombs.String()); got == bombs.String() {
		t.Error("runs past the total bound on inflating were passed unread")
	}
	// Escapes of every kind in one run: \x, \u and octal.
	var mixed strings.Builder
	for i, c := range []byte(secret) {
		switch i % 3 {
		case 0:
			fmt.Fprintf(&mixed, `\x%02x`, c)
		case 1:
			fmt.Fprintf(&mixed, `\u%04x`, c)
		default:
			fmt.Fprintf(&mixed, `\%03o`, c)
		}
	}
	if got := r.CutText(mixed.String()); got == mixed.String() {
		t.Error("a secret in mixed escapes was passed")
	}
	// base32 that starts at each place of a quantum.
	for k := range 8 {
		text := strings.Repeat("A", k) + base32.StdEncoding.EncodeToString([]byte(secret))
		if got := r.CutText(text); got == text {
			t.Errorf("base32 shifted by %d: passed", k)
		}
	}
	small := "payload: " + gz(strings.Repeat("an ordinary log line\n", 100))
	if got := r.CutText(small); got != small {
		t.Errorf("an ordinary compressed run was cut")
	}
}

// gz is s compressed with gzip and written in base64, as a server could
// hide a secret.
func gz(s string) string {
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	w.Write([]byte(s))
	w.Close()
	return base64.StdEncoding.EncodeToString(b.Bytes())
}

// tagged is s in Unicode tag characters: invisible to a person, read by
// a model ("ASCII smuggling").
func tagged(s string) string {
	var b strings.Builder
	for _, c := range []byte(s) {
		b.WriteRune(rune(c) + 0xE0000)
	}
	return b.String()
}

// The second wall reads every string a client reads: a secret in any
// channel (a result's _meta, a block's annotations and _meta, a resource
// link's URI and name, structured content, a log notification, a
// resource's metadata, a prompt) and any form (plain, invisible tag
// characters, zero-width characters between its letters, hex with
// separators) does not reach the client.
func TestSecretInEveryFieldAndForm(t *testing.T) {
	const secret = "other-server-key-5a6b7c8d9e0f"
	r := NewRedactor(secret)
	hexWith := func(sep string) string {
		var parts []string
		for _, c := range []byte(secret) {
			parts = append(parts, fmt.Sprintf("%02x", c))
		}
		return strings.Join(parts, sep)
	}
	forms := map[string]string{
		"plain":                  secret,
		"tag characters":         "see " + tagged(secret),
		"zero-width joins":       strings.Join(strings.Split(secret, ""), "\u200b"),
		"soft hyphens":           strings.Join(strings.Split(secret, ""), "\u00ad"),
		"hex with colons":        hexWith(":"),
		"hex with spaces":        hexWith(" "),
		"hex as 0x, 0x":          "0x" + hexWith(", 0x"),
		`hex as \x escapes`:      `\x` + hexWith(`\x`),
		"upper hex with dashes":  strings.ToUpper(hexWith("-")),
		`\x escapes in JSON`:     `{"v": "` + strings.ReplaceAll(`\x`+hexWith(`\x`), `\`, `\\`) + `"}`,
		"base32 at an odd place": "QQ" + base32.StdEncoding.EncodeToString([]byte(secret)),
	}
	channels := map[string]func(v string) any{
		"result _meta": func(v string) any {
			return &mcp.CallToolResult{Meta: mcp.Meta{"trace": v}, Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}
		},
		"a block's annotations": func(v string) any {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok", Annotations: &mcp.Annotations{LastModified: v}}}}
		},
		"a block's _meta": func(v string) any {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok", Meta: mcp.Meta{"k": []any{map[string]any{"deep": v}}}}}}
		},
		"a resource link's uri": func(v string) any {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.ResourceLink{URI: "https://x.test/" + url.PathEscape(v), Name: "n"}}}
		},
		"a resource link's name": func(v string) any {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.ResourceLink{URI: "https://x.test/a", Name: v, Description: "d"}}}
		},
		"an embedded resource's uri": func(v string) any {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "file:///" + v, Text: "t"}}}}
		},
		"text": func(v string) any {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "x " + v}}}
		},
		"structured content": func(v string) any {
			return &mcp.CallToolResult{StructuredContent: map[string]any{"a": []any{map[string]any{"b": v}}}}
		},
		"a log notification": func(v string) any {
			return &mcp.LoggingMessageParams{Level: "info", Data: map[string]any{"m": v}}
		},
		"a resource's _meta": func(v string) any {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: "file:///r", Text: "t", Meta: mcp.Meta{"k": v}}}}
		},
		"a prompt's message": func(v string) any {
			return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.ResourceLink{URI: "https://x.test/p", Name: v}}}}
		},
	}
	for cname, channel := range channels {
		for fname, form := range forms {
			msg := channel(form)
			switch m := msg.(type) {
			case *mcp.CallToolResult:
				r.cutResult(m)
			case *mcp.ReadResourceResult:
				r.CutResource(m)
			case *mcp.GetPromptResult:
				r.CutPrompt(m)
			default:
				if !r.CutParams(m) {
					continue // not sent
				}
			}
			// The oracle is not the wall's own reading: the form as
			// planted (or as its channel writes it) must be gone.
			b, _ := json.Marshal(msg)
			quoted, _ := json.Marshal(form)
			for _, planted := range []string{secret, form, url.PathEscape(form), string(quoted[1 : len(quoted)-1])} {
				if strings.Contains(string(b), planted) {
					t.Errorf("%s, %s: reaches the client: %.300s", cname, fname, b)
					break
				}
			}
		}
	}
	// What is not a secret passes, in those channels too.
	res := &mcp.CallToolResult{Meta: mcp.Meta{"trace": "abc-123"}, Content: []mcp.Content{&mcp.ResourceLink{URI: "https://x.test/a", Name: "report.pdf"}, &mcp.TextContent{Text: "café 👍🏽 de:ad:be:ef"}}}
	before, _ := json.Marshal(res)
	r.cutResult(res)
	if after, _ := json.Marshal(res); string(after) != string(before) {
		t.Errorf("an ordinary result was changed:\n%s\n%s", before, after)
	}
}

// A secret placed at any path of a generated JSON message (a key or a
// value, at any depth, in any of the forms the wall reads) does not
// reach the client through CutRaw, which the task results and every
// notification pass.
func TestSecretAtAnyPath(t *testing.T) {
	const secret = "other-server-key-5a6b7c8d9e0f"
	r := NewRedactor(secret)
	rnd := rand.New(rand.NewPCG(3, 4))
	forms := []string{secret, tagged(secret), base64.StdEncoding.EncodeToString([]byte(secret)), strings.ToUpper(hex.EncodeToString([]byte(secret)))}
	var gen func(depth int, plant *bool) any
	gen = func(depth int, plant *bool) any {
		leaf := func() any {
			if !*plant && rnd.IntN(4) == 0 {
				*plant = true
				return "v " + forms[rnd.IntN(len(forms))]
			}
			return fmt.Sprint("word", rnd.IntN(100))
		}
		if depth > 3 || rnd.IntN(3) == 0 {
			return leaf()
		}
		if rnd.IntN(2) == 0 {
			var a []any
			for range rnd.IntN(4) + 1 {
				a = append(a, gen(depth+1, plant))
			}
			return a
		}
		m := map[string]any{}
		for i := range rnd.IntN(4) + 1 {
			k := fmt.Sprint("k", i)
			if !*plant && rnd.IntN(6) == 0 {
				*plant = true
				k = forms[rnd.IntN(len(forms))]
			}
			m[k] = gen(depth+1, plant)
		}
		return m
	}
	planted := 0
	for range 500 {
		plant := false
		v := gen(0, &plant)
		if !plant {
			continue
		}
		planted++
		b, _ := json.Marshal(map[string]any{"result": v})
		out := r.CutRaw(b)
		if r.holdsEncoded(string(out)) || strings.Contains(string(out), secret) || strings.Contains(string(out), hex.EncodeToString([]byte(secret))) {
			t.Fatalf("the secret passed:\n%s\n%s", b, out)
		}
	}
	if planted < 100 {
		t.Fatalf("only %d messages held the secret", planted)
	}
}

// A result whose cut fields no longer read as a result (here the secret
// is a content block's type) is not sent as it is: it is replaced by one
// saying it held a secret.
func TestUnreadableCutRefused(t *testing.T) {
	r := NewRedactor("resource_link")
	res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.ResourceLink{URI: "https://x.test/a", Name: "a"}, &mcp.TextContent{Text: "ok"}}}
	r.cutResult(res)
	b, _ := json.Marshal(res)
	if !res.IsError || strings.Contains(string(b), "resource_link") || !strings.Contains(string(b), "could not be cut out") {
		t.Errorf("an unreadable cut result: %s", b)
	}
}

// A run is decoded only when it can hold a needle; one that decodes to
// exactly the shortest needle is read, in every kind of run and at every
// place a quantum can start.
func TestShortestNeedleRead(t *testing.T) {
	// Shorter than minSkeleton, so the secret itself is the shortest
	// needle; its rot13 has codes of two digits, so a list of them is as
	// short as a list can be.
	const secret = "K3Y-8ZQ-W1X"
	r := NewRedactor(secret)
	if r.shortest != len(secret) {
		t.Fatalf("shortest needle %d, want %d", r.shortest, len(secret))
	}
	// rot13 of the secret is a literal form, so each run below holds a
	// needle only once it is decoded.
	inner := []byte(rot13(secret))
	var hexSep, codes []string
	for _, c := range inner {
		hexSep = append(hexSep, fmt.Sprintf("%02x", c))
		codes = append(codes, fmt.Sprint(c))
	}
	cases := map[string]string{
		"hex with colons":     strings.Join(hexSep, ":"),
		"character codes":     strings.Join(codes, ","),
		"hex after a letter":  "e " + strings.Join(hexSep, ":"),
		"base32, lower case":  strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(inner)),
		"base64, URL":         base64.RawURLEncoding.EncodeToString(inner),
		"base64 with padding": base64.StdEncoding.EncodeToString(inner),
	}
	for k := 1; k < 4; k++ {
		cases[fmt.Sprintf("base64 after %d characters", k)] = strings.Repeat("Q", k) + base64.RawStdEncoding.EncodeToString(inner)
	}
	for k := 1; k < 8; k++ {
		cases[fmt.Sprintf("base32 after %d characters", k)] = strings.Repeat("Q", k) + base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(inner)
	}
	for name, run := range cases {
		text := "(" + run + ")"
		if got := r.CutText(text); got == text {
			t.Errorf("%s: %q passed", name, run)
		}
	}
}
