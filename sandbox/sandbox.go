// Package sandbox runs a program a model wrote, in JavaScript, that
// calls tools: code mode. The model composes several tool calls in one
// program, and only what the program prints or returns comes back to it,
// not every intermediate result.
//
// Each program runs in a child process of its own (the running binary
// again, which calls [Main] first thing), in a JavaScript engine written
// in Go (goja) that has no file system, network, timers, modules or
// process object: the program's one way out is the tools object, whose
// calls go back to the parent over the child's stdin and stdout, where a
// [Caller] serves them through the same path as any other call. The
// child's address space is bounded by the kernel (RLIMIT_AS), so a
// program that allocates without end kills only its child, and its CPU
// time is watched; the parent bounds the wall time, the tool calls, the
// output and how many programs run at once.
package sandbox

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// Limits bound one program. A zero field takes its default.
type Limits struct {
	// CPU is the CPU time the program may use (default 5 s).
	CPU time.Duration `json:"cpu"`
	// Wall is how long the program may run, its tool calls included
	// (default 60 s).
	Wall time.Duration `json:"wall"`
	// Memory is the child process's private writable memory, its heap
	// and stacks (default 512 MiB).
	Memory int64 `json:"memory"`
	// Calls is the most tool calls a program may make (default 100).
	Calls int `json:"calls"`
	// Output is the most bytes of output returned (default 16 KiB); the
	// rest is dropped with a note.
	Output int `json:"output"`
	// Depth is the deepest the program's calls may nest (default 1,000).
	Depth int `json:"depth"`
	// Arguments is the most bytes of arguments one tool call may carry
	// (default 1 MiB), and Sent the most of all a program's calls
	// together (default 4 MiB): a client's request is capped at 4 MiB,
	// and a program must not send the gateway more.
	Arguments int `json:"arguments"`
	Sent      int `json:"sent"`
}

func (l Limits) withDefaults() Limits {
	if l.CPU <= 0 {
		l.CPU = 5 * time.Second
	}
	if l.Wall <= 0 {
		l.Wall = 60 * time.Second
	}
	if l.Memory <= 0 {
		l.Memory = 512 << 20
	}
	if l.Calls <= 0 {
		l.Calls = 100
	}
	if l.Output <= 0 {
		l.Output = 16 << 10
	}
	if l.Depth <= 0 {
		l.Depth = 1000
	}
	if l.Arguments <= 0 {
		l.Arguments = 1 << 20
	}
	if l.Sent <= 0 {
		l.Sent = 4 << 20
	}
	return l
}

// MaxProgram bounds a program's text.
const MaxProgram = 64 << 10

// maxMessage bounds one message from the parent to the child: a tool's
// result. What the child sends is bounded by its limits (childMessage).
const maxMessage = 16 << 20

// childMessage bounds one message from the child: a call with arguments
// of at most Limits.Arguments, or the end with at most Limits.Output of
// output, each escaped at most 6 times over in JSON, and its envelope.
func childMessage(l Limits) int {
	return 6*max(l.Arguments, l.Output) + 64<<10
}

// Caller serves one tool call of a program: tools.<server>.<tool>(args).
// What it returns is what the program's await gets (JSON); its error is
// thrown in the program, which may catch it.
type Caller func(ctx context.Context, server, tool string, args json.RawMessage) (json.RawMessage, error)

// Result is how a program ended.
type Result struct {
	// Output is what the program printed, then what it returned, cut to
	// Limits.Output with a note.
	Output string
	// Error is the exception the program ended with, or the limit it
	// hit; empty when it finished.
	Error string
	// Limit names the limit the program hit: cpu, wall, memory, calls,
	// sent or depth; empty when none.
	Limit string
	// Calls counts the tool calls the program made.
	Calls int
	// Waited is how long the program waited for a free slot before it
	// ran (others' programs held them all, or its tenant its share).
	Waited time.Duration
	// Memory is the most memory the child had resident, in bytes.
	Memory int64
}

// Runner runs programs. It is safe for concurrent use.
type Runner struct {
	command []string
	limits  Limits
	slots   *slots
}

// Options configure New; nil is the zero value.
type Options struct {
	// Command starts the child: a program that calls Main first thing
	// (default: the running executable).
	Command []string
	// Limits bound each program.
	Limits Limits
	// MaxRunning bounds the programs running at once (default 8); the
	// others wait for a turn, as long as their context lets them. A
	// tenant (WithTenant) runs at most half of them at once.
	MaxRunning int
}

// New returns a runner.
func New(opts *Options) (*Runner, error) {
	if opts == nil {
		opts = &Options{}
	}
	r := &Runner{command: opts.Command, limits: opts.Limits.withDefaults()}
	if len(r.command) == 0 {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("sandbox: the running executable: %v", err)
		}
		r.command = []string{exe}
	}
	n := opts.MaxRunning
	if n <= 0 {
		n = 8
	}
	r.slots = newSlots(n)
	return r, nil
}

// Limits returns the limits each program runs under.
func (r *Runner) Limits() Limits { return r.limits }

// childEnv marks the child process (Main).
const childEnv = "TOOLSHELF_SANDBOX_CHILD"

// Messages between the parent and the child, one JSON object a line.
type (
	// start is the parent's first message.
	start struct {
		Program string `json:"program"`
		Limits  Limits `json:"limits"`
	}
	// fromChild is a tool call, or the end.
	fromChild struct {
		Call *call `json:"call,omitempty"`
		Done *done `json:"done,omitempty"`
	}
	call struct {
		Server    string          `json:"server"`
		Tool      string          `json:"tool"`
		Arguments json.RawMessage `json:"arguments"`
	}
	done struct {
		Output string `json:"output"`
		Error  string `json:"error,omitempty"`
		Limit  string `json:"limit,omitempty"`
	}
	// toChild answers a call.
	toChild struct {
		Result json.RawMessage `json:"result,omitempty"`
		Error  string          `json:"error,omitempty"`
	}
)

// Run runs a program in a child process, serving its tool calls with
// call, until it ends, hits a limit, or ctx is done. The error is about
// the sandbox (the child could not start, or ctx ended); what happened to
// the program is in the Result.
func (r *Runner) Run(ctx context.Context, program string, call Caller) (*Result, error) {
	if len(program) > MaxProgram {
		return &Result{Error: fmt.Sprintf("the program is %d bytes, more than the %d a program may have", len(program), MaxProgram)}, nil
	}
	tenant, asked := tenantOf(ctx), time.Now()
	waited, err := r.slots.acquire(ctx, tenant)
	if err != nil {
		return nil, err
	}
	defer r.slots.release(tenant)
	wait := time.Since(asked)
	res, err := r.run(ctx, program, call)
	if res != nil && waited {
		res.Waited = wait
	}
	return res, err
}

// run runs a program in a slot.
func (r *Runner) run(ctx context.Context, program string, call Caller) (*Result, error) {
	l := r.limits
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, l.Wall)
	defer cancel()
	cmd := exec.CommandContext(ctx, r.command[0], r.command[1:]...)
	// Nothing of toolshelf's environment (its secrets) reaches the child;
	// two threads of Go are enough for one program.
	cmd.Env = []string{childEnv + "=1", "GOMAXPROCS=2"}
	cmd.Dir = os.TempDir()
	cmd.SysProcAttr = &syscall.SysProcAttr{}
	setParentDeathSignal(cmd.SysProcAttr)
	cmd.WaitDelay = time.Second
	var stderr bytes.Buffer
	cmd.Stderr = &capped{w: &stderr, n: 8 << 10}
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("sandbox: starting the child: %w", err)
	}
	res, talkErr := r.talk(ctx, in, out, program, l, call)
	in.Close()
	if res == nil {
		cmd.Process.Kill()
	}
	waitErr := cmd.Wait()
	var peak int64
	if cmd.ProcessState != nil {
		peak = peakMemory(cmd.ProcessState)
	}
	if res != nil {
		res.Memory = peak
		// A call cut short by the deadline or the caller ends the program
		// with that call's error, which may come back before the child is
		// killed: the program ended for the deadline or the caller, not
		// for its own exception.
		switch {
		case parent.Err() != nil:
			return nil, parent.Err()
		case ctx.Err() != nil && res.Error != "" && res.Limit == "":
			res.Limit, res.Error = "wall", wallError(l)
		}
		return res, nil
	}
	// The child ended without saying how: a limit the kernel or the
	// parent enforced, or a crash.
	res = &Result{Calls: talkErr.calls, Memory: peak}
	var exit *exec.ExitError
	switch {
	case talkErr.limit != "":
		res.Limit, res.Error = talkErr.limit, talkErr.err.Error()
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		res.Limit, res.Error = "wall", wallError(l)
	case ctx.Err() != nil:
		return nil, ctx.Err()
	case outOfMemory(stderr.String()) || peak >= l.Memory*3/4:
		res.Limit, res.Error = "memory", fmt.Sprintf("the program used more than the %d MiB of memory a program may have (the memory limit)", l.Memory>>20)
	case strings.Contains(stderr.String(), cpuMarker) || strings.Contains(stderr.String(), "SIGXCPU") ||
		errors.As(waitErr, &exit) && cpuSignal(exit) || cmd.ProcessState != nil && cpuUsed(cmd.ProcessState) >= l.CPU:
		// Whatever the engine was doing: its own watch, the kernel's
		// limit, or a child that used its time and was killed.
		res.Limit, res.Error = "cpu", cpuError(l)
	default:
		res.Error = fmt.Sprintf("the sandbox ended without an answer (%v)", firstLine(stderr.String(), waitErr))
	}
	return res, nil
}

// cpuMarker is the child's last words when it ends for its CPU time
// itself (watchCPU).
const cpuMarker = "sandbox: the cpu limit"

func cpuError(l Limits) string {
	return fmt.Sprintf("the program used more than %v of CPU time (the cpu limit)", l.CPU)
}

// cpuUsed is the CPU time a child used.
func cpuUsed(ps *os.ProcessState) time.Duration { return ps.UserTime() + ps.SystemTime() }

func wallError(l Limits) string {
	return fmt.Sprintf("the program ran longer than %v, its tool calls included (the wall limit)", l.Wall)
}

// outOfMemory reports whether the child's last words are the Go
// runtime's when an allocation fails: an out-of-memory error, or, for an
// allocation it cannot handle failing (a goroutine's stack, a huge
// string), a fault of its own. The engine faults on nothing else.
func outOfMemory(stderr string) bool {
	// A thread the runtime cannot start under the limit ("pthread_create
	// failed", "failed to create new OS thread") is the same limit.
	for _, s := range []string{"out of memory", "cannot allocate memory", "SIGSEGV", "fatal error: runtime", "pthread_create failed", "failed to create new OS thread"} {
		if strings.Contains(stderr, s) {
			return true
		}
	}
	return false
}

// talkError is why talk ended without the child's answer.
type talkError struct {
	err   error
	limit string
	calls int
}

// talk sends the program, serves its calls and returns its result; nil
// with why when the child stopped answering or must be stopped.
func (r *Runner) talk(ctx context.Context, in io.Writer, out io.Reader, program string, l Limits, serve Caller) (*Result, talkError) {
	enc := json.NewEncoder(in)
	if err := enc.Encode(start{Program: program, Limits: l}); err != nil {
		return nil, talkError{err: err}
	}
	lines := bufio.NewReaderSize(out, 64<<10)
	calls, sent := 0, 0
	for {
		line, err := readLine(lines, childMessage(l))
		if err != nil {
			return nil, talkError{err: err, calls: calls}
		}
		var msg fromChild
		if err := json.Unmarshal(line, &msg); err != nil {
			return nil, talkError{err: fmt.Errorf("the child sent %v", err), calls: calls}
		}
		switch {
		case msg.Done != nil:
			// The child cut the output already, with a note; this holds
			// even if it did not.
			return &Result{Output: cutOutput(msg.Done.Output, l.Output+512), Error: cutOutput(msg.Done.Error, 4096), Limit: msg.Done.Limit, Calls: calls}, talkError{}
		case msg.Call != nil:
			calls++
			if calls > l.Calls {
				// The child counts too; this holds even if it did not.
				return nil, talkError{err: fmt.Errorf("the program made more than %d tool calls (the calls limit)", l.Calls), limit: "calls", calls: calls - 1}
			}
			// The child bounds what it sends; this holds even if it did not.
			if sent += len(msg.Call.Arguments); sent > l.Sent {
				return nil, talkError{err: fmt.Errorf("the program's calls carried more than %d bytes of arguments in all (the sent limit)", l.Sent), limit: "sent", calls: calls - 1}
			}
			var reply toChild
			if n := len(msg.Call.Arguments); n > l.Arguments {
				reply.Error = fmt.Sprintf("the arguments are %d bytes, more than the %d a call may carry (the arguments limit)", n, l.Arguments)
			} else if res, err := serve(ctx, msg.Call.Server, msg.Call.Tool, msg.Call.Arguments); err != nil {
				reply.Error = err.Error()
			} else {
				reply.Result = res
			}
			if len(reply.Result) > maxMessage {
				reply = toChild{Error: fmt.Sprintf("the result is %d bytes, more than a program may take (%d)", len(reply.Result), maxMessage)}
			}
			if err := enc.Encode(reply); err != nil {
				return nil, talkError{err: err, calls: calls}
			}
		default:
			return nil, talkError{err: errors.New("the child sent an empty message"), calls: calls}
		}
	}
}

// readLine reads one line of at most max bytes.
func readLine(r *bufio.Reader, max int) ([]byte, error) {
	var line []byte
	for {
		chunk, err := r.ReadSlice('\n')
		line = append(line, chunk...)
		if len(line) > max {
			return nil, fmt.Errorf("a message of the child is longer than %d bytes", max)
		}
		if err == nil {
			return line, nil
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			return nil, err
		}
	}
}

// cutOutput cuts output to n bytes, with a note.
func cutOutput(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := strings.ToValidUTF8(s[:n], "")
	return cut + fmt.Sprintf("\n… (output cut at %d bytes; %d more not shown: print less, or summarize in the program)", n, len(s)-n)
}

// capped writes at most n bytes to w, then drops the rest.
type capped struct {
	w io.Writer
	n int
}

func (c *capped) Write(b []byte) (int, error) {
	if c.n > 0 {
		k := min(len(b), c.n)
		c.w.Write(b[:k])
		c.n -= k
	}
	return len(b), nil
}

func firstLine(s string, err error) string {
	if line, _, _ := strings.Cut(strings.TrimSpace(s), "\n"); line != "" {
		return line
	}
	if err != nil {
		return err.Error()
	}
	return "no output"
}
