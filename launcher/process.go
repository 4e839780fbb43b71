package launcher

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"
)

// MaxFrame bounds one line of a server's stdout. The largest real tools/list
// page seen (Azure, 235 tools) is under 1 MB.
const MaxFrame = 64 << 20

// Process is a running stdio server.
type Process struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout io.ReadCloser // the JSON-RPC lines of the server's stdout
	stderr *tailBuffer   // the end of what the server printed on stderr
	output *tailBuffer   // stdout lines that were not JSON-RPC
	done   chan struct{} // closed when the process has exited
	err    error         // the exit status; read after done is closed
	// contained: it ran in a sandbox (see sandboxed), which a failure
	// to reach a file may come from.
	contained bool
}

// Stdin is the server's standard input; Stdout the JSON-RPC lines of its
// standard output.
func (p *Process) Stdin() io.WriteCloser { return p.stdin }
func (p *Process) Stdout() io.ReadCloser { return p.stdout }

// Done is closed when the process has exited.
func (p *Process) Done() <-chan struct{} { return p.done }

// Output is what the server printed outside JSON-RPC: stray stdout lines,
// then the end of its stderr.
func (p *Process) Output() []byte { return append(p.output.Bytes(), p.stderr.Bytes()...) }

// StderrSaid is the end of what the server said on stderr, at most n
// bytes of its last lines, "" when it said nothing.
func (p *Process) StderrSaid(n int) string { return p.stderr.Said(n) }

// Start starts a stdio server as its plan says. Its stdout is split:
// JSON-RPC lines go to Stdout, anything else (banners, logs that belong
// on stderr) to Output and the log, so that one stray line does not
// break the session.
func Start(cfg *Plan, logger *slog.Logger) (*Process, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	env := cfg.Environ
	if env == nil {
		// Not from a pool: the minimal environment still, never
		// toolshelf's whole one (a nil Env would pass that).
		env = basicEnviron(os.Environ(), cfg.Env)
	}
	if cfg.Cwd != "" {
		// Else exec says the command does not exist, blaming the wrong
		// thing.
		if st, err := os.Stat(cfg.Cwd); err != nil || !st.IsDir() {
			return nil, fmt.Errorf("the server's cwd %s does not exist or is not a folder (\"cwd\" in its configuration)", cfg.Cwd)
		}
	}
	cmd := exec.Command(cfg.Command, cfg.Args...)
	cmd.Env = env
	jailed := false
	name, args, plan, err := sandboxed(cfg, env, logger)
	if err != nil {
		return nil, err
	}
	var net *netns
	var setenv []byte
	var setenvW *os.File
	switch {
	case plan != nil:
		cmd, jailed = exec.Command(name, args...), true
		cmd.Env = sandboxEnv()
		setenv, _ = sandboxSetenv(env)
		r, w, err := os.Pipe()
		if err != nil {
			plan.close()
			return nil, fmt.Errorf("the server's environment: %w", err)
		}
		cmd.ExtraFiles, setenvW = []*os.File{r}, w
		defer r.Close() // the child's end, once started
		if plan.ownNet {
			if net, err = newNetns(cmd); err != nil {
				w.Close()
				plan.close()
				return nil, fmt.Errorf("the server's network: %w", err)
			}
		}
	case cfg.Containment().Engine != "":
		run, err := engineCommand(cfg, env)
		if err != nil {
			return nil, err
		}
		cmd = run.cmd
		plan = &sandboxPlan{envFile: run.envFile}
	}
	cmd.Dir = cfg.Cwd
	setProcessGroup(cmd, jailed)
	p := &Process{
		contained: jailed,
		cmd:       cmd,
		stderr:    newTailBuffer(16 << 10),
		output:    newTailBuffer(256 << 10),
		done:      make(chan struct{}),
	}
	cmd.Stderr = p.stderr
	// A child the server left behind in a session of its own may hold
	// stdout and stderr open forever: once the server has exited, its
	// output gets outputDelay to drain, and then the pipes are closed.
	cmd.WaitDelay = outputDelay
	raw, rawW := io.Pipe()
	cmd.Stdout = rawW
	stdin, err := cmd.StdinPipe()
	if err != nil {
		plan.close()
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		if setenvW != nil {
			setenvW.Close()
		}
		net.close()
		plan.close()
		if namespaceRefused(cmd.SysProcAttr, err) {
			// Once: namespaces are not asked for again.
			if logger != nil {
				logger.Warn("the system refuses PID namespaces; a daemon a server detaches may outlive it", "error", err)
			}
			return Start(cfg, logger)
		}
		return nil, startError(cfg.Command, err)
	}
	if setenvW != nil {
		// bwrap reads its --args before anything else; a pipe holds
		// 64 KiB, and a server's environment may be larger.
		go func() {
			setenvW.Write(setenv)
			setenvW.Close()
		}()
	}
	if net != nil {
		if err := net.attach(findSandbox().slirp, !plan.asNobody); err != nil {
			// The server waits for its network before it runs; without
			// one it does not run.
			signalGroup(cmd, true)
			cmd.Wait()
			net.close()
			plan.close()
			if said := p.stderr.Said(512); said != "" {
				err = fmt.Errorf("%w (stderr: %s)", err, said)
			}
			return nil, fmt.Errorf("the server's network could not be set up: %w", err)
		}
	}
	p.stdin = stdin
	pr, pw := io.Pipe()
	p.stdout = pr
	filtered := make(chan struct{})
	go func() {
		filterStdout(raw, pw, p.output, logger)
		close(filtered)
	}()
	go func() {
		// Reap the server as soon as it exits, whatever its pipes do.
		p.err = cmd.Wait()
		net.close()
		plan.close()
		rawW.Close()
		<-filtered
		close(p.done)
	}()
	return p, nil
}

// fileRefused matches what programs print when a file is not there or
// may not be written.
var fileRefused = regexp.MustCompile(`(?i)ENOENT|EACCES|EROFS|EPERM|no such file|permission denied|read-only file system|operation not permitted`)

// outputDelay is how long a server's output may drain after it exited.
const outputDelay = time.Second

// startError explains a failure to start a command without repeating its
// arguments, which may carry secrets.
func startError(command string, err error) error {
	switch {
	case errors.Is(err, exec.ErrNotFound):
		return fmt.Errorf("command %q not found on PATH", command)
	case errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("command %q does not exist", command)
	case errors.Is(err, os.ErrPermission):
		return fmt.Errorf("command %q is not executable", command)
	}
	return fmt.Errorf("starting %q: %v", command, err)
}

// filterStdout copies the JSON-RPC lines of r to w and the rest to other,
// logging the first few. It closes w when r ends.
func filterStdout(r io.Reader, w *io.PipeWriter, other *tailBuffer, logger *slog.Logger) {
	br := bufio.NewReaderSize(r, 64<<10)
	logged := 0
	var line []byte
	var err error
	for {
		line, err = readLine(br, line[:0])
		if len(line) > 0 {
			if isJSONRPC(line) {
				if _, werr := w.Write(line); werr != nil {
					break // the session is gone; stop copying
				}
			} else {
				other.Write(line)
				if logger != nil && logged < 5 {
					logged++
					logger.Warn("skipped a line on stdout that is not JSON-RPC", "line", truncate(string(bytes.TrimSpace(line)), 200))
				}
			}
		}
		if err != nil {
			break
		}
	}
	if err != nil && err != io.EOF {
		w.CloseWithError(err)
	} else {
		w.Close()
	}
	io.Copy(io.Discard, r) // let the process finish writing
}

// readLine appends the next line of br, with its newline, to buf.
func readLine(br *bufio.Reader, buf []byte) ([]byte, error) {
	for {
		chunk, err := br.ReadSlice('\n')
		buf = append(buf, chunk...)
		if len(buf) > MaxFrame {
			return nil, fmt.Errorf("a line on stdout is longer than %d bytes", MaxFrame)
		}
		if err != bufio.ErrBufferFull {
			return buf, err
		}
	}
}

// isJSONRPC reports whether a stdout line is a JSON-RPC message (or batch).
func isJSONRPC(line []byte) bool {
	t := bytes.TrimSpace(line)
	return len(t) > 0 && (t[0] == '{' || t[0] == '[') && bytes.Contains(t, []byte(`"jsonrpc"`))
}

// Stop ends the process: it closes stdin, which well-behaved servers take
// as the signal to exit, then after grace sends SIGTERM to the process
// group, and SIGKILL a little later. It returns when the process has exited.
func (p *Process) Stop(grace time.Duration) {
	p.stdin.Close()
	p.stdout.Close()
	select {
	case <-p.done:
		return
	case <-time.After(grace):
	}
	signalGroup(p.cmd, false)
	select {
	case <-p.done:
		return
	case <-time.After(2 * time.Second):
	}
	signalGroup(p.cmd, true)
	<-p.done
}

// ExitReason describes how the process ended, with the end of its stderr.
func (p *Process) ExitReason() string {
	reason := "exited"
	if p.err != nil {
		reason = p.err.Error()
	}
	if hint := missingModule(p.stderr.Tail(16<<10), p.cmd.Dir); hint != "" {
		return reason + "; " + hint
	}
	tail := p.stderr.Said(512)
	if tail != "" {
		reason += "; stderr: " + tail
	}
	if p.contained && fileRefused.MatchString(tail) {
		reason += ` (it runs contained: it sees only its cwd, its runtime and program, and the folders its configuration gives in "paths"; give it what it needs there, or "contain": false)`
	}
	return reason
}

// missingModule turns Node's stack trace for a package that is not
// installed (the usual first failure of a configuration whose servers
// were never installed) into one line that says what to do, or "".
func missingModule(stderr, dir string) string {
	if !strings.Contains(stderr, "MODULE_NOT_FOUND") && !strings.Contains(stderr, "ERR_MODULE_NOT_FOUND") {
		return ""
	}
	module := ""
	for _, prefix := range []string{"Cannot find module '", "Cannot find package '"} {
		if _, rest, ok := strings.Cut(stderr, prefix); ok {
			module, _, _ = strings.Cut(rest, "'")
			break
		}
	}
	where := "in the server's folder"
	if dir != "" {
		where = "in " + dir
	}
	return fmt.Sprintf("its Node package is not installed (cannot find %s): run npm ci, or npm install, %s", truncate(module, 200), where)
}

// tailBuffer keeps the last max bytes written to it. It is safe for
// concurrent use.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func newTailBuffer(max int) *tailBuffer { return &tailBuffer{max: max} }

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	if over := len(b.buf) - b.max; over > 0 {
		b.buf = append(b.buf[:0], b.buf[over:]...)
	}
	return len(p), nil
}

// Bytes returns a copy of the contents.
func (b *tailBuffer) Bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return bytes.Clone(b.buf)
}

// Tail returns up to the last n bytes, trimmed, on one line.
func (b *tailBuffer) Tail(n int) string {
	data := b.Bytes()
	if len(data) > n {
		data = data[len(data)-n:]
	}
	return strings.Join(strings.Fields(string(data)), " ")
}

// Said is the last n bytes of what a server said on stderr, less what a
// package runner adds that says nothing of why the server failed: npm's
// notices (a newer npm is out) and its complaints about its own logs
// (whose folder a contained server may not write). npm's own error
// lines (a 404 for a misspelt package) are kept.
func (b *tailBuffer) Said(n int) string {
	var kept []string
	for _, line := range strings.Split(string(b.Bytes()), "\n") {
		t := strings.TrimSpace(line)
		if strings.HasPrefix(t, "npm notice") || strings.HasPrefix(t, "npm warn") && strings.Contains(t, "log") ||
			strings.Contains(t, "Log files were not written") || strings.Contains(t, "rerun the command with `--loglevel=verbose`") ||
			t == "npm error" {
			continue
		}
		kept = append(kept, line)
	}
	s := strings.Join(strings.Fields(strings.Join(kept, "\n")), " ")
	if len(s) > n {
		s = s[len(s)-n:]
	}
	return s
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// sortedKeys is m's keys in order.
func sortedKeys(m map[string]string) []string { return slices.Sorted(maps.Keys(m)) }
