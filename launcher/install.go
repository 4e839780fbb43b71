package launcher

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Install is a step of its own. A server started as "npx -y PACKAGE"
// fetches its package, and everything it depends on, at its first
// start: on a busy machine that takes longer than a start's timeout, and
// a start killed in the middle leaves a half-installed package in the
// server's cache, after which it fails at once, every time. So before a
// contained npx server's first start toolshelf installs its package into
// the server's own cache, in the same sandbox the server will run in
// (its network, its grants, its registry), with a bound of its own
// (installTimeout); the start's timeout then counts from the installed
// program. The install is atomic: it fills a new folder beside the cache,
// and only a complete install, checked against the integrity `add`
// recorded, replaces the cache; a killed one leaves nothing the server
// reads, and the next start installs again. A cache whose package is
// gone (removed by hand, a half-install of before) is installed again.

// installTimeout bounds one install: a package and its dependencies
// fetched and unpacked.
const installTimeout = 10 * time.Minute

// installedMark is the file, in the server's npm cache, that names the
// package an install completed.
const installedMark = ".toolshelf-installed"

// npmCache is the server's npm cache on the host, where npx looks for it
// as ~/.npm (see packageCaches).
func npmCache(cacheDir string) string { return filepath.Join(cacheDir, ".npm") }

// npxPackage is the package an npx server runs ("" for none): the
// argument of --package, or the first that is not a flag.
func npxPackage(command string, args []string) string {
	if filepath.Base(command) != "npx" {
		return ""
	}
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--package" || a == "-p":
			if i+1 < len(args) {
				return args[i+1]
			}
			return ""
		case strings.HasPrefix(a, "--package="):
			return strings.TrimPrefix(a, "--package=")
		case a == "--":
			if i+1 < len(args) {
				return args[i+1]
			}
			return ""
		case strings.HasPrefix(a, "-"):
		default:
			return a
		}
	}
	return ""
}

// fromRegistry reports whether an npx package spec names a package of a
// registry (name, name@version, @scope/name@version), not a file, a
// folder, a URL or an alias, which npx reads where they are.
func fromRegistry(spec string) bool {
	if spec == "" || strings.ContainsAny(spec, ":\\") || strings.HasPrefix(spec, ".") || strings.HasPrefix(spec, "~") ||
		strings.HasSuffix(spec, ".tgz") || strings.HasSuffix(spec, ".tar.gz") {
		return false
	}
	name := packageName(spec)
	if scoped, ok := strings.CutPrefix(name, "@"); ok {
		return strings.Count(scoped, "/") == 1 && !strings.HasPrefix(scoped, "/") && !strings.HasSuffix(scoped, "/")
	}
	return !strings.Contains(name, "/")
}

// packageName is a package spec without its version: @scope/name@1.2.3
// is @scope/name.
func packageName(spec string) string {
	if i := strings.LastIndexByte(spec, '@'); i > 0 {
		return spec[:i]
	}
	return spec
}

// NeedsInstall reports whether a contained npx server's package is to
// be installed before it starts: not installed yet, installed as another
// version, or gone from the cache.
func (p *Plan) NeedsInstall() (spec string, ok bool) {
	c := p.Containment()
	if p.CacheDir == "" || !c.Contained || c.Engine != "" || p.TransportName() != "stdio" || p.Dial != nil {
		return "", false
	}
	spec = npxPackage(p.Command, p.Args)
	if !fromRegistry(spec) {
		return "", false // a tarball, a folder, a git URL: npx reads it where it is
	}
	cache := npmCache(p.CacheDir)
	mark, err := os.ReadFile(filepath.Join(cache, installedMark))
	if err != nil || strings.TrimSpace(string(mark)) != spec {
		return spec, true
	}
	if lock, _ := installedLock(cache, packageName(spec)); lock == nil {
		return spec, true // the package is gone from the cache
	}
	return "", false
}

// Install installs the server's package when it needs it (see
// NeedsInstall), saying so in the log. redact cuts secrets from what
// npx printed before it goes into the error.
func Install(ctx context.Context, p *Plan, redact func(string) string, logger *slog.Logger) error {
	spec, ok := p.NeedsInstall()
	if !ok {
		return nil
	}
	registry := envValue(p.Environ, "npm_config_registry")
	if registry == "" {
		registry = "npm's registry"
	}
	logger.Info("installing the server's package before its first start", "package", spec, "registry", registry)
	start := time.Now()
	if err := installPackage(ctx, p, spec, redact, logger); err != nil {
		err = fmt.Errorf("installing %s from %s: %w", spec, registry, err)
		logger.Warn("the server's package could not be installed; tried again at its next start", "error", err)
		return err
	}
	logger.Info("installed the server's package", "package", spec, "took", time.Since(start).Round(time.Millisecond))
	return nil
}

// installPackage runs npx in the server's sandbox to fill a new cache
// beside the server's, checks it, and puts it in the cache's place.
func installPackage(ctx context.Context, plan *Plan, spec string, redact func(string) string, logger *slog.Logger) error {
	dir := plan.CacheDir
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	// What a killed install left.
	if stale, _ := filepath.Glob(filepath.Join(dir, ".install-*")); len(stale) > 0 {
		for _, d := range stale {
			os.RemoveAll(d)
		}
	}
	tmp, err := os.MkdirTemp(dir, ".install-")
	if err != nil {
		return err
	}
	defer removeSettled(tmp)
	os.Chmod(tmp, 0o755) // the sandbox's user passes it to its cache
	cfg := *plan
	cfg.CacheDir = tmp
	cfg.Args = []string{"--yes", "--package", spec, "--call", "true"}
	p, err := Start(&cfg, logger)
	if err != nil {
		return err
	}
	p.stdin.Close()
	go io.Copy(io.Discard, p.stdout) // npx's own output: not read
	ictx, cancel := context.WithTimeout(ctx, installTimeout)
	defer cancel()
	select {
	case <-p.done:
	case <-ictx.Done():
		signalGroup(p.cmd, p.contained)
		<-p.done
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("it did not finish within %v (a slow registry or network?)", installTimeout)
	}
	if p.err != nil {
		why := redact(p.stderr.Said(400))
		if why == "" {
			why = p.err.Error()
		}
		return fmt.Errorf("npx failed: %s", why)
	}
	fresh := npmCache(tmp)
	lock, err := installedLock(fresh, packageName(spec))
	if err != nil || lock == nil {
		return fmt.Errorf("npx finished, and the package is not in the cache (%v)", err)
	}
	if want := plan.recordedIntegrity(spec); want != "" && lock.Integrity != want {
		return fmt.Errorf("the package's integrity is %s, not the %s recorded when it was added: the registry serves other bytes under that version; not installed", lock.Integrity, want)
	}
	if err := os.WriteFile(filepath.Join(fresh, installedMark), []byte(spec+"\n"), 0o644); err != nil {
		return err
	}
	cache := npmCache(dir)
	old := filepath.Join(tmp, "old")
	if err := os.Rename(cache, old); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return os.Rename(fresh, cache)
}

// removeSettled removes a folder an install filled, trying again for a
// moment while it fails: the processes of a sandbox whose install was cut
// are killed with it, but one may still finish a write into the folder
// after the sandbox has gone, and the folder must not be left (a next
// install removes what is left, as a last resort).
func removeSettled(dir string) {
	for try := range 20 {
		if err := os.RemoveAll(dir); err == nil {
			return
		}
		time.Sleep(time.Duration(try+1) * 10 * time.Millisecond)
	}
}

// recordedIntegrity is the integrity `add` recorded for the package the
// server runs ("" when none was, or it was recorded for another).
func (p *Plan) recordedIntegrity(spec string) string {
	r := p.Registry
	if r == nil || r.Integrity == "" || !strings.HasPrefix(r.Integrity, "sha") || strings.HasPrefix(r.Integrity, "sha256:") {
		return ""
	}
	if r.Package != "" && strings.TrimPrefix(r.Package, "npm:") != spec {
		return ""
	}
	return r.Integrity
}

// lockedPackage is what npm's lock file says of an installed package.
type lockedPackage struct {
	Version   string `json:"version"`
	Integrity string `json:"integrity"`
}

// installedLock finds the package name in the npx installs of a cache:
// its lock file's entry, when its files are there too.
func installedLock(cache, name string) (*lockedPackage, error) {
	locks, _ := filepath.Glob(filepath.Join(cache, "_npx", "*", "package-lock.json"))
	for _, f := range locks {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		var lock struct {
			Packages map[string]lockedPackage `json:"packages"`
		}
		if json.Unmarshal(b, &lock) != nil {
			continue
		}
		p, ok := lock.Packages["node_modules/"+name]
		if !ok {
			continue
		}
		if _, err := os.Stat(filepath.Join(filepath.Dir(f), "node_modules", name, "package.json")); err != nil {
			continue
		}
		return &p, nil
	}
	return nil, nil
}
