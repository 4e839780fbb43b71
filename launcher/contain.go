package launcher

import (
	"crypto/sha256"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/toolshelf/toolshelf/config"
	"github.com/toolshelf/toolshelf/internal/folders"
)

// A contained stdio server runs inside bubblewrap (bwrap), the sandbox
// Flatpak and Anthropic's sandbox runtime use: in PID, IPC, UTS and
// cgroup namespaces of its own (and a network namespace with "network":
// false), with a file system that holds the system's programs and
// libraries read-only, a few files of /etc a program needs to reach the
// network, its own /proc, /dev and /tmp, an empty home, and nothing else
// but what it is given: its cwd and runtime read-only, its package
// manager's cache, and the paths of its "paths". toolshelf's own files
// (Options.Hide, Secrets.Files, its configuration, cache and state
// folders) are covered even when a grant holds them. When toolshelf runs
// as root, the server runs as nobody (setpriv drops the id inside the
// sandbox, once bwrap has made the mounts as root). docs/design.md says
// why bwrap, and what a contained server can and cannot reach.

// Containment is how a stdio server runs: contained, or not and why.
type Containment struct {
	Contained bool
	// Engine names the container engine that contains it ("docker",
	// "podman"), for a server started as ENGINE run …; "" for bwrap.
	Engine string
	// Why says why a server runs uncontained ("" when contained, or for a
	// server that is not a process).
	Why string
}

// nobody is the id a contained server runs as when toolshelf is root.
const nobody = 65534

// systemDirs are bound read-only into every sandbox: programs, libraries
// and the runtimes installed with the system.
var systemDirs = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/nix/store"}

// etcFiles are what a program reads of /etc to run and to reach the
// network: names, certificates, the time zone, the loader's cache. The
// rest of /etc (which may hold toolshelf's or others' configuration) is
// not there.
var etcFiles = []string{
	"/etc/resolv.conf", "/etc/hosts", "/etc/nsswitch.conf", "/etc/host.conf", "/etc/gai.conf",
	"/etc/passwd", "/etc/group", "/etc/localtime", "/etc/timezone",
	"/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d",
	"/etc/ssl", "/etc/ca-certificates", "/etc/pki", "/etc/crypto-policies",
	"/etc/protocols", "/etc/services", "/etc/mime.types", "/etc/os-release", "/etc/alternatives",
	"/etc/nodejs", "/etc/python3",
}

// packageCaches are the folders a package runner keeps what it fetched
// in, under the home folder, by the runner's name: a server started with
// npx runs from npx's cache, which npx also writes.
var packageCaches = map[string][]string{
	"npx":  {".npm"},
	"npm":  {".npm"},
	"pnpm": {".local/share/pnpm", ".cache/pnpm"},
	"yarn": {".yarn", ".cache/yarn"},
	"bunx": {".bun"},
	"bun":  {".bun"},
	"uvx":  {".cache/uv", ".local/share/uv"},
	"uv":   {".cache/uv", ".local/share/uv"},
	"pipx": {".local/pipx", ".local/share/pipx"},
	"deno": {".cache/deno"},
}

// sandboxPlan is what a contained server is given, in the order the
// mounts are made.
type sandboxPlan struct {
	home       string
	read       []string // bound read-only
	write      []string // bound writable
	hide       []string // covered (files by /dev/null, folders by an empty one)
	cwd        string
	noNetwork  bool
	asNobody   bool // toolshelf is root: drop to nobody inside
	setpriv    string
	missing    []string // granted paths that do not exist
	cwdSkipped bool     // the cwd is the home folder or above it, so not given
	cwdEmpty   bool     // the cwd is the configuration's folder by default: not given
	// ownNet: the server gets a network namespace of its own, which
	// slirp4netns connects outward with no route to the host's loopback
	// (see netns.go); bwrap then says the sandbox's pid on its fd 4 and
	// waits on fd 5 until the network is there.
	ownNet bool
	// coveredFor are toolshelf's files not made yet whose granted
	// folder is covered in their stead.
	coveredFor []string
	// caches are the package runner's caches of the server's own:
	// {folder on the host, where the runner looks for it}, writable.
	caches [][2]string
	// ports are the host's loopback ports granted ("hostPorts"), and
	// hostPorts their sockets on the host, forwarder the program that
	// offers them in the sandbox (see hostports.go).
	ports     []int
	hostPorts *hostPorts
	forwarder string
	// envFile holds the variables a container engine's run passes by
	// name (see engine.go), removed when the server stops.
	envFile string
	// env is the server's environment, set inside the sandbox only
	// (see hostenv.go); nil for a plan that runs no server (the probe).
	env []string
	// heldInWrite are toolshelf's files inside a write grant:
	// {grant, file}. The server is refused (see sandboxed): covering is
	// not enough where it may write, since it could plant a link or a
	// file at a path toolshelf opens later.
	heldInWrite [][2]string
}

// planSandbox decides what a contained server sees. environ is the
// server's own environment (for PATH and HOME); hide are toolshelf's own
// files.
func planSandbox(cfg *Plan, environ []string, hide []string) *sandboxPlan {
	p := &sandboxPlan{home: clean(envValue(environ, "HOME")), cwd: clean(cfg.Cwd), noNetwork: cfg.NoNetwork, ports: cfg.HostPorts}
	if p.home == "/" || under(p.home, systemDirs) {
		p.home = ""
	}
	p.runtime(cfg, envValue(environ, "PATH"))
	p.program(cfg)
	if p.home != "" && cfg.CacheDir != "" {
		// A package runner's cache of the server's own, where the runner
		// looks for it (~/.npm for npx): one server cannot change what
		// another runs, and npx started by root (running as nobody)
		// writes a cache it owns.
		for _, rel := range packageCaches[filepath.Base(cfg.Command)] {
			p.caches = append(p.caches, [2]string{filepath.Join(cfg.CacheDir, strings.ReplaceAll(rel, "/", "_")), filepath.Join(p.home, rel)})
		}
	}
	p.grants(cfg)
	given := slices.Concat(p.read, p.write)
	for _, h := range hide {
		p.cover(clean(h), given)
	}
	return p
}

// outside reports whether dir may be given as it is: not the root, a
// system folder, the home folder or a folder that holds it.
func (p *sandboxPlan) outside(dir string) bool {
	return dir != "" && dir != "/" && !under(dir, systemDirs) && !slices.Contains(systemDirs, dir) &&
		dir != p.home && !strings.HasPrefix(p.home, dir+"/")
}

// runtime gives the command as found on the server's PATH, and the
// interpreter its first line names (#!/usr/bin/env node), read-only.
func (p *sandboxPlan) runtime(cfg *Plan, path string) {
	for _, prog := range []string{cfg.Command, interpreter(lookPath(cfg.Command, path, p.cwd))} {
		if prog == "" {
			continue
		}
		found := lookPath(prog, path, p.cwd)
		if prefix := installPrefix(found); p.outside(prefix) {
			p.read = append(p.read, prefix)
		} else if real, err := filepath.EvalSymlinks(found); err == nil && prefix != "" && !under(real, systemDirs) {
			// Installed in the home folder or above it (a binary in the
			// home's parent, a checkout's bin): the program alone, not
			// the folder that holds the home.
			p.read = append(p.read, real)
		}
		// A version manager's shim (pyenv, asdf, mise, rbenv) runs the
		// manager, which reads its root: given read-only.
		if root := managerRoot(found); p.outside(root) {
			p.read = append(p.read, root)
		}
	}
}

// program gives the program the server runs: an argument naming a file
// (node's script, python's) brings the package it is part of; in a
// folder given by default (the configuration's), only the file and its
// modules.
func (p *sandboxPlan) program(cfg *Plan) {
	for _, a := range cfg.Args {
		file := anchor(a, p.cwd)
		pkg := packageOf(file, p.home)
		switch {
		case pkg == "" || under(pkg, systemDirs):
		case cfg.CwdDefault && (pkg == p.cwd || under(p.cwd, []string{pkg})):
			p.read = append(p.read, file)
			if m := filepath.Join(pkg, "node_modules"); pkg == p.cwd && isDir(m) {
				p.read = append(p.read, m)
			}
		default:
			p.read = append(p.read, pkg)
		}
	}
}

// grants gives the cwd (unless it is the home folder or above it, or the
// configuration's folder by default) and the paths the configuration
// grants; a granted path that does not exist is noted.
func (p *sandboxPlan) grants(cfg *Plan) {
	if p.cwd != "" {
		switch {
		case p.cwd == "/" || p.cwd == p.home || strings.HasPrefix(p.home, p.cwd+"/"):
			p.cwdSkipped = true
		case cfg.CwdDefault:
			p.cwdEmpty = true // runs there, given nothing of it
		default:
			p.read = append(p.read, p.cwd)
		}
	}
	for _, r := range cfg.ReadPaths {
		if r = anchor(r, p.cwd); exists(r) {
			p.read = append(p.read, r)
		} else {
			p.missing = append(p.missing, r)
		}
	}
	for _, w := range cfg.WritePaths {
		if w = anchor(w, p.cwd); exists(w) {
			p.write = append(p.write, w)
		} else {
			p.missing = append(p.missing, w)
		}
	}
}

// cover keeps a file toolshelf holds from the server: noted when a write
// grant holds it (the server is then refused), covered when any grant
// holds it; one not made yet has its folder covered, or it would be seen
// once made (or, in a write grant, planted first). given are the grants.
func (p *sandboxPlan) cover(h string, given []string) {
	if h == "" {
		return
	}
	for _, w := range p.write {
		if h == w || under(h, []string{w}) {
			p.heldInWrite = append(p.heldInWrite, [2]string{w, h})
		}
	}
	if !under(h, given) && !slices.Contains(given, h) {
		return
	}
	if exists(h) {
		p.hide = append(p.hide, h)
		return
	}
	dir := filepath.Dir(h)
	for !exists(dir) && dir != "/" {
		dir = filepath.Dir(dir)
	}
	if !slices.Contains(p.hide, dir) {
		p.hide = append(p.hide, dir)
		p.coveredFor = append(p.coveredFor, h)
	}
}

// args are bwrap's arguments for the plan, up to the server's command.
func (p *sandboxPlan) args() []string {
	m := &mounts{}
	m.add("--die-with-parent", "--new-session",
		"--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try")
	if !p.asNobody {
		// An unprivileged bwrap needs a user namespace; the server may not
		// make another (where it would hold every capability).
		m.add("--unshare-user", "--disable-userns")
	}
	if p.noNetwork || p.ownNet || len(p.ports) > 0 {
		m.add("--unshare-net")
	}
	fd := 3
	if p.env != nil {
		// The server's variables, read from fd 3: not in bwrap's
		// command line, which every user of the host may read.
		m.add("--clearenv", "--args", strconv.Itoa(fd))
		fd++
	}
	if p.ownNet && !p.noNetwork {
		m.add("--info-fd", strconv.Itoa(fd), "--block-fd", strconv.Itoa(fd+1))
	}
	for _, d := range systemDirs {
		if exists(d) {
			m.bind("--ro-bind", d)
		}
	}
	for _, f := range etcFiles {
		if exists(f) {
			m.bind("--ro-bind", f)
		}
	}
	m.add("--proc", "/proc", "--dev", "/dev")
	m.tmpfs("1777", "/tmp")
	m.tmpfs("1777", "/var/tmp")
	if p.home != "" {
		// An empty home with the usual folders: .NET, for one, takes a
		// missing ~/.local/share for none and writes into the cwd.
		m.tmpfs("0777", p.home)
		for _, d := range []string{".cache", ".config", ".local", ".local/share", ".local/state"} {
			m.add("--perms", "0777", "--dir", filepath.Join(p.home, d))
			m.made = append(m.made, filepath.Join(p.home, d))
		}
		for _, c := range p.caches {
			m.parents(c[1])
			m.add("--bind", c[0], c[1])
			m.made = append(m.made, c[1])
		}
	}
	// Outer folders first, so that a grant inside another is mounted
	// over it, not under it.
	binds := slices.Concat(p.read, p.write)
	slices.SortStableFunc(binds, func(x, y string) int { return strings.Count(x, "/") - strings.Count(y, "/") })
	for _, b := range slices.Compact(binds) {
		if slices.Contains(p.write, b) {
			m.bind("--bind", b)
		} else {
			m.bind("--ro-bind", b)
		}
	}
	if p.hostPorts != nil {
		m.parents(forwarderPath)
		m.add("--ro-bind", p.forwarder, forwarderPath, "--ro-bind", p.hostPorts.dir, portsPath)
	}
	for _, h := range p.hide {
		if isDir(h) {
			m.add("--tmpfs", h, "--remount-ro", h)
		} else {
			m.add("--ro-bind", "/dev/null", h)
		}
	}
	if p.cwd != "" {
		if p.cwdSkipped || p.cwdEmpty {
			m.parents(p.cwd + "/")
		}
		m.add("--chdir", p.cwd)
	}
	m.add("--")
	if p.asNobody {
		m.add(p.setpriv, "--reuid", strconv.Itoa(nobody), "--regid", strconv.Itoa(nobody), "--clear-groups",
			"--inh-caps=-all", "--bounding-set=-all", "--no-new-privs", "--")
	}
	return m.args
}

// mounts builds bwrap's arguments, making the folders that lead to each
// mount point itself: bwrap would make them readable by their owner only,
// and a server running as nobody could not pass them.
type mounts struct {
	args  []string
	binds []string // bound paths: what is inside exists
	made  []string // folders made or mounted as tmpfs
}

func (m *mounts) add(args ...string) { m.args = append(m.args, args...) }

func (m *mounts) bind(how, path string) {
	m.parents(path)
	m.add(how, path, path)
	m.binds = append(m.binds, path)
}

func (m *mounts) tmpfs(perms, path string) {
	m.parents(path)
	m.add("--perms", perms, "--tmpfs", path)
	m.made = append(m.made, path)
}

// parents makes the folders above path that no mount holds yet.
func (m *mounts) parents(path string) {
	for i := 1; i < len(path); i++ {
		if path[i] != '/' {
			continue
		}
		dir := path[:i]
		if slices.Contains(m.binds, dir) || under(dir, m.binds) {
			return // inside a bound folder: it exists there
		}
		if !slices.Contains(m.made, dir) {
			m.add("--perms", "0755", "--dir", dir)
			m.made = append(m.made, dir)
		}
	}
}

// packageOf is the folder a program file belongs to, for an argument
// that names a file: up to the outermost node_modules in its path (where
// its dependencies are), else the nearest folder above it with a
// package's manifest, else its own folder; never the home folder or
// above it. "" when the argument is no file.
func packageOf(arg, home string) string {
	if arg == "" || strings.HasPrefix(arg, "-") {
		return ""
	}
	if st, err := os.Stat(arg); err != nil || !st.Mode().IsRegular() {
		return ""
	}
	if i := strings.Index(arg, "/node_modules/"); i > 0 {
		return arg[:i+len("/node_modules")]
	}
	for dir := filepath.Dir(arg); dir != "/" && dir != home && !strings.HasPrefix(home, dir+"/"); dir = filepath.Dir(dir) {
		for _, m := range []string{"package.json", "pyproject.toml", "setup.py", "go.mod", "Cargo.toml", "node_modules"} {
			if exists(filepath.Join(dir, m)) {
				return dir
			}
		}
	}
	if dir := filepath.Dir(arg); dir != home && dir != "/" && !strings.HasPrefix(home, dir+"/") {
		return dir
	}
	return ""
}

// lookPath finds a command as the server's PATH would; "" when not found.
func lookPath(cmd, path, cwd string) string {
	if cmd == "" {
		return ""
	}
	if strings.Contains(cmd, "/") {
		return anchor(cmd, cwd)
	}
	for _, dir := range filepath.SplitList(path) {
		if dir == "" {
			continue
		}
		f := filepath.Join(anchor(dir, cwd), cmd)
		if st, err := os.Stat(f); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
			return f
		}
	}
	return ""
}

// installPrefix is the folder a program is installed in, after links:
// X for X/bin/prog (node's, python's and a virtualenv's layout), else
// the program's folder.
func installPrefix(prog string) string {
	if prog == "" {
		return ""
	}
	real, err := filepath.EvalSymlinks(prog)
	if err != nil {
		return ""
	}
	dir := filepath.Dir(real)
	if filepath.Base(dir) == "bin" {
		return filepath.Dir(dir)
	}
	return dir
}

// managerRoot is the root of the version manager whose shim prog is
// (pyenv's ~/.pyenv, rbenv's, asdf's ~/.asdf, mise's ~/.local/share/mise:
// X for X/shims/prog, before links), or "": a shim runs the manager,
// which picks the real runtime from under its root.
func managerRoot(prog string) string {
	if prog == "" {
		return ""
	}
	if dir := filepath.Dir(prog); filepath.Base(dir) == "shims" {
		return clean(filepath.Dir(dir))
	}
	return ""
}

// interpreter is the program a script's first line runs ("node" for
// "#!/usr/bin/env node"), or "".
func interpreter(file string) string {
	f, err := os.Open(file)
	if err != nil {
		return ""
	}
	defer f.Close()
	buf := make([]byte, 256)
	n, _ := f.Read(buf)
	line, _, _ := strings.Cut(string(buf[:n]), "\n")
	rest, ok := strings.CutPrefix(line, "#!")
	if !ok {
		return ""
	}
	fields := strings.Fields(rest)
	if len(fields) == 0 {
		return ""
	}
	if filepath.Base(fields[0]) == "env" {
		for _, f := range fields[1:] {
			if !strings.HasPrefix(f, "-") {
				return f
			}
		}
		return ""
	}
	return fields[0]
}

// under reports whether path is inside one of dirs (not equal to it).
func under(path string, dirs []string) bool { return config.Under(path, dirs) }

func anchor(p, dir string) string { return config.Anchor(p, dir) }

func clean(p string) string { return config.Clean(p) }

func exists(p string) bool { _, err := os.Stat(p); return err == nil }

func isDir(p string) bool { st, err := os.Stat(p); return err == nil && st.IsDir() }

// containment says how the server runs, or would run once started.
func (c *Plan) Containment() Containment {
	switch {
	case c.TransportName() != "stdio" || c.Dial != nil:
		return Containment{}
	case c.NoContain:
		return Containment{Why: `"contain": false in its configuration`}
	case c.Uncontained != "":
		return Containment{Why: c.Uncontained}
	case config.EngineOf(&c.ServerConfig) != "":
		return Containment{Contained: true, Engine: config.EngineOf(&c.ServerConfig)} // its flags were checked (checkEngine)
	}
	if sb := findSandbox(); sb.why != "" {
		return Containment{Why: sb.why}
	}
	return Containment{Contained: true}
}

// sandboxed returns the command that starts a contained server: bwrap
// with the server's plan and command, and the plan; plan is nil when it
// runs uncontained. Granted paths that do not exist are logged.
func sandboxed(cfg *Plan, environ []string, logger *slog.Logger) (name string, args []string, plan *sandboxPlan, err error) {
	if c := cfg.Containment(); !c.Contained || c.Engine != "" {
		return "", nil, nil, nil
	}
	// Found here, as exec would, so that a missing command is said as
	// plainly as uncontained; the sandbox runs it by its full path,
	// which holds whatever the server's PATH is inside.
	command, err := findCommand(cfg.Command, envValue(environ, "PATH"), cfg.Cwd)
	if err != nil {
		return "", nil, nil, startError(cfg.Command, err)
	}
	sb := findSandbox()
	madeGrants(cfg, sb.asNobody, logger)
	plan = planSandbox(cfg, environ, cfg.Hide)
	plan.asNobody, plan.setpriv = sb.asNobody, sb.setpriv
	if logger != nil {
		for _, hint := range plan.hints(cfg, sb.asNobody) {
			logger.Warn(hint)
		}
	}
	if len(plan.heldInWrite) > 0 {
		g := plan.heldInWrite[0]
		return "", nil, nil, fmt.Errorf("\"paths\": {\"write\"} grants %s, which holds %s, a file toolshelf keeps (a server that may write there could replace it, or plant a link where toolshelf will write): grant a folder that does not hold it, or keep the file elsewhere", g[0], g[1])
	}
	plan.ownNet = sb.slirp != "" && !plan.noNetwork && !cfg.HostNetwork
	for _, c := range plan.caches {
		if err := makeCache(c[0], sb.asNobody); err != nil {
			return "", nil, nil, fmt.Errorf("the server's package cache %s: %w", c[0], err)
		}
	}
	if len(plan.ports) > 0 {
		if sb.slirp == "" && !plan.noNetwork && logger != nil {
			logger.Warn("slirp4netns is not installed: the server reaches its \"hostPorts\" and nothing else (install it for a way out)", "server", cfg.Name)
		}
		if plan.forwarder, err = os.Executable(); err != nil {
			return "", nil, nil, fmt.Errorf("the program that offers \"hostPorts\" in the sandbox: %w", err)
		}
		if plan.hostPorts, err = openHostPorts(plan.ports); err != nil {
			return "", nil, nil, fmt.Errorf("\"hostPorts\": %w", err)
		}
	}
	if logger != nil {
		for _, m := range plan.missing {
			logger.Warn("a path granted in \"paths\" does not exist; the server does not get it", "path", m)
		}
		if plan.cwdSkipped {
			logger.Warn("the server's cwd is the home folder or above it, which a contained server does not see; give it a folder of its own (\"cwd\") and what it needs in \"paths\"", "cwd", cfg.Cwd)
		}
		for _, f := range plan.coveredFor {
			logger.Warn("a file toolshelf will write is in a folder the server is granted; the folder is covered in the server's sandbox", "file", f, "folder", filepath.Dir(f))
		}
	}
	plan.env = environ
	run := []string{command}
	if _, loader := sandboxSetenv(environ); len(loader) > 0 {
		run = slices.Concat([]string{envProgram}, loader, run)
	}
	if plan.hostPorts != nil {
		run = append(forwarderArgs(plan.ports), run...)
	}
	return sb.bwrap, slices.Concat(plan.args(), run, cfg.Args), plan, nil
}

// close ends what a started server's plan holds on the host: its ports'
// sockets.
func (p *sandboxPlan) close() {
	if p != nil {
		p.hostPorts.close()
		if p.envFile != "" {
			os.RemoveAll(filepath.Dir(p.envFile))
		}
	}
}

// madeGrants makes the folders "paths": {"write"} names that are not
// there yet: owned by nobody when the server runs as nobody (toolshelf is
// root), so that it can write them. A folder that exists is left as it is
// (see hints).
func madeGrants(cfg *Plan, asNobody bool, logger *slog.Logger) {
	for _, w := range cfg.WritePaths {
		w = anchor(w, cfg.Cwd)
		if w == "" || exists(w) {
			continue
		}
		if err := os.MkdirAll(w, 0o755); err != nil {
			continue // reported as a missing grant
		}
		if asNobody {
			os.Chown(w, nobody, nobody)
		}
		if logger != nil {
			logger.Info("made the folder \"paths\": {\"write\"} names", "path", w)
		}
	}
}

// hints are what a person should know before the server runs and fails
// on it: a write grant the server (as nobody) cannot write, and a path
// the server's environment names that it is not given (its /tmp and home
// are its own: a file written there is lost when it stops).
func (p *sandboxPlan) hints(cfg *Plan, asNobody bool) []string {
	var out []string
	if asNobody {
		for _, w := range p.write {
			if st, err := os.Stat(w); err == nil && !writableByNobody(st) {
				out = append(out, fmt.Sprintf("server %s: %q in \"paths\": {\"write\"} is not writable by nobody, as which the contained server runs (toolshelf is root): run chown %d:%d %s (or chmod o+w)", cfg.Name, w, nobody, nobody, w))
			}
		}
	}
	given := slices.Concat(p.read, p.write)
	out = append(out, p.argHints(cfg, given)...)
	for _, k := range sortedKeys(cfg.Env) {
		v := cfg.Env[k]
		if !filepath.IsAbs(v) || strings.ContainsAny(v, ":\n") {
			continue
		}
		v = filepath.Clean(v)
		dir := v
		if !isDir(v) {
			dir = filepath.Dir(v)
		}
		if under(v, systemDirs) || slices.Contains(given, dir) || under(dir, given) || dir == p.cwd && !p.cwdEmpty {
			continue
		}
		out = append(out, fmt.Sprintf("server %s: its env %s names %s, which the contained server does not see (what it writes there is lost when it stops): add %q to its \"paths\": {\"write\"}", cfg.Name, k, v, dir))
	}
	return out
}

// argHints say which paths the server's arguments name that it is not
// granted: Claude Desktop's "npx -y …/server-filesystem /home/me/projects"
// starts, contained, with no such folder, and the server's own error
// ("None of the specified directories are accessible") says nothing of
// why. Each says the exact "paths" line that grants it.
func (p *sandboxPlan) argHints(cfg *Plan, given []string) []string {
	var out []string
	home := envValue(cfg.Environ, "HOME")
	for _, a := range cfg.Args {
		if rest, ok := strings.CutPrefix(a, "~/"); ok && home != "" {
			a = filepath.Join(home, rest)
		}
		if !filepath.IsAbs(a) || strings.ContainsAny(a, ":\n") || under(a, systemDirs) || slices.Contains(systemDirs, a) {
			continue
		}
		a = clean(a)
		dir := a
		if !isDir(a) && (exists(a) || filepath.Ext(a) != "") {
			dir = filepath.Dir(a)
		}
		if slices.Contains(given, dir) || under(dir, given) || slices.Contains(given, a) || dir == p.cwd && !p.cwdEmpty {
			continue
		}
		out = append(out, fmt.Sprintf("server %s: its argument %s names a path the contained server is not granted, so it will not find it: add \"paths\": {\"write\": [%q]} (or \"read\") to its configuration", cfg.Name, a, dir))
	}
	return out
}

// GrantHints are what a person should know of each contained server's
// grants before it runs (see hints): a write grant the server cannot
// write, a path its arguments or environment name that it is not given.
// list, doctor and serve say the same.
func (cfg *Plan) GrantHints() []string {
	if c := cfg.Containment(); !c.Contained || c.Engine != "" || cfg.TransportName() != "stdio" || cfg.Dial != nil {
		return nil
	}
	sb := findSandbox()
	return planSandbox(cfg, cfg.Environ, cfg.Hide).hints(cfg, sb.asNobody)
}

// writableByNobody reports whether nobody may write a folder.
func writableByNobody(st os.FileInfo) bool {
	return st.Mode().Perm()&0o002 != 0 || ownerOf(st) == nobody && st.Mode().Perm()&0o200 != 0
}

// makeCache makes a server's package cache, its own: owned by nobody
// when the server runs as nobody (toolshelf is root), so that npm, which
// refuses a cache owned by another user, writes it. (Its folders above
// need not be passable: bwrap binds it before the server runs.)
func makeCache(dir string, asNobody bool) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	if asNobody {
		return os.Chown(dir, nobody, nobody)
	}
	return nil
}

// CacheDir is the folder of a server's own package caches: under
// toolshelf's cache folder as getenv places it (which no server sees), by
// a name safe as a path that no two servers share; "" without a cache
// folder.
func CacheDir(getenv func(string) string, server string) string {
	dir := folders.Cache(getenv)
	if dir == "" {
		return ""
	}
	safe := []byte(server)
	for i, c := range safe {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			safe[i] = '_'
		}
	}
	sum := sha256.Sum256([]byte(server))
	return filepath.Join(dir, "servers", fmt.Sprintf("%.40s-%x", safe, sum[:4]))
}

// findCommand finds a command as exec.LookPath would on the server's
// PATH, with exec's errors.
func findCommand(cmd, path, cwd string) (string, error) {
	if strings.Contains(cmd, "/") {
		p := anchor(cmd, cwd)
		st, err := os.Stat(p)
		switch {
		case err != nil:
			return "", os.ErrNotExist
		case st.IsDir() || st.Mode()&0o111 == 0:
			return "", os.ErrPermission
		}
		return p, nil
	}
	if p := lookPath(cmd, path, cwd); p != "" {
		return p, nil
	}
	return "", exec.ErrNotFound
}

// envValue is a variable's value in an environment list.
func envValue(environ []string, name string) string {
	v, _ := lookupEnv(environ, name)
	return v
}
