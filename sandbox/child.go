package sandbox

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/dop251/goja"
)

// Main runs the sandbox's child and exits when the process was started
// as one (by a Runner); otherwise it returns at once. Call it first
// thing in main, and in the TestMain of tests that run programs.
func Main() {
	if os.Getenv(childEnv) != "1" {
		return
	}
	os.Exit(child(os.Stdin, os.Stdout))
}

// child runs the program the parent sends and answers with how it ended.
func child(stdin io.Reader, stdout io.Writer) int {
	dec := json.NewDecoder(bufio.NewReaderSize(stdin, 64<<10))
	var st start
	if err := dec.Decode(&st); err != nil {
		fmt.Fprintln(os.Stderr, "sandbox: reading the program:", err)
		return 2
	}
	l := st.Limits.withDefaults()
	confine(l)
	w := bufio.NewWriterSize(stdout, 64<<10)
	p := newProgram(l, func(c call) (toChild, error) {
		if err := writeLine(w, fromChild{Call: &c}); err != nil {
			return toChild{}, err
		}
		var reply toChild
		err := dec.Decode(&reply)
		return reply, err
	})
	d := p.run(st.Program)
	if err := writeLine(w, fromChild{Done: d}); err != nil {
		return 2
	}
	return 0
}

func writeLine(w *bufio.Writer, m fromChild) error {
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	w.Write(b)
	w.WriteByte('\n')
	return w.Flush()
}

// limitHit ends a program: the value it is interrupted with.
type limitHit struct{ limit, msg string }

// program is one program's run in the engine.
type program struct {
	vm        *goja.Runtime
	l         Limits
	roundTrip func(call) (toChild, error)
	stringify goja.Callable // the engine's own, whatever the program does to JSON
	parse     goja.Callable
	out       strings.Builder
	dropped   int
	calls     int
	sent      int // bytes of arguments sent
	servers   map[string]goja.Value
}

func newProgram(l Limits, roundTrip func(call) (toChild, error)) *program {
	p := &program{vm: goja.New(), l: l, roundTrip: roundTrip, servers: map[string]goja.Value{}}
	p.vm.SetMaxCallStackSize(l.Depth)
	json := p.vm.Get("JSON").ToObject(p.vm)
	p.stringify, _ = goja.AssertFunction(json.Get("stringify"))
	p.parse, _ = goja.AssertFunction(json.Get("parse"))
	print := p.vm.ToValue(func(c goja.FunctionCall) goja.Value {
		parts := make([]string, len(c.Arguments))
		for i, a := range c.Arguments {
			parts[i] = p.text(a)
		}
		p.write(strings.Join(parts, " ") + "\n")
		return goja.Undefined()
	})
	console := p.vm.NewObject()
	for _, name := range []string{"log", "info", "warn", "error", "debug"} {
		console.Set(name, print)
	}
	p.vm.Set("console", console)
	p.vm.Set("print", print)
	p.vm.Set("tools", p.vm.NewDynamicObject(serverSet{p}))
	return p
}

// text is how a value prints: a string as it is, anything else as JSON.
func (p *program) text(v goja.Value) string {
	if s, ok := v.Export().(string); ok {
		return s
	}
	if j, err := p.stringify(goja.Undefined(), v); err == nil && !goja.IsUndefined(j) {
		return j.String()
	}
	return v.String()
}

// write keeps output up to the limit and counts the rest.
func (p *program) write(s string) {
	room := p.l.Output - p.out.Len()
	if room >= len(s) {
		p.out.WriteString(s)
		return
	}
	if room > 0 {
		p.out.WriteString(s[:room])
		s = s[room:]
	}
	p.dropped += len(s)
}

// stop ends the program with a limit: the engine stops at its next step,
// and no try/catch sees it.
func (p *program) stop(limit, msg string) {
	p.vm.Interrupt(limitHit{limit, msg})
}

// run runs the program, as the body of an async function, and says how
// it ended.
func (p *program) run(src string) *done {
	compiled, err := goja.Compile("program.js", "(async function () {\n"+src+"\n})()", false)
	if err != nil {
		return &done{Error: "the program does not parse: " + err.Error()}
	}
	stopWatch := p.watchCPU()
	v, err := p.vm.RunProgram(compiled)
	stopWatch()
	d := &done{}
	var interrupted *goja.InterruptedError
	var overflow *goja.StackOverflowError
	var exception *goja.Exception
	switch {
	case errors.As(err, &interrupted):
		if hit, ok := interrupted.Value().(limitHit); ok {
			d.Limit, d.Error = hit.limit, hit.msg
		} else {
			d.Error = fmt.Sprint(interrupted.Value())
		}
	case errors.As(err, &overflow):
		d.Limit, d.Error = "depth", fmt.Sprintf("the program's calls nested deeper than %d (the depth limit)", p.l.Depth)
	case errors.As(err, &exception):
		d.Error = "the program threw: " + exception.Error()
	case err != nil:
		d.Error = err.Error()
	default:
		promise, _ := v.Export().(*goja.Promise)
		switch {
		case promise == nil:
		case promise.State() == goja.PromiseStateRejected:
			d.Error = "the program threw: " + p.describe(promise.Result())
		case promise.State() == goja.PromiseStatePending:
			d.Error = "the program waited on something that never came (a program has no timers: await only the tools' calls)"
		case !goja.IsUndefined(promise.Result()):
			p.write("result: " + p.text(promise.Result()) + "\n")
		}
	}
	d.Output = p.out.String()
	if p.dropped > 0 {
		d.Output += fmt.Sprintf("\n… (output cut at %d bytes; %d more not shown: print less, or summarize in the program)", p.l.Output, p.dropped)
	}
	return d
}

// describe words a thrown value: an Error's stack when it has one.
func (p *program) describe(v goja.Value) string {
	if o, ok := v.(*goja.Object); ok {
		if stack := o.Get("stack"); stack != nil && !goja.IsUndefined(stack) {
			return cutText(stack.String(), 2000)
		}
	}
	return cutText(p.text(v), 2000)
}

func cutText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "…"
}

// watchCPU stops the program once it has used its CPU time. The engine
// sees the stop between two of its steps; a step that does not end (a
// regular expression that backtracks without end runs in Go, not in the
// engine) is not waited for: the child says which limit it hit and ends.
func (p *program) watchCPU() (stop func()) {
	done := make(chan struct{})
	start := cpuTime()
	go func() {
		t := time.NewTicker(10 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				if cpuTime()-start > p.l.CPU {
					p.stop("cpu", cpuError(p.l))
					select {
					case <-done:
					case <-time.After(time.Second):
						fmt.Fprintln(os.Stderr, cpuMarker)
						os.Exit(3)
					}
					return
				}
			}
		}
	}()
	return func() { close(done) }
}

// call runs one tool call for the program: it returns a promise, already
// settled, since the call is made before it returns.
func (p *program) call(server, tool string, arg goja.Value) goja.Value {
	p.calls++
	if p.calls > p.l.Calls {
		p.stop("calls", fmt.Sprintf("the program made more than %d tool calls (the calls limit)", p.l.Calls))
		return goja.Undefined()
	}
	args := json.RawMessage("{}")
	if arg != nil && !goja.IsUndefined(arg) && !goja.IsNull(arg) {
		j, err := p.stringify(goja.Undefined(), arg)
		if err != nil || goja.IsUndefined(j) {
			panic(p.vm.NewTypeError("tools.%s.%s: the arguments must be an object that JSON can write", server, tool))
		}
		args = json.RawMessage(j.String())
	}
	if len(args) > p.l.Arguments {
		panic(p.vm.NewTypeError("tools.%s.%s: the arguments are %d bytes, more than the %d a call may carry (the arguments limit)", server, tool, len(args), p.l.Arguments))
	}
	if p.sent += len(args); p.sent > p.l.Sent {
		p.stop("sent", fmt.Sprintf("the program's calls carried more than %d bytes of arguments in all (the sent limit)", p.l.Sent))
		return goja.Undefined()
	}
	reply, err := p.roundTrip(call{Server: server, Tool: tool, Arguments: args})
	if err != nil {
		p.stop("", "the sandbox lost its parent: "+err.Error())
		return goja.Undefined()
	}
	promise, resolve, reject := p.vm.NewPromise()
	if reply.Error != "" {
		reject(p.vm.NewGoError(errors.New(reply.Error)))
	} else {
		v, err := p.parse(goja.Undefined(), p.vm.ToValue(string(reply.Result)))
		if err != nil {
			reject(err)
		} else {
			resolve(v)
		}
	}
	return p.vm.ToValue(promise)
}

// names that a tools object never has: JavaScript asks for them of any
// object (await asks for then), and a call must not start for them.
var notTools = map[string]bool{"then": true, "toJSON": true, "constructor": true, "toString": true, "valueOf": true, "__proto__": true}

// serverSet is the tools object: tools.<server> is the server's tools.
type serverSet struct{ p *program }

func (s serverSet) Get(server string) goja.Value {
	if notTools[server] {
		return goja.Undefined()
	}
	if v, ok := s.p.servers[server]; ok {
		return v
	}
	v := s.p.vm.NewDynamicObject(toolSet{s.p, server, map[string]goja.Value{}})
	if len(s.p.servers) < 10_000 {
		s.p.servers[server] = v
	}
	return v
}

func (serverSet) Set(string, goja.Value) bool { return false }
func (serverSet) Has(name string) bool        { return !notTools[name] }
func (serverSet) Delete(string) bool          { return false }
func (serverSet) Keys() []string              { return nil }

// toolSet is one server's tools: tools.<server>.<tool>(args).
type toolSet struct {
	p      *program
	server string
	fns    map[string]goja.Value
}

func (t toolSet) Get(tool string) goja.Value {
	if notTools[tool] {
		return goja.Undefined()
	}
	if v, ok := t.fns[tool]; ok {
		return v
	}
	v := t.p.vm.ToValue(func(c goja.FunctionCall) goja.Value { return t.p.call(t.server, tool, c.Argument(0)) })
	if len(t.fns) < 10_000 {
		t.fns[tool] = v
	}
	return v
}

func (toolSet) Set(string, goja.Value) bool { return false }
func (toolSet) Has(name string) bool        { return !notTools[name] }
func (toolSet) Delete(string) bool          { return false }
func (toolSet) Keys() []string              { return nil }
