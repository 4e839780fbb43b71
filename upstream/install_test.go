package upstream

import (
	"context"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/toolshelf/toolshelf/config"
	"github.com/toolshelf/toolshelf/internal/testenv"
	"github.com/toolshelf/toolshelf/launcher"
	"github.com/toolshelf/toolshelf/registry/registrytest"
)

// A contained npx server's package is installed before its first start,
// in its sandbox, from the registry it names (here one on this machine's
// loopback, reached through the port it is granted): a package whose
// bytes are not the integrity recorded is refused; an install cut short
// leaves nothing the server reads; a complete one is kept, and the server
// starts within its own timeout; a cache whose package is gone is
// installed again.
func TestInstallBeforeFirstStart(t *testing.T) {
	needSandbox(t)
	if _, err := exec.LookPath("npx"); err != nil {
		t.Skip("needs npx")
	}
	reg := registrytest.Serve(t, "../testdata/registry/servers.json")
	reg.ServeNPM(t, "../testdata/servers/package-lock.json", "../testdata/registry/npm/package-lock.json")
	const pkg, version = "@modelcontextprotocol/server-memory", "2026.1.26"
	if !reg.Cached(pkg, version) {
		t.Skip("this machine's npm cache lacks server-memory's tarball: run npm ci in testdata/registry/npm (scripts/test.sh does)")
	}
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	port, _ := strconv.Atoi(reg.URL[strings.LastIndex(reg.URL, ":")+1:])
	sc := config.ServerConfig{Name: "memory", Command: "npx", Args: []string{"-y", pkg + "@" + version},
		Env: map[string]string{"npm_config_registry": reg.URL + "/npm"}, HostPorts: []int{port}, Timeout: testenv.Timeout(10 * time.Second)}
	// The server's npm cache, and the mark of a complete install in it
	// (launcher/install.go).
	cache := filepath.Join(launcher.CacheDir(nil, "memory"), ".npm")
	const installedMark = ".toolshelf-installed"
	nothingLeft := func(when string) {
		t.Helper()
		if _, err := os.Stat(filepath.Join(cache, installedMark)); err == nil {
			t.Errorf("%s: the cache is marked installed", when)
		}
		if left, _ := filepath.Glob(filepath.Join(filepath.Dir(cache), ".install-*")); len(left) > 0 {
			t.Errorf("%s: left %v", when, left)
		}
	}

	bad := sc
	bad.Registry = &config.RegistryRef{URL: reg.URL, Name: "io.github.modelcontextprotocol/server-memory", Version: version,
		Package: "npm:" + pkg + "@" + version, Integrity: "sha512-" + strings.Repeat("A", 86) + "=="}
	ctx := context.Background()
	if err := NewPool([]config.ServerConfig{bad}, nil).Install(ctx, "memory"); err == nil || !strings.Contains(err.Error(), "not the sha512-AAAA") || !strings.Contains(err.Error(), reg.URL) {
		t.Errorf("a package of other bytes than recorded: %v", err)
	}
	nothingLeft("refused for its integrity")

	// Cut as it begins (the log says so).
	cut, cancel := context.WithCancel(ctx)
	defer cancel()
	logger := slog.New(&onMessage{prefix: "installing the server's package", then: cancel, Handler: slog.DiscardHandler})
	if err := NewPool([]config.ServerConfig{sc}, &Options{Logger: logger}).Install(cut, "memory"); err == nil {
		t.Errorf("an install cut short: no error")
	}
	nothingLeft("cut short")

	p := NewPool([]config.ServerConfig{sc}, nil)
	if err := p.Install(ctx, "memory"); err != nil {
		t.Fatalf("install: %v", err)
	}
	if mark, err := os.ReadFile(filepath.Join(cache, installedMark)); err != nil || strings.TrimSpace(string(mark)) != pkg+"@"+version {
		t.Fatalf("the mark: %q %v", mark, err)
	}
	started := startPool(t, []config.ServerConfig{sc}, nil)
	if st := started.Status()[0]; st.State != StateReady || !st.Contained {
		t.Fatalf("after the install: %+v", st)
	}
	// The package removed from the cache (by hand, or an older
	// half-install): installed again.
	dirs, _ := filepath.Glob(filepath.Join(cache, "_npx", "*", "node_modules", "@modelcontextprotocol", "server-memory"))
	for _, d := range dirs {
		os.RemoveAll(d)
	}
	if _, needs := p.server("memory").cfg.NeedsInstall(); !needs {
		t.Error("a cache without its package is taken as installed")
	}
}

// onMessage is a log handler that calls then at the first record whose
// message begins with prefix.
type onMessage struct {
	slog.Handler
	prefix string
	then   func()
}

func (h *onMessage) Enabled(context.Context, slog.Level) bool { return true }

func (h *onMessage) Handle(_ context.Context, r slog.Record) error {
	if strings.HasPrefix(r.Message, h.prefix) {
		h.then()
	}
	return nil
}

func (h *onMessage) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *onMessage) WithGroup(string) slog.Handler      { return h }
