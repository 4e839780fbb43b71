package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolshelf/toolshelf/internal/mcptest"
	"github.com/toolshelf/toolshelf/internal/testenv"
	"github.com/toolshelf/toolshelf/ledger"
)

// hostileText is a tool description that would run script if a page
// took it for markup.
const hostileText = `Open a ticket in the tracker. <script>window.__pwned=1</script><img src=x onerror="window.__pwned=1">`

// The console in Debian's chromium, headless, against a gateway process
// with real servers: server-memory (npm), a tracker (a go-sdk server in a
// subprocess) whose create_ticket changed since it was pinned, and a
// flaky server that will not come back once stopped. The servers page
// lists them with token bars; the playground ranks the expected tool
// first and explains it; the changed tool waits in quarantine with its
// diff, and Approve lets call_tool reach it through /mcp; the flaky
// server turns red without a reload; the hostile description runs no
// script anywhere. Screenshots of the pages go to $TOOLSHELF_SCREENSHOTS
// when set (docs/ holds the README's).
func TestConsoleInBrowser(t *testing.T) {
	t.Parallel()
	chrome := testenv.Chromium(t)
	requireClients(t)
	dir := t.TempDir()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	memory, _ := filepath.Abs("../testdata/servers/node_modules/@modelcontextprotocol/server-memory/dist/index.js")
	pidFile := filepath.Join(dir, "flaky.pid")
	memoryDir := testenv.WritableDir(t)
	timeout := testenv.Timeout(20 * time.Second).String()
	config := func(describe string) string {
		cfg := filepath.Join(dir, "servers.json")
		b, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{
			"memory": map[string]any{"command": "node", "args": []string{memory}, "env": map[string]string{"MEMORY_FILE_PATH": filepath.Join(memoryDir, "memory.jsonl")},
				"paths": map[string]any{"write": []string{memoryDir}}, "timeout": timeout},
			"tracker": map[string]any{"command": exe, "timeout": timeout, "env": map[string]string{
				mcptest.ModeEnv: "serve", mcptest.ToolsEnv: "create_ticket,close_ticket", mcptest.DescribeEnv: "create_ticket=" + describe}},
			// Up once; after that it fails to start, as a server whose
			// backend went away.
			// Uncontained: it keeps its mark and pid in the test's folder.
			"flaky": map[string]any{"command": "/bin/sh", "timeout": timeout, "contain": false,
				"args": []string{"-c", `if [ -e "$MARK" ]; then echo "the backend is gone <b class=injected>bold</b><img class=injected src=x onerror=window.__pwned=1>" >&2; exit 1; fi; : > "$MARK"; exec "$EXE"`},
				"env": map[string]string{"MARK": filepath.Join(dir, "flaky.mark"), "EXE": exe, mcptest.ModeEnv: "serve",
					mcptest.ToolsEnv: "ping_backend", mcptest.PIDEnv: pidFile}},
		}})
		if err := os.WriteFile(cfg, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	// Pin the tracker's tools as they were, then change one.
	env := []string{"XDG_CACHE_HOME=" + filepath.Join(dir, "cache"), "XDG_STATE_HOME=" + filepath.Join(dir, "state"), "XDG_CONFIG_HOME=" + filepath.Join(dir, "config")}
	pinning := exec.Command(toolshelf, "list", "--config", config("Open a ticket in the tracker."))
	pinning.Env = append(os.Environ(), env...)
	if out, err := pinning.CombinedOutput(); err != nil {
		t.Fatalf("pinning: %v\n%s", err, out)
	}
	os.Remove(filepath.Join(dir, "flaky.mark"))
	cfg := config(hostileText)
	// No --auth-token: serve makes one and prints the sign-in link, which
	// the browser opens first, as a person would.
	signIn := testenv.Listening(t, exec.Command(testenv.ServeScript(t, toolshelf, map[string]string{"XDG_STATE_HOME": filepath.Join(dir, "state")}, cfg, "--http", "127.0.0.1:0", "--console", "--audit", filepath.Join(dir, "audit.jsonl"))),
		"the gateway", regexp.MustCompile(`^\s+(http://\S+/console/login\?token=[0-9a-f]{64})$`))
	base := signIn[:strings.Index(signIn, "/console/")] + "/console"
	url := strings.TrimSuffix(base, "/console") + "/mcp"

	ctx, cancel := context.WithTimeout(context.Background(), testenv.Timeout(2*time.Minute))
	defer cancel()
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chrome), chromedp.NoSandbox, chromedp.WindowSize(1100, 800))
	alloc, stopAlloc := chromedp.NewExecAllocator(ctx, opts...)
	defer stopAlloc()
	browser, stopBrowser := chromedp.NewContext(alloc)
	defer stopBrowser()
	do := func(what string, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(browser, steps...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	pageText := func(sel string) string {
		t.Helper()
		s, err := chromedp.Run(browser, chromedp.Text(chromedp.CSS(sel)))
		if err != nil {
			t.Fatalf("the text of %s: %v", sel, err)
		}
		return s
	}
	shots := os.Getenv("TOOLSHELF_SCREENSHOTS")
	shot := func(name string) {
		t.Helper()
		png, err := chromedp.Run(browser, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatalf("screenshot %s: %v", name, err)
		}
		d := shots
		if d == "" {
			d = dir
		}
		if err := os.WriteFile(filepath.Join(d, "console-"+name+".png"), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	pwned := func() bool {
		t.Helper()
		safe, err := chromedp.Run(browser, chromedp.Evaluate[bool](`window.__pwned === undefined`))
		if err != nil {
			t.Fatalf("reading window.__pwned: %v", err)
		}
		return !safe
	}

	// Servers: every server, ready, with its token bar.
	do("the servers page",
		chromedp.Navigate(signIn),
		chromedp.WaitVisible(chromedp.CSS(`tr[data-server="memory"].ok`)),
		chromedp.WaitVisible(chromedp.CSS(`tr[data-server="flaky"].ok`)))
	bars, err := chromedp.Run(browser, chromedp.Evaluate[int](`document.querySelectorAll("meter.bar").length`))
	if err != nil || bars < 3 {
		t.Errorf("%d token bars, want one per server (%v)", bars, err)
	}
	offers, err := chromedp.Run(browser, chromedp.TextContent(chromedp.CSS(`tr[data-server="memory"] details.listed`)))
	if err != nil || !strings.Contains(offers, "mcp__memory__create_entities") {
		t.Errorf("memory's row does not list its tools: %q", offers)
	}
	shot("servers")

	// The playground: the expected tool first, explained on click.
	do("the search playground",
		chromedp.Navigate(base+"/search?q=create+entities+in+the+knowledge+graph"),
		chromedp.WaitVisible(chromedp.CSS(`.hits li .name`)))
	first := pageText(`.hits li:first-child .name`)
	do("opening the first result",
		chromedp.Click(chromedp.CSS(`.hits li:first-child summary`)),
		chromedp.WaitVisible(chromedp.CSS(`.hits li:first-child table.explain`)))
	if explain := pageText(`.hits li:first-child table.explain`); first != "mcp__memory__create_entities" || !strings.Contains(explain, "entit") || !strings.Contains(explain, "name boost") {
		t.Errorf("the playground ranked %q first, explained %q", first, explain)
	}
	shot("search")

	// The changed tool waits in quarantine; its text is shown, not run.
	const held = `section[data-tool="mcp__tracker__create_ticket"]`
	do("the quarantine page", chromedp.Navigate(base+"/quarantine"), chromedp.WaitVisible(chromedp.CSS(held)))
	if diff := pageText(held + ` .diff`); !strings.Contains(diff, "<script>") || pwned() {
		t.Errorf("the hostile description: shown %q, ran %v", diff, pwned())
	}
	shot("quarantine")
	// The flaky server runs uncontained, so /mcp on loopback needs the
	// admin token too: the one the link carries, kept for clients.
	token := signIn[strings.Index(signIn, "token=")+len("token="):]
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "console-test", Version: "1"}, nil).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: bearer{token}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	callTicket := func() *mcp.CallToolResult {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "call_tool", Arguments: map[string]any{"name": "mcp__tracker__create_ticket", "arguments": map[string]any{}}})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	if res := callTicket(); !res.IsError || !strings.Contains(text(res), "quarantined") {
		t.Fatalf("the quarantined tool answered: %s", text(res))
	}
	do("approving",
		chromedp.Click(chromedp.CSS(`button[aria-label="Approve mcp__tracker__create_ticket"]`)),
		chromedp.WaitVisible(chromedp.CSS(`.done`)))
	if res := callTicket(); res.IsError {
		t.Errorf("after Approve, call_tool: %s", text(res))
	}
	do("searching for the approved tool", chromedp.Navigate(base+"/search?q=open+a+ticket"), chromedp.WaitVisible(chromedp.CSS(`.hits li .name`)))
	if pwned() {
		t.Error("a tool description ran script on the search page")
	}

	// The flaky server stops, cannot start again, and turns red on the
	// open page.
	do("the servers page again", chromedp.Navigate(base+"/"), chromedp.WaitVisible(chromedp.CSS(`tr[data-server="flaky"].ok`)))
	pid, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	n, _ := strconv.Atoi(strings.TrimSpace(string(pid)))
	if err := syscall.Kill(n, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	do("the failed server turning red", chromedp.WaitVisible(chromedp.CSS(`tr[data-server="flaky"].failed`)))
	if why := pageText(`tr[data-server="flaky"] .state`); why != "failed" && why != "restarting" {
		t.Errorf("the flaky server's state: %q", why)
	}
	// Its error, markup and all, is text: the check is of the DOM, since
	// the CSP would keep an injected handler from running anyway.
	// Its first error is the kill; then its restart fails with what it
	// printed, which the open page shows without a reload.
	var why string
	testenv.Eventually(t, 30*time.Second, "the flaky server's restart error on the page", func() bool {
		// Read in one step: the table may be replaced between two.
		why, _ = chromedp.Run(browser, chromedp.Evaluate[string](`(document.querySelector('tr[data-server="flaky"] .why') || {}).textContent || ""`))
		return strings.Contains(why, "backend is gone")
	})
	if !strings.Contains(why, "<b class=injected>bold</b>") {
		t.Errorf("the flaky server's error is not shown as text: %q", why)
	}
	injected, err := chromedp.Run(browser, chromedp.Evaluate[int](`document.querySelectorAll(".injected").length`))
	if err != nil || injected != 0 {
		t.Errorf("a server's error became %d elements of the page (%v)", injected, err)
	}
	if pwned() {
		t.Error("script ran on the servers page")
	}
	// What happens next, and what a person can do.
	do("the failed server's next try", chromedp.WaitVisible(chromedp.CSS(`tr[data-server="flaky"] .next button`)))
	if hint := pageText(`tr[data-server="flaky"] .hint`); !strings.Contains(hint, "toolshelf doctor flaky") {
		t.Errorf("the failed server's hint: %q", hint)
	}
	shot("servers-failed")
	// Retry now tries it at once (it fails again: the page says it was
	// asked), and the hint's command exists and says what it printed.
	do("Retry now", chromedp.Click(chromedp.CSS(`tr[data-server="flaky"] .next button`)), chromedp.WaitVisible(chromedp.CSS(`.done`)))
	if done := pageText(`.done`); !strings.Contains(done, "retrying flaky") {
		t.Errorf("after Retry now: %q", done)
	}
	doctor := exec.Command(toolshelf, "doctor", "--config", cfg, "flaky")
	doctor.Env = append(os.Environ(), env...)
	if out, _ := doctor.CombinedOutput(); !strings.Contains(string(out), "the backend is gone") {
		t.Errorf("the hint's toolshelf doctor flaky does not say what the server printed:\n%s", out)
	}
	// A server added to the file appears on the open page, without a
	// reload or a new sign-in.
	var doc map[string]map[string]any
	b, _ := os.ReadFile(cfg)
	json.Unmarshal(b, &doc)
	doc["mcpServers"]["notes"] = map[string]any{"command": exe, "timeout": timeout, "network": false,
		"env": map[string]string{mcptest.ModeEnv: "serve", mcptest.ToolsEnv: "add_note"}}
	b, _ = json.Marshal(doc)
	os.WriteFile(cfg+".new", b, 0o644)
	os.Rename(cfg+".new", cfg)
	do("the server added to the file", chromedp.WaitVisible(chromedp.CSS(`tr[data-server="notes"].ok`)))
	do("the activity page", chromedp.Navigate(base+"/activity"), chromedp.WaitVisible(chromedp.CSS(`table.activity`)))
	shot("activity")
	// Usage: a proxy's model requests of two weeks (written into the
	// same ledger file, as a proxy on this machine writes them), the
	// gateway's own calls, a budget.
	fillLedger(t, filepath.Join(dir, "state"))
	do("the usage page", chromedp.Navigate(base+"/usage"), chromedp.WaitVisible(chromedp.CSS(`table.people`)))
	if tools := pageText(`ol.tools`); !strings.Contains(tools, "mcp__tracker__create_ticket: 1 call") {
		t.Errorf("the usage page's tools: %q", tools)
	}
	if n, err := chromedp.Run(browser, chromedp.Evaluate[int](`document.querySelectorAll("svg.chart rect").length`)); err != nil || n < 14 {
		t.Errorf("the usage chart has %d bars' parts (%v)", n, err)
	}
	shot("usage")
	do("a page the console does not have", chromedp.Navigate(base+"/servers"), chromedp.WaitVisible(chromedp.CSS(`nav`)))
	if h := pageText(`h1`); h != "No such page" {
		t.Errorf("an unknown page: %q", h)
	}
}

// A new run of serve does not sign everyone out of the console: the key
// its sign-in cookies are signed with is kept in the state folder (0600),
// beside the admin token, as the token is.
func TestConsoleSignInOutlivesARestart(t *testing.T) {
	dir := t.TempDir()
	cmd, env := mcptest.Command("serve", []string{"echo"})
	cfg := filepath.Join(dir, "servers.json")
	b, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"echo": map[string]any{"command": cmd, "env": env, "contain": false}}})
	os.WriteFile(cfg, b, 0o644)
	state := filepath.Join(dir, "state")
	serve := func(line *regexp.Regexp) (found string, stop func()) {
		c := exec.Command(toolshelf, "serve", "--config", cfg, "--http", "127.0.0.1:0", "--console")
		c.Env = append(os.Environ(), "XDG_STATE_HOME="+state, "XDG_CACHE_HOME="+filepath.Join(dir, "cache"))
		found = testenv.Listening(t, c, "the gateway", line)
		return found, func() { c.Process.Signal(os.Interrupt); c.Wait() }
	}
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	signIn, stop := serve(regexp.MustCompile(`^\s+(http://\S+/console/login\?token=[0-9a-f]{64})$`))
	resp, err := noRedirect.Get(signIn)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	var cookie *http.Cookie
	for _, c := range resp.Cookies() {
		cookie = c
	}
	if cookie == nil {
		t.Fatalf("signing in set no cookie: %s", resp.Status)
	}
	stop()
	if st, err := os.Stat(filepath.Join(state, "toolshelf", "console-key")); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("the console's key is not kept for its owner alone: %v %v", st, err)
	}
	mcp, stop := serve(testenv.URLLine)
	defer stop()
	req, _ := http.NewRequest(http.MethodGet, strings.TrimSuffix(mcp, "/mcp")+"/console/", nil)
	req.AddCookie(cookie)
	resp, err = noRedirect.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("the console after a restart, with the earlier sign-in: %s", resp.Status)
	}
}

// fillLedger writes two weeks of three people's model requests into the
// ledger file of the state folder state.
func fillLedger(t *testing.T, state string) {
	t.Helper()
	book, err := ledger.OpenFile(filepath.Join(state, "toolshelf", ledger.FileName))
	if err != nil {
		t.Fatal(err)
	}
	defer book.Close()
	now := time.Now().UTC()
	at := now
	l := ledger.New(book, &ledger.Options{Now: func() time.Time { return at }})
	for day := range 14 {
		for i, person := range []string{"alice@example.com", "bob@example.com", "carol@example.com"} {
			at = now.AddDate(0, 0, -day)
			e := &ledger.Entry{Kind: ledger.KindRound, Who: ledger.Who{Person: person, Profile: "everything"}, Model: "claude-sonnet-4-5",
				Tokens: ledger.Tokens{Input: int64(20_000 * (i + 1) * (1 + day%4)), Output: int64(2_000 * (3 - i)), CacheRead: 50_000}}
			if _, err := l.Admit(context.Background(), e); err != nil {
				t.Fatal(err)
			}
			if err := l.Settle(context.Background(), e); err != nil {
				t.Fatal(err)
			}
		}
	}
}
