package rules

import (
	"errors"
	"strings"
	"testing"
)

// TestCleanValue: context.clean reads a path or URL as the most lenient
// server would, and refuses what it cannot read so.
func TestCleanValue(t *testing.T) {
	for _, tc := range []struct{ in, want, err string }{
		{"plain words", "plain words", ""},
		{"100% sure", "100% sure", ""},
		{"/srv/ci/../../etc/passwd", "/etc/passwd", ""},
		{"/srv/ci/%2e%2e/%2e%2e/etc/passwd", "/etc/passwd", ""},
		{"/srv/ci/%252e%252e/%252e%252e/etc/passwd", "/etc/passwd", ""},
		{"/srv/ci/%25252e%25252e/x", "/srv/x", ""},
		{"/srv/ci/%2525252e%2525252e/x", "", "still percent-encoded"},
		{"/srv/ci/%zz/%2e%2e/%2e%2e/etc/passwd", "", "no escape"},
		{"/srv/ci/%", "", "no escape"},
		{`\srv\ci\..\..\etc\passwd`, "/etc/passwd", ""},
		{"/srv/ci\u2215..\u2215..\u2215etc", "/etc", ""},
		{"/srv/ci\uff0f..\uff0f..\uff0fetc", "/etc", ""},
		{"/srv/ci/\uff0e\uff0e/\uff0e\uff0e/etc", "/etc", ""},
		{"/srv//ci///x/", "/srv/ci/x", ""},
		{"http://169.254.169.254/latest/meta-data/", "http://169.254.169.254/latest/meta-data", ""},
		{"HTTP://Metadata.Google.Internal//computeMetadata/../v1?a=b//c", "http://metadata.google.internal/v1?a=b//c", ""},
		{"https://example.com", "https://example.com", ""},
		{"file:///etc/passwd", "/etc/passwd", ""},
		{"FILE:///srv/ci/../../etc/passwd", "/etc/passwd", ""},
		{"file://localhost/etc/passwd", "/etc/passwd", ""},
		{"file:/etc/passwd", "/etc/passwd", ""},
		{"File:/srv/ci/%2e%2e/%2e%2e/etc", "/etc", ""},
		{"C:/Users/../Windows", "C:/Windows", ""},
		{"relative/../../x", "../x", ""},
	} {
		got, err := cleanValue(tc.in)
		var ae *ArgsError
		switch {
		case tc.err != "" && (err == nil || !errors.As(err, &ae) || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%q: %q %v, want an error with %q", tc.in, got, err, tc.err)
		case tc.err == "" && (err != nil || got != tc.want):
			t.Errorf("%q: %q %v, want %q", tc.in, got, err, tc.want)
		}
	}
}
