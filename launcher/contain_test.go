package launcher

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/toolshelf/toolshelf/config"
)

// TestSandboxPlan: what a server is given, and that toolshelf's own
// files inside a grant are covered.
func TestSandboxPlan(t *testing.T) {
	dir := t.TempDir()
	home := filepath.Join(dir, "home")
	cwd := filepath.Join(dir, "project")
	grant := filepath.Join(dir, "data")
	lock := filepath.Join(grant, "toolshelf.lock")
	for _, d := range []string{home, cwd, grant, filepath.Join(home, ".npm")} {
		os.MkdirAll(d, 0o755)
	}
	os.WriteFile(lock, []byte("{}"), 0o600)
	npx := filepath.Join(dir, "node", "bin", "npx")
	os.MkdirAll(filepath.Dir(npx), 0o755)
	os.WriteFile(npx, []byte("#!/bin/sh\n"), 0o755)
	cache := filepath.Join(dir, "cache", "s")
	cfg := &Plan{ServerConfig: config.ServerConfig{Name: "s", Command: "npx", Cwd: cwd, ReadPaths: []string{"../data"}, WritePaths: []string{"out"}, NoNetwork: true}, CacheDir: cache}
	p := planSandbox(cfg, []string{"HOME=" + home, "PATH=" + filepath.Dir(npx)}, []string{lock, filepath.Join(home, ".config", "toolshelf")})
	args := strings.Join(p.args(), " ")
	if strings.Contains(args, " "+filepath.Join(home, ".npm")+" "+filepath.Join(home, ".npm")) {
		t.Errorf("the user's npm cache is given (another server's packages are there):\n%s", args)
	}
	for _, want := range []string{
		"--ro-bind " + filepath.Join(dir, "node") + " ",                              // npx's install prefix
		"--bind " + filepath.Join(cache, ".npm") + " " + filepath.Join(home, ".npm"), // npx's cache, the server's own
		"--ro-bind " + cwd + " ",
		"--ro-bind " + grant + " ",
		"--ro-bind /dev/null " + lock, // inside a grant: covered
		"--unshare-net",
		"--chdir " + cwd,
		"--tmpfs " + home,
	} {
		if !strings.Contains(args, want) {
			t.Errorf("no %q in\n%s", want, args)
		}
	}
	if !slices.Contains(p.missing, filepath.Join(cwd, "out")) {
		t.Errorf("a missing grant is not reported: %v", p.missing)
	}
	if hidden := filepath.Join(home, ".config", "toolshelf"); strings.Contains(args, hidden) {
		t.Errorf("a hidden path outside every grant is mounted: %s", args)
	}
	// A write grant holding toolshelf's files is refused, not covered:
	// the server could plant a link where toolshelf writes later.
	cfg = &Plan{ServerConfig: config.ServerConfig{Name: "s", Command: "/bin/sh", Cwd: cwd, WritePaths: []string{dir}}}
	if p := planSandbox(cfg, []string{"HOME=" + home}, []string{lock, filepath.Join(grant, "audit.jsonl")}); len(p.heldInWrite) != 2 || p.heldInWrite[0] != [2]string{dir, lock} {
		t.Errorf("a write grant holding toolshelf's files: %v", p.heldInWrite)
	}
	// The home folder as cwd is not given whole.
	cfg = &Plan{ServerConfig: config.ServerConfig{Name: "s", Command: "/bin/sh", Cwd: home}}
	if p := planSandbox(cfg, []string{"HOME=" + home}, nil); !p.cwdSkipped || slices.Contains(p.read, home) {
		t.Errorf("home as cwd: %+v", p)
	}
	// The configuration's folder, a cwd by default, is not given: only
	// the script an argument names.
	os.WriteFile(filepath.Join(cwd, "server.js"), []byte("//"), 0o644)
	os.WriteFile(filepath.Join(cwd, "package.json"), []byte("{}"), 0o644)
	cfg = &Plan{ServerConfig: config.ServerConfig{Name: "s", Command: "/bin/sh", Args: []string{"server.js"}, Cwd: cwd, CwdDefault: true}}
	if p := planSandbox(cfg, []string{"HOME=" + home}, nil); slices.Contains(p.read, cwd) || !slices.Contains(p.read, filepath.Join(cwd, "server.js")) || !p.cwdEmpty {
		t.Errorf("the configuration's folder as cwd by default: %+v", p)
	}
	// A version manager's shim brings the manager's root (read-only).
	shim := filepath.Join(dir, "mgr", "shims", "python3")
	os.MkdirAll(filepath.Dir(shim), 0o755)
	os.WriteFile(shim, []byte("#!/bin/sh\n"), 0o755)
	cfg = &Plan{ServerConfig: config.ServerConfig{Name: "s", Command: "python3", Cwd: cwd}}
	if p := planSandbox(cfg, []string{"HOME=" + home, "PATH=" + filepath.Dir(shim)}, nil); !slices.Contains(p.read, filepath.Join(dir, "mgr")) {
		t.Errorf("a shim's manager root is not given: %v", p.read)
	}
}

// What a failed npx server said is npm's error, not its notices or its
// complaints about its log folder.
func TestStderrSaid(t *testing.T) {
	b := newTailBuffer(16 << 10)
	b.Write([]byte(`npm notice
npm notice New minor version of npm available! 11.19.1 -> 11.21.2
npm error code E404
npm error 404 Not Found - GET https://registry.npmjs.org/@modelcontextprotocol%2fserver-memroy - Not found
npm error 404  '@modelcontextprotocol/server-memroy@*' is not in this registry.
npm error Log files were not written due to an error writing to the directory: /root/.npm/_logs
npm error You can rerun the command with ` + "`--loglevel=verbose`" + ` to see the logs in your terminal
npm notice To update run: npm install -g npm@11.21.2
`))
	got := b.Said(512)
	if !strings.Contains(got, "404 Not Found") || !strings.Contains(got, "is not in this registry") || strings.Contains(got, "notice") || strings.Contains(got, "Log files") {
		t.Errorf("said: %q", got)
	}
}

// Before a contained server runs, a person is told what would fail it:
// a path its environment names that it is not given (a file it writes
// there is lost), and a write grant that nobody (as which it runs under a
// root toolshelf) cannot write; a write grant not made yet is made.
func TestSandboxHints(t *testing.T) {
	dir := t.TempDir()
	granted := filepath.Join(dir, "granted")
	closed := filepath.Join(dir, "closed")
	os.MkdirAll(granted, 0o777)
	os.Chmod(granted, 0o777)
	os.MkdirAll(closed, 0o755)
	made := filepath.Join(dir, "made", "here")
	cfg := &Plan{ServerConfig: config.ServerConfig{Name: "memory", Command: "/bin/sh", Cwd: dir,
		Env:        map[string]string{"MEMORY_FILE_PATH": "/tmp/lost/memory.jsonl", "DATA_DIR": granted + "/graph.jsonl", "MODE": "fast"},
		WritePaths: []string{granted, closed, made}}}
	madeGrants(cfg, false, nil)
	if !isDir(made) {
		t.Errorf("a write grant not made yet was not made: %s", made)
	}
	hints := strings.Join(planSandbox(cfg, []string{"HOME=" + dir + "/home"}, nil).hints(cfg, true), "\n")
	for _, want := range []string{
		`its env MEMORY_FILE_PATH names /tmp/lost/memory.jsonl, which the contained server does not see`,
		`add "/tmp/lost" to its "paths": {"write"}`,
		closed + `" in "paths": {"write"} is not writable by nobody`,
		"chown 65534:65534 " + closed,
	} {
		if !strings.Contains(hints, want) {
			t.Errorf("no %q in the hints:\n%s", want, hints)
		}
	}
	if strings.Contains(hints, "DATA_DIR") || strings.Contains(hints, "MODE") || strings.Contains(hints, granted+`" in`) {
		t.Errorf("a hint about what is fine:\n%s", hints)
	}
}

// The fence of the host's addresses refuses what it cannot do: without
// nsenter it stops the start (the server does not run with the host in
// reach), and an address that is not IPv4 is refused before any route is
// asked for.
func TestFenceRefusesWhatItCannotDo(t *testing.T) {
	if err := prohibitRoutes([]string{"::1"}); err == nil || !strings.Contains(err.Error(), "not an IPv4 address") {
		t.Errorf("an IPv6 address: %v", err)
	}
	addrs, err := HostAddresses()
	if err != nil || len(addrs) == 0 {
		t.Skipf("the host has no address but the loopback's to fence: %v", err)
	}
	t.Setenv("PATH", t.TempDir())
	if err := fenceHost(os.Getpid(), nil); err == nil || !strings.Contains(err.Error(), "nsenter") {
		t.Errorf("without nsenter: %v", err)
	}
}
