package upstream

import (
	"encoding/base64"
	"encoding/hex"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestCutSecretForms: a secret comes back in any form a server can write
// it in without knowing which secrets are watched for; none survives.
func TestCutSecretForms(t *testing.T) {
	secret := "other-server-key-5a6b7c8d9e0f"
	r := NewRedactor(secret, "Pg-pass-9f8e7d6c")
	rev := []rune(secret)
	slices.Reverse(rev)
	for name, text := range map[string]string{
		"plain":          "key: " + secret,
		"base64":         base64.StdEncoding.EncodeToString([]byte(secret)),
		"base64 inside":  base64.StdEncoding.EncodeToString([]byte("x" + secret + "yz")),
		"base64 offset2": base64.URLEncoding.EncodeToString([]byte("ab" + secret)),
		"hex":            hex.EncodeToString([]byte(secret)),
		"HEX":            strings.ToUpper(hex.EncodeToString([]byte(secret))),
		"reversed":       string(rev),
		"spaced":         strings.Join(strings.Split(secret, ""), " "),
		"lines":          strings.Join(strings.Split(secret, ""), "\n"),
		"upper spaced":   strings.ToUpper(strings.Join(strings.Split(secret, ""), " . ")),
		"reversed space": strings.Join(strings.Split(string(rev), ""), " "),
	} {
		got := r.CutText("before " + text + " after")
		if !strings.Contains(got, Redacted) || !strings.HasPrefix(got, "before ") || !strings.HasSuffix(got, " after") {
			t.Errorf("%s: %q", name, got)
		}
	}
	// Words that merely share letters are not cut.
	for _, text := range []string{"other server", "the key is in the vault", "5a6b7c", "pass"} {
		if got := r.CutText(text); got != text {
			t.Errorf("%q was cut: %q", text, got)
		}
	}
}

// TestCutAcrossBlocks: a secret split between two content blocks of one
// answer is cut from both.
func TestCutAcrossBlocks(t *testing.T) {
	secret := "admin-a1b2a1b2a1b2a1b2"
	r := NewRedactor(secret)
	res := &mcp.CallToolResult{Content: []mcp.Content{
		&mcp.TextContent{Text: "first half: " + secret[:9]},
		&mcp.TextContent{Text: secret[9:] + " was the rest"},
		&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "x://y", Text: "and " + secret}},
	}}
	r.cutResult(res)
	var all strings.Builder
	for _, c := range res.Content {
		switch c := c.(type) {
		case *mcp.TextContent:
			all.WriteString(c.Text + "|")
		case *mcp.EmbeddedResource:
			all.WriteString(c.Resource.Text + "|")
		}
	}
	got := all.String()
	if strings.Contains(got, secret[:9]) || strings.Contains(got, secret[9:]) {
		t.Errorf("a piece survived: %q", got)
	}
	if !strings.Contains(got, "first half: ") || !strings.Contains(got, " was the rest") {
		t.Errorf("cut more than the secret: %q", got)
	}
	prompt := &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: base64.StdEncoding.EncodeToString([]byte(secret))}}}}
	r.CutPrompt(prompt)
	// An encoded secret's first and last characters also hold bits of
	// its neighbours, and stay: a few bits, never the secret.
	if txt := prompt.Messages[0].Content.(*mcp.TextContent).Text; !strings.HasPrefix(txt, Redacted) || len(txt) > len(Redacted)+3 {
		t.Errorf("prompt: %q", txt)
	}
	resource := &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: "x://y", Text: strings.Join(strings.Split(secret, ""), " ")}}}
	r.CutResource(resource)
	if txt := resource.Contents[0].Text; txt != Redacted {
		t.Errorf("resource: %q", txt)
	}
}

// BenchmarkCutText measures the cost of cutting a large tool result with
// a configuration's worth of secrets.
func BenchmarkCutText(b *testing.B) {
	var secrets []string
	for i := range 40 {
		secrets = append(secrets, strings.Repeat(string(rune('a'+i%26)), 4)+"-secret-value-"+strings.Repeat("9", i%7+3))
	}
	r := NewRedactor(secrets...)
	// An ordinary answer: prose, identifiers, a URL, a hash and a base64
	// id (the decoded views, secretviews.go, are built for each).
	line := `The quick brown fox jumps over the lazy dog; id=12345, url=https://example.com/x?q=a%20b, sha=9f86d081884c7d659a2feaa0c55ad015, blob=SGVsbG8gd29ybGQgYWdhaW4h. `
	for _, size := range []struct {
		name  string
		times int
	}{{"2KB", 2048 / len(line)}, {"1MB", (1 << 20) / len(line)}} {
		text := strings.Repeat(line, size.times)
		b.Run(size.name, func(b *testing.B) {
			b.SetBytes(int64(len(text)))
			for b.Loop() {
				r.CutText(text)
			}
		})
	}
}

// A secret whose base64 holds "+" or "/" (and so "-" or "_" in the URL
// alphabet) is cut in both alphabets, standard and URL, at each alignment.
func TestSecretInBothBase64Alphabets(t *testing.T) {
	const secret = "k>>?~~~s3cr3t>>>?~~"
	r := NewRedactor(secret)
	std, url := base64.StdEncoding.EncodeToString([]byte(secret)), base64.URLEncoding.EncodeToString([]byte(secret))
	if !strings.ContainsAny(std, "+/") || std == url {
		t.Fatalf("the secret does not test both alphabets: %s %s", std, url)
	}
	for _, prefix := range []string{"", "a", "ab"} {
		for name, enc := range map[string]*base64.Encoding{"standard": base64.StdEncoding, "URL": base64.URLEncoding} {
			text := "data: " + enc.EncodeToString([]byte(prefix+secret+" and more"))
			if got := r.CutText(text); got == text {
				t.Errorf("%s base64 after %q: not cut: %s", name, prefix, text)
			}
		}
	}
}
