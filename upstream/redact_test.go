package upstream

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/toolshelf/toolshelf/config"
)

func TestRedact(t *testing.T) {
	r := NewRedactor("hunter2-planted", "abc") // too short to be taken for a secret
	for _, tt := range []struct{ in, want string }{
		{"login failed for hunter2-planted", "login failed for [redacted]"},
		{"abc is fine", "abc is fine"},
		{`dial https://u:pw@api.example.com/mcp?key=k1&x=2: refused`, `dial https://u:[redacted]@api.example.com/mcp?key=[redacted]&x=[redacted]: refused`},
		{"no credentials in http://127.0.0.1:8080/mcp", "no credentials in http://127.0.0.1:8080/mcp"},
		{"token ghp_0123456789abcdefghij0123 leaked", "token [redacted] leaked"},
		{"key sk-proj-0123456789abcdefghijkl", "key [redacted]"},
		{"Authorization: Bearer abc.def.ghi-123", "Authorization: Bearer [redacted]"},
		{`{"api_key": "s3cr3tvalue"}`, `{"api_key": "[redacted]"}`},
		{"password=letmein1 user=bob", "password=[redacted] user=bob"},
	} {
		if got := r.Redact(tt.in); got != tt.want {
			t.Errorf("Redact(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// What a server's configuration holds is secret: env and header values,
// what ${VAR} expanded to, a URL's password and query values.
func TestConfigSecrets(t *testing.T) {
	data := `{"mcpServers": {
		"remote": {"url": "https://me:urlpass1@h.example/mcp?apikey=querysecret1", "headers": {"Authorization": "Bearer headersecret1"}},
		"local": {"command": "x", "args": ["--token", "${TOKEN}"], "env": {"API_KEY": "envsecret1"}}}}`
	cfgs, err := config.ParseConfig([]byte(data), "servers.json", func(k string) string { return map[string]string{"TOKEN": "expandedsecret1"}[k] })
	if err != nil {
		t.Fatal(err)
	}
	var all []string
	for _, c := range cfgs {
		all = append(all, c.SecretValues()...)
	}
	text := strings.Join(all, " ")
	for _, s := range []string{"urlpass1", "querysecret1", "headersecret1", "expandedsecret1", "envsecret1"} {
		if !strings.Contains(text, s) {
			t.Errorf("secrets lack %q: %v", s, all)
		}
	}
}

func TestRedactingLogs(t *testing.T) {
	var buf bytes.Buffer
	red := NewRedactor("planted-secret")
	log := slog.New(&redactingHandler{slog.NewTextHandler(&buf, nil), func() *Redactor { return red }}).With("url", "https://h/x?k=planted-secret")
	log.Warn("failed with planted-secret", "error", errors.New("stderr: planted-secret"), slog.Group("g", "v", "planted-secret"))
	if strings.Contains(buf.String(), "planted-secret") {
		t.Errorf("the log holds the secret: %s", buf.String())
	}
	// The record itself reaches the log, with what is not secret.
	for _, want := range []string{`msg="failed with [redacted]"`, `error="stderr: [redacted]"`, `g.v=[redacted]`, `url="https://h/x?k=[redacted]"`, "level=WARN"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("the log lacks %s: %s", want, buf.String())
		}
	}
}
