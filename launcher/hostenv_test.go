package launcher

import (
	"strings"
	"testing"

	"github.com/toolshelf/toolshelf/internal/hookenv"
)

// TestSandboxSetenv: a server's variables go to bwrap through its fd,
// the loader's apart, for the server's command alone.
func TestSandboxSetenv(t *testing.T) {
	setenv, loader := sandboxSetenv([]string{"PATH=/usr/bin", "KEY=s=e=c", "LD_PRELOAD=/x.so", "GCONV_PATH=/g", "MALLOC_CHECK_=3", "NODE_OPTIONS=--require /x.js"})
	want := "--setenv\x00PATH\x00/usr/bin\x00--setenv\x00KEY\x00s=e=c\x00--setenv\x00NODE_OPTIONS\x00--require /x.js\x00"
	if string(setenv) != want {
		t.Errorf("setenv = %q, want %q", setenv, want)
	}
	if strings.Join(loader, " ") != "LD_PRELOAD=/x.so GCONV_PATH=/g MALLOC_CHECK_=3" {
		t.Errorf("loader = %q", loader)
	}
	for _, v := range []string{"LD_AUDIT", "ld_preload", "DYLD_INSERT_LIBRARIES", "NODE_OPTIONS", "PYTHONSTARTUP", "BASH_ENV", "PERL5OPT", "JAVA_TOOL_OPTIONS"} {
		if !hookenv.Steers(v) {
			t.Errorf("Steers(%s) = false", v)
		}
	}
	for _, v := range []string{"PATH", "HOME", "GITHUB_TOKEN", "NODE_ENV"} {
		if hookenv.Steers(v) {
			t.Errorf("Steers(%s) = true", v)
		}
	}
}
