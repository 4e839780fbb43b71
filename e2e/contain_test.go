package e2e

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolshelf/toolshelf/internal/mcptest"
	"github.com/toolshelf/toolshelf/internal/testenv"
)

// hostileSetup is a gateway in front of the hostile server (mcptest's
// Hostile) and a second server with a key of its own, with every secret
// toolshelf can hold: an admin token, a profile token, a store URL with a
// password and a store key, all given as files, as the README shows.
type hostileSetup struct {
	dir, home, grant, secretFile string
	config, lock                 string
	pid                          int // the gateway's
	url                          string
	admin, profileToken          string
	secrets                      map[string]string // what must never come back, by name
	// granted is a service on the host's loopback whose port the hostile
	// server is granted (the gateway run as another user only), and
	// other one whose port it is not.
	granted, other string
}

func newHostileSetup(t *testing.T, contain bool, flags ...string) *hostileSetup {
	return newHostileSetupAs(t, contain, nil, flags...)
}

// newHostileSetupAs runs the gateway as user (nil: the test's own): the
// setup's files are then readable by all, and the binaries are copied
// where that user may run them.
func newHostileSetupAs(t *testing.T, contain bool, user *syscall.Credential, flags ...string) *hostileSetup {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	gateway := toolshelf
	dir := t.TempDir()
	if user != nil {
		os.Chmod(filepath.Dir(dir), 0o755) // the test's folder, above dir
		os.Chmod(dir, 0o755)
		bin := filepath.Join(dir, "bin")
		os.Mkdir(bin, 0o755)
		exe, gateway = copyExecutable(t, exe, bin), copyExecutable(t, toolshelf, bin)
	}
	h := &hostileSetup{dir: dir, home: filepath.Join(dir, "home"), grant: filepath.Join(dir, "granted"),
		admin: "admin-" + strings.Repeat("a1b2", 8), profileToken: "ci-token-" + strings.Repeat("c3d4", 8)}
	h.secrets = map[string]string{
		"admin token":   h.admin,
		"profile token": h.profileToken,
		"store key":     base64.StdEncoding.EncodeToString([]byte("0123456789abcdef0123456789abcdef")),
		"store URL":     "postgres://toolshelf:Pg-pass-9f8e7d6c@127.0.0.1:1/toolshelf",
		"other's key":   "other-server-key-5a6b7c8d9e0f",
	}
	for _, d := range []string{h.home, filepath.Join(h.home, ".ssh"), h.grant, filepath.Join(dir, "secrets"), filepath.Join(dir, "work")} {
		os.MkdirAll(d, 0o755)
	}
	// A server running as nobody (toolshelf is root here) writes its
	// grant only if nobody may.
	os.Chmod(h.grant, 0o777)
	mode := os.FileMode(0o600)
	if user != nil {
		mode = 0o644
	}
	write := func(path, s string) {
		if err := os.WriteFile(path, []byte(s), mode); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(h.home, ".ssh", "id_ed25519"), "PRIVATE KEY of the user")
	h.secretFile = filepath.Join(dir, "secrets", "ci-token")
	write(h.secretFile, h.profileToken+"\n")
	write(filepath.Join(dir, "secrets", "admin-token"), h.admin+"\n")
	write(filepath.Join(dir, "secrets", "store-key"), h.secrets["store key"]+"\n")
	write(filepath.Join(dir, "secrets", "other-key"), h.secrets["other's key"]+"\n")
	hostile := map[string]any{
		"command": exe, "cwd": filepath.Join(dir, "work"),
		"env":     map[string]string{mcptest.ModeEnv: "hostile"},
		"timeout": testenv.Timeout(20 * time.Second).String(),
		"paths":   map[string]any{"write": []string{h.grant}},
	}
	if user != nil {
		h.granted = testenv.LineServer(t, func(string) string { return "the granted port answers" })
		h.other = testenv.LineServer(t, func(string) string { return "another port answers" })
		_, port, _ := net.SplitHostPort(h.granted)
		p, _ := strconv.Atoi(port)
		hostile["network"] = map[string]any{"hostPorts": []int{p}}
	}
	if !contain {
		hostile = map[string]any{"command": exe, "cwd": filepath.Join(dir, "work"), "contain": false,
			"env": map[string]string{mcptest.ModeEnv: "hostile"}, "timeout": testenv.Timeout(20 * time.Second).String()}
	}
	cfg := map[string]any{
		"mcpServers": map[string]any{
			"hostile": hostile,
			"other": map[string]any{"command": exe, "timeout": testenv.Timeout(20 * time.Second).String(),
				"env": map[string]string{mcptest.ModeEnv: "serve", mcptest.ToolsEnv: "ping", "OTHER_API_KEY": "${file:secrets/other-key}"}},
		},
		"profiles": map[string]any{"ci": map[string]any{"servers": []string{"hostile"}, "tokens": []string{"${file:secrets/ci-token}"}}},
	}
	b, _ := json.Marshal(cfg)
	h.config = filepath.Join(dir, "servers.json")
	write(h.config, string(b))
	h.lock = filepath.Join(dir, "toolshelf.lock")
	write(h.lock, `{"version":1,"servers":{}}`)

	cmd := exec.Command(gateway, append([]string{"serve", "--config", h.config, "--http", "127.0.0.1:0", "--auth-token-file", filepath.Join(dir, "secrets", "admin-token")}, flags...)...)
	cmd.Env = append(os.Environ(), "HOME="+h.home,
		"TOOLSHELF_STORE_KEY_FILE="+filepath.Join(dir, "secrets", "store-key"))
	if user != nil {
		state := testenv.WritableDir(t)
		cmd.Env = append(cmd.Env, "XDG_CACHE_HOME="+state, "XDG_STATE_HOME="+state, "XDG_CONFIG_HOME="+state)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: user}
	}
	base := testenv.Listening(t, cmd, "the gateway", testenv.URLLine)
	h.url, h.pid = base, cmd.Process.Pid
	return h
}

// bearer adds a token to every request.
type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// client connects as the ci profile, which may use the hostile server only.
func (h *hostileSetup) client(t *testing.T, ctx context.Context) *mcp.ClientSession {
	t.Helper()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "ci", Version: "1"}, nil).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: h.url + "/ci", HTTPClient: &http.Client{Transport: bearer{h.profileToken}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// call calls a hostile tool through call_tool and returns its text.
func call(t *testing.T, ctx context.Context, cs *mcp.ClientSession, tool string, args map[string]any) string {
	t.Helper()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "call_tool", Arguments: map[string]any{"name": "mcp__hostile__" + tool, "arguments": args}})
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// TestContainedServerReachesNothing runs each attempt of a hostile stdio
// server, contained: every one fails.
func TestContainedServerReachesNothing(t *testing.T) {
	needBwrap(t)
	h := newHostileSetup(t, true)
	ctx, cancel := context.WithTimeout(context.Background(), testenv.Timeout(2*time.Minute))
	defer cancel()
	cs := h.client(t, ctx)
	gw := strconv.Itoa(h.pid)
	// The other server's process, which the hostile one must not see.
	other := otherServerPID(t, h.pid)

	refused := func(t *testing.T, out string) {
		t.Helper()
		if !strings.HasPrefix(out, "refused:") {
			t.Errorf("got through: %.300s", out)
		}
	}
	for name, path := range map[string]string{
		"gateway environ":     "/proc/" + gw + "/environ",
		"gateway cmdline":     "/proc/" + gw + "/cmdline",
		"gateway mem":         "/proc/" + gw + "/mem",
		"gateway fd":          "/proc/" + gw + "/fd",
		"gateway root":        "/proc/" + gw + "/root/",
		"other server":        "/proc/" + other + "/environ",
		"configuration":       h.config,
		"lock file":           h.lock,
		"token file":          h.secretFile,
		"state folder":        os.Getenv("XDG_STATE_HOME"),
		"cache folder":        os.Getenv("XDG_CACHE_HOME"),
		"configuration home":  os.Getenv("XDG_CONFIG_HOME"),
		"ssh key":             filepath.Join(h.home, ".ssh", "id_ed25519"),
		"the user's home":     filepath.Join(h.home, ".ssh"),
		"the test's own tree": h.dir + "/secrets",
	} {
		t.Run("read "+name, func(t *testing.T) { refused(t, call(t, ctx, cs, "read", map[string]any{"path": path})) })
	}
	t.Run("list processes", func(t *testing.T) {
		out := call(t, ctx, cs, "processes", nil)
		if strings.Contains(out, "serve --config") || strings.Contains(out, mcptest.ModeEnv) || len(strings.Split(out, "\n")) > 4 {
			t.Errorf("sees processes outside its sandbox:\n%s", out)
		}
	})
	t.Run("write outside its grant", func(t *testing.T) {
		for _, p := range []string{filepath.Join(h.dir, "planted"), filepath.Join(h.home, ".bashrc"), filepath.Join(h.dir, "work", "planted")} {
			call(t, ctx, cs, "write", map[string]any{"path": p, "text": "x"})
			if _, err := os.Stat(p); err == nil {
				t.Errorf("wrote %s", p)
			}
		}
	})
	t.Run("write inside its grant", func(t *testing.T) {
		p := filepath.Join(h.grant, "note")
		if out := call(t, ctx, cs, "write", map[string]any{"path": p, "text": "granted"}); strings.HasPrefix(out, "refused") {
			t.Fatal(out)
		}
		if b, err := os.ReadFile(p); err != nil || string(b) != "granted" {
			t.Errorf("the granted folder does not hold the note: %q, %v", b, err)
		}
	})
	t.Run("runs without privileges", func(t *testing.T) {
		// Under a root toolshelf, as nobody; else as the user itself.
		uid := strconv.Itoa(os.Getuid())
		if uid == "0" {
			uid = "65534"
		}
		status := call(t, ctx, cs, "read", map[string]any{"path": "/proc/self/status"})
		if !regexp.MustCompile(`(?m)^Uid:\s+`+uid+`\s+`+uid+`\s+`+uid+`\s+`+uid+`$`).MatchString(status) || !regexp.MustCompile(`(?m)^CapEff:\s+0+$`).MatchString(status) {
			t.Errorf("the server's ids and capabilities:\n%s", status)
		}
	})
	t.Run("signal or trace the gateway", func(t *testing.T) {
		refused(t, call(t, ctx, cs, "signal", map[string]any{"pid": gw}))
		refused(t, call(t, ctx, cs, "ptrace", map[string]any{"pid": gw}))
		// Its parent inside the sandbox is bwrap's, not the gateway.
		refused(t, call(t, ctx, cs, "ptrace", map[string]any{"pid": "1"}))
	})
	t.Run("harvest in any encoding", func(t *testing.T) { noSecret(t, h, call(t, ctx, cs, "harvest", nil)) })
	t.Run("reach the gateway on loopback", func(t *testing.T) {
		if _, err := exec.LookPath("slirp4netns"); err != nil {
			t.Skip("needs slirp4netns (apt install slirp4netns); CI installs it")
		}
		// The gateway's /mcp on 127.0.0.1, which it could call as any
		// local process, and through it another server's tools.
		u, _ := url.Parse(h.url)
		post := "POST /mcp HTTP/1.0\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}"
		refused(t, call(t, ctx, cs, "connect", map[string]any{"address": u.Host, "line": post}))
		refused(t, call(t, ctx, cs, "connect", map[string]any{"address": "10.0.2.2:" + u.Port(), "line": post}))
	})
}

// TestUncontainedServerCannotReadNonDumpableGateway runs the /proc
// attempts with containment off: toolshelf made itself non-dumpable, so
// a server of the same user still cannot read its environment, memory or
// descriptors (its command line is the kernel's to show; it holds no
// secret when secrets come from files).
func TestUncontainedServerCannotReadNonDumpableGateway(t *testing.T) {
	var user *syscall.Credential
	if os.Geteuid() == 0 {
		// Root reads any process's /proc: the gateway and its server run
		// as nobody, a user without privileges.
		user = &syscall.Credential{Uid: 65534, Gid: 65534}
	}
	h := newHostileSetupAs(t, false, user)
	ctx, cancel := context.WithTimeout(context.Background(), testenv.Timeout(2*time.Minute))
	defer cancel()
	cs := h.client(t, ctx)
	gw := strconv.Itoa(h.pid)
	for _, f := range []string{"environ", "mem", "fd", "root/", "cwd/", "maps"} {
		if out := call(t, ctx, cs, "read", map[string]any{"path": "/proc/" + gw + "/" + f}); !strings.HasPrefix(out, "refused:") {
			t.Errorf("/proc/%s/%s: got through: %.200s", gw, f, out)
		}
	}
	refusedPtrace := call(t, ctx, cs, "ptrace", map[string]any{"pid": gw})
	if !strings.HasPrefix(refusedPtrace, "refused:") {
		t.Errorf("ptrace of the gateway: %s", refusedPtrace)
	}
	out := call(t, ctx, cs, "read", map[string]any{"path": "/proc/" + gw + "/cmdline"})
	for name, s := range h.secrets {
		if strings.Contains(out, s) {
			t.Errorf("the gateway's command line holds the %s", name)
		}
	}
}

// noSecret fails if out holds any of the setup's secrets in any encoding
// the hostile server uses.
func noSecret(t *testing.T, h *hostileSetup, out string) {
	t.Helper()
	squeezed := regexp.MustCompile(`\s+`).ReplaceAllString(out, "")
	for name, s := range h.secrets {
		rev := []rune(s)
		slices.Reverse(rev)
		for _, enc := range []string{s, base64.StdEncoding.EncodeToString([]byte(s)), hex.EncodeToString([]byte(s)), string(rev)} {
			if strings.Contains(out, enc) || strings.Contains(squeezed, enc) {
				t.Errorf("the %s came back (as %.20s…)", name, enc)
			}
		}
	}
}

// otherServerPID finds the pid of the other server, a child of the
// gateway whose environment names serve mode.
func otherServerPID(t *testing.T, gateway int) string {
	t.Helper()
	var found string
	testenv.Eventually(t, 20*time.Second, "the other server to start", func() bool {
		entries, _ := os.ReadDir("/proc")
		for _, e := range entries {
			if _, err := strconv.Atoi(e.Name()); err != nil {
				continue
			}
			env, _ := os.ReadFile("/proc/" + e.Name() + "/environ")
			if strings.Contains(string(env), mcptest.ModeEnv+"=serve") && strings.Contains(string(env), "OTHER_API_KEY") {
				found = e.Name()
				return true
			}
		}
		return false
	})
	return found
}

// TestPinnedServersRunContained: the 20 pinned npm servers of
// examples/servers.json start contained and list their tools.
func TestPinnedServersRunContained(t *testing.T) {
	needBwrap(t)
	testenv.RequireNPM(t, "testdata/servers")
	src, _ := filepath.Abs("../examples/servers.json")
	cfg := testenv.ScaledConfig(t, src, 30*time.Second)
	out, err := exec.Command(toolshelf, "list", "--config", cfg, "--json").Output()
	if err != nil {
		t.Fatalf("toolshelf list: %v\n%s", err, out)
	}
	var rep struct {
		Servers []struct {
			Name, State, Uncontained string
			Contained                bool
			Tools                    int
		}
		Tools int
	}
	if err := json.Unmarshal(out, &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Servers) != 20 {
		t.Fatalf("%d servers, want 20", len(rep.Servers))
	}
	for _, s := range rep.Servers {
		if s.State != "ready" || !s.Contained || s.Tools == 0 {
			t.Errorf("%s: %s, contained %v (%s), %d tools", s.Name, s.State, s.Contained, s.Uncontained, s.Tools)
		}
	}
	t.Logf("%d servers contained, %d tools", len(rep.Servers), rep.Tools)
}

// TestContainedRealServersWriteOnlyWhereGranted: server-filesystem writes
// in the folder it may write, and the sandbox refuses a write to a folder
// it may only read (the server itself would allow it: it was given both);
// server-memory writes its file where it is granted.
func TestContainedRealServersWriteOnlyWhereGranted(t *testing.T) {
	needBwrap(t)
	testenv.RequireNPM(t, "testdata/servers")
	servers, _ := filepath.Abs("../testdata/servers")
	writable, readonly, memory := testenv.WritableDir(t), testenv.WritableDir(t), testenv.WritableDir(t)
	os.WriteFile(filepath.Join(readonly, "kept.txt"), []byte("as it was"), 0o644)
	cfg := map[string]any{"mcpServers": map[string]any{
		"filesystem": map[string]any{
			"command": "node", "args": []string{"node_modules/@modelcontextprotocol/server-filesystem/dist/index.js", writable, readonly},
			"cwd": servers, "paths": map[string]any{"write": []string{writable}, "read": []string{readonly}},
			"timeout": testenv.Timeout(30 * time.Second).String(),
		},
		"memory": map[string]any{
			"command": "node", "args": []string{"node_modules/@modelcontextprotocol/server-memory/dist/index.js"},
			"cwd": servers, "env": map[string]string{"MEMORY_FILE_PATH": filepath.Join(memory, "graph.jsonl")},
			"paths": map[string]any{"write": []string{memory}}, "timeout": testenv.Timeout(30 * time.Second).String(),
		},
	}}
	b, _ := json.Marshal(cfg)
	path := filepath.Join(t.TempDir(), "servers.json")
	os.WriteFile(path, b, 0o644)
	url := testenv.RunHTTPScript(t, gatewayScript(t, path, "--http", "127.0.0.1:0"))
	ctx, cancel := context.WithTimeout(context.Background(), testenv.Timeout(2*time.Minute))
	defer cancel()
	cs := connectMCP(t, ctx, url)
	callText := func(tool string, args map[string]any) (string, bool) {
		// call_tool waits for a server still starting.
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "call_tool", Arguments: map[string]any{"name": tool, "arguments": args}})
		if err != nil {
			t.Fatalf("%s: %v", tool, err)
		}
		var b strings.Builder
		for _, c := range res.Content {
			if tc, ok := c.(*mcp.TextContent); ok {
				b.WriteString(tc.Text)
			}
		}
		return b.String(), res.IsError
	}
	if out, isErr := callText("mcp__filesystem__write_file", map[string]any{"path": filepath.Join(writable, "new.txt"), "content": "written"}); isErr {
		t.Errorf("write in the granted folder failed: %s", out)
	}
	if got, _ := os.ReadFile(filepath.Join(writable, "new.txt")); string(got) != "written" {
		t.Errorf("the granted folder holds %q", got)
	}
	out, isErr := callText("mcp__filesystem__write_file", map[string]any{"path": filepath.Join(readonly, "kept.txt"), "content": "overwritten"})
	if got, _ := os.ReadFile(filepath.Join(readonly, "kept.txt")); string(got) != "as it was" || !isErr {
		t.Errorf("a write to a read-only grant went through (%q): %s", got, out)
	}
	if out, isErr := callText("mcp__filesystem__read_text_file", map[string]any{"path": filepath.Join(readonly, "kept.txt")}); isErr || !strings.Contains(out, "as it was") {
		t.Errorf("reading a read-only grant: %s", out)
	}
	if out, isErr := callText("mcp__memory__create_entities", map[string]any{"entities": []map[string]any{{"name": "toolshelf", "entityType": "project", "observations": []string{"runs servers contained"}}}}); isErr {
		t.Fatalf("create_entities: %s", out)
	}
	if got, _ := os.ReadFile(filepath.Join(memory, "graph.jsonl")); !strings.Contains(string(got), "runs servers contained") {
		t.Errorf("server-memory's file in its grant holds %q", got)
	}
}

func needBwrap(t testing.TB) {
	t.Helper()
	if _, err := exec.LookPath("bwrap"); err != nil {
		t.Skip("needs bubblewrap (apt install bubblewrap); CI installs it")
	}
}

// copyExecutable copies an executable into dir, readable and runnable by
// all, and returns its path.
func copyExecutable(t *testing.T, src, dir string) string {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(dir, filepath.Base(src))
	testenv.WriteScript(t, dst, string(b))
	return dst
}

// TestAttackChainGetsNoSecret is the attack of issue 38 end to end: a
// client of the ci profile has the hostile server harvest what it can,
// read toolshelf's files and those of the user, and a run_code program
// put it all together in every encoding; no secret toolshelf holds comes
// back, whatever the server writes it as.
func TestAttackChainGetsNoSecret(t *testing.T) {
	t.Run("contained", func(t *testing.T) {
		needBwrap(t)
		attackChain(t, newHostileSetup(t, true, "--code"))
	})
	// Uncontained, the server reads the secret files itself: the second
	// wall, cutting every secret in every form it knows, holds.
	t.Run("uncontained", func(t *testing.T) { attackChain(t, newHostileSetup(t, false, "--code")) })
}

func attackChain(t *testing.T, h *hostileSetup) {
	ctx, cancel := context.WithTimeout(context.Background(), testenv.Timeout(2*time.Minute))
	defer cancel()
	cs := h.client(t, ctx)
	var paths []string
	for _, p := range []string{h.config, h.lock, h.secretFile, filepath.Join(h.dir, "secrets", "admin-token"), filepath.Join(h.dir, "secrets", "store-key"),
		filepath.Join(h.dir, "secrets", "other-key"), "/proc/1/environ", "/proc/" + strconv.Itoa(h.pid) + "/environ", "/proc/" + strconv.Itoa(h.pid) + "/cmdline"} {
		paths = append(paths, strconv.Quote(p))
	}
	program := `const out = [];
for (const p of [` + strings.Join(paths, ",") + `]) { out.push(await tools.hostile.read({path: p})); }
out.push(await tools.hostile.harvest({}));
const all = out.map(r => typeof r === "string" ? r : JSON.stringify(r)).join("\n");
return all + "\n" + all.split("").reverse().join("") + "\n" + all.split("").join(" ");`
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "run_code", Arguments: map[string]any{"code": program}})
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	if res.IsError || b.Len() == 0 {
		t.Fatalf("the program did not run as planned (error %v): %.3000s", res.IsError, b.String())
	}
	noSecret(t, h, b.String())
}

// TestRoutesFailClosedOverHTTP: serve --console without a token makes one
// and prints a sign-in link; every route refuses a rebinding Host; the
// metrics and health details need the token; a secret on the command
// line is warned about.
func TestRoutesFailClosedOverHTTP(t *testing.T) {
	cfg := serverConfig(t, t.TempDir(), "svc", "ping", nil)
	cmd := exec.Command(toolshelf, "serve", "--config", cfg, "--http", "127.0.0.1:0", "--console")
	signIn := testenv.Listening(t, cmd, "the gateway", regexp.MustCompile(`^\s+(http://\S+/console/login\?token=([0-9a-f]{64}))$`))
	base := signIn[:strings.Index(signIn, "/console/")]
	token := signIn[strings.Index(signIn, "token=")+len("token="):]
	do := func(path, host, bearer string) int {
		req, _ := http.NewRequest("GET", base+path, nil)
		if host != "" {
			req.Host = host
		}
		if bearer != "" {
			req.Header.Set("Authorization", "Bearer "+bearer)
		}
		resp, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	port := base[strings.LastIndex(base, ":"):]
	for _, path := range []string{"/mcp", "/metrics", "/healthz", "/console/", "/console/login", "/console/quarantine"} {
		if got := do(path, "rebound.attacker.example"+port, token); got != http.StatusForbidden {
			t.Errorf("%s with a rebinding Host: %d, want 403", path, got)
		}
	}
	if got := do("/metrics", "", ""); got != http.StatusUnauthorized {
		t.Errorf("/metrics without the token: %d, want 401", got)
	}
	if got := do("/metrics", "localhost"+port, token); got != http.StatusOK {
		t.Errorf("/metrics with the made token on localhost: %d", got)
	}
	if got := do("/console/", "", token); got != http.StatusOK {
		t.Errorf("the console with the made token: %d", got)
	}
}

// TestSecretOnCommandLineWarned: --auth-token is warned about at start,
// --auth-token-file is not, and the token never appears in the log.
func TestSecretOnCommandLineWarned(t *testing.T) {
	cfg := serverConfig(t, t.TempDir(), "svc", "ping", nil)
	tokenFile := filepath.Join(t.TempDir(), "token")
	os.WriteFile(tokenFile, []byte("file-token-0123456789abcdef\n"), 0o600)
	for _, c := range []struct {
		flags []string
		warn  bool
	}{
		{[]string{"--auth-token", "flag-token-0123456789abcdef"}, true},
		{[]string{"--auth-token-file", tokenFile}, false},
	} {
		var stderr testenv.Buffer
		cmd := exec.Command(toolshelf, append([]string{"serve", "--config", cfg, "--http", "127.0.0.1:0"}, c.flags...)...)
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		testenv.Eventually(t, 20*time.Second, "serve to log its URL", func() bool { return strings.Contains(stderr.String(), "url=") })
		cmd.Process.Signal(os.Interrupt)
		cmd.Wait()
		log := stderr.String()
		if warned := strings.Contains(log, "a secret was given on the command line"); warned != c.warn {
			t.Errorf("%v: warned %v:\n%s", c.flags, warned, log)
		}
		if strings.Contains(log, "0123456789abcdef") {
			t.Errorf("%v: the token is in the log:\n%s", c.flags, log)
		}
	}
}

// TestContainedAsOrdinaryUser runs the gateway as a user without
// privileges (the desktop case; CI is root, so the test runs it as
// nobody): bwrap then makes a user namespace, slirp4netns joins it to
// give the server its network, and the server still reaches neither the
// gateway's files nor its loopback.
func TestContainedAsOrdinaryUser(t *testing.T) {
	needBwrap(t)
	if os.Geteuid() != 0 {
		t.Skip("runs the gateway as another user: needs root to switch to nobody")
	}
	h := newHostileSetupAs(t, true, &syscall.Credential{Uid: 65534, Gid: 65534})
	ctx, cancel := context.WithTimeout(context.Background(), testenv.Timeout(2*time.Minute))
	defer cancel()
	cs := h.client(t, ctx)
	for _, path := range []string{h.config, filepath.Join(h.dir, "secrets", "admin-token"), "/proc/" + strconv.Itoa(h.pid) + "/environ"} {
		if out := call(t, ctx, cs, "read", map[string]any{"path": path}); !strings.HasPrefix(out, "refused:") {
			t.Errorf("read %s: got through: %.200s", path, out)
		}
	}
	if _, err := exec.LookPath("slirp4netns"); err == nil {
		u, _ := url.Parse(h.url)
		if out := call(t, ctx, cs, "connect", map[string]any{"address": u.Host, "line": "GET / HTTP/1.0\r\n"}); !strings.HasPrefix(out, "refused:") {
			t.Errorf("the gateway's loopback: got through: %.200s", out)
		}
		if out := call(t, ctx, cs, "read", map[string]any{"path": "/proc/net/dev"}); !strings.Contains(out, "tap0") {
			t.Errorf("no network of its own:\n%.300s", out)
		}
		// Nor the host at its other addresses, where a service listens
		// on every interface.
		everywhere := testenv.TCPServerOn(t, "0.0.0.0:0", func(c net.Conn) {
			c.Write([]byte("a service on every interface answers\n"))
			c.Close()
		})
		port := everywhere[strings.LastIndex(everywhere, ":")+1:]
		addrs, _ := net.InterfaceAddrs()
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() {
				if out := call(t, ctx, cs, "connect", map[string]any{"address": n.IP.String() + ":" + port, "line": "hi"}); !strings.HasPrefix(out, "refused:") {
					t.Errorf("the host at %s: got through: %.200s", n.IP, out)
				}
			}
		}
	}
	// Its granted port of the host's loopback, and no other.
	if out := call(t, ctx, cs, "connect", map[string]any{"address": h.granted, "line": "hi"}); !strings.Contains(out, "the granted port answers") {
		t.Errorf("its granted port: %.200s", out)
	}
	if out := call(t, ctx, cs, "connect", map[string]any{"address": h.other, "line": "hi"}); !strings.HasPrefix(out, "refused:") {
		t.Errorf("a port not granted: got through: %.200s", out)
	}
	status := call(t, ctx, cs, "read", map[string]any{"path": "/proc/self/status"})
	if !regexp.MustCompile(`(?m)^CapEff:\s+0+$`).MatchString(status) {
		t.Errorf("the server's capabilities:\n%s", status)
	}
}

// Claude Desktop's commonest line, a filesystem server naming the folder
// it serves, through toolshelf import: the folder is granted (and import
// says so), the server runs contained, and a real client writes a file
// in it.
func TestImportedFolderIsGranted(t *testing.T) {
	needBwrap(t)
	testenv.RequireNPM(t, "testdata/servers")
	servers, _ := filepath.Abs("../testdata/servers")
	projects := testenv.WritableDir(t)
	desktop := filepath.Join(t.TempDir(), "claude_desktop_config.json")
	b, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"filesystem": map[string]any{
		"command": "node", "args": []string{filepath.Join(servers, "node_modules/@modelcontextprotocol/server-filesystem/dist/index.js"), projects},
	}}})
	os.WriteFile(desktop, b, 0o644)
	cmd := exec.Command(toolshelf, "import", "claude-desktop", "--from", desktop)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil || !strings.Contains(stderr.String(), "granted "+projects) {
		t.Fatalf("import: %v\n%s\n%s", err, out, stderr.String())
	}
	var conf map[string]map[string]map[string]any
	json.Unmarshal(out, &conf)
	conf["mcpServers"]["filesystem"]["timeout"] = testenv.Timeout(30 * time.Second).String()
	b, _ = json.Marshal(conf)
	path := filepath.Join(t.TempDir(), "servers.json")
	os.WriteFile(path, b, 0o644)
	url := testenv.RunHTTPScript(t, gatewayScript(t, path, "--http", "127.0.0.1:0"))
	ctx, cancel := context.WithTimeout(context.Background(), testenv.Timeout(2*time.Minute))
	defer cancel()
	cs := connectMCP(t, ctx, url)
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "call_tool", Arguments: map[string]any{"name": "mcp__filesystem__write_file",
		"arguments": map[string]any{"path": filepath.Join(projects, "notes.md"), "content": "written through toolshelf"}}})
	if err != nil || res.IsError {
		t.Fatalf("write_file: %v %+v", err, res)
	}
	if got, _ := os.ReadFile(filepath.Join(projects, "notes.md")); string(got) != "written through toolshelf" {
		t.Errorf("the folder holds %q", got)
	}
}
