package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolshelf/toolshelf/internal/testenv"
)

func TestMain(m *testing.M) {
	Main()
	os.Exit(m.Run())
}

// files is a tool set for programs: files.list gives names, files.read a
// file's text; anything else is not a tool.
func files(calls *atomic.Int64) Caller {
	contents := map[string]string{"a.txt": "one\nTODO two\nthree", "b.txt": "nothing", "c.txt": "TODO\nTODO\n"}
	return func(ctx context.Context, server, tool string, args json.RawMessage) (json.RawMessage, error) {
		calls.Add(1)
		switch server + "." + tool {
		case "files.list":
			return json.Marshal([]string{"a.txt", "b.txt", "c.txt"})
		case "files.read":
			var in struct{ Name string }
			json.Unmarshal(args, &in)
			text, ok := contents[in.Name]
			if !ok {
				return nil, fmt.Errorf("no file %q", in.Name)
			}
			return json.Marshal(text)
		case "slow.wait":
			<-ctx.Done()
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("there is no tool %s.%s", server, tool)
	}
}

func newRunner(t *testing.T, l Limits, running int) *Runner {
	t.Helper()
	r, err := New(&Options{Limits: l, MaxRunning: running})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// A program calls tools, filters what they return and prints only that;
// a tool's error is an exception the program can catch.
func TestProgramComposesTools(t *testing.T) {
	var calls atomic.Int64
	r := newRunner(t, Limits{}, 0)
	res, err := r.Run(context.Background(), `
		const names = await tools.files.list();
		const hits = [];
		for (const name of names) {
			const text = await tools.files.read({name});
			if (text.includes("TODO")) hits.push(name + ":" + text.split("\n").length);
		}
		try { await tools.files.read({name: "missing"}) } catch (e) { console.log("caught", e.message) }
		console.log(hits.join(", "));
		return {count: hits.length};
	`, files(&calls))
	if err != nil {
		t.Fatal(err)
	}
	want := "caught no file \"missing\"\na.txt:3, c.txt:3\nresult: {\"count\":2}\n"
	if res.Error != "" || res.Output != want || res.Calls != 5 || calls.Load() != 5 {
		t.Errorf("got %+v, want output %q after 5 calls", res, want)
	}
}

// Hostile programs: each ends bounded, with an error naming what it hit,
// and the runner serves the next program.
func TestHostilePrograms(t *testing.T) {
	l := Limits{CPU: testenv.Timeout(time.Second), Wall: testenv.Timeout(20 * time.Second), Memory: 512 << 20, Calls: 50, Output: 4 << 10, Depth: 200}
	r := newRunner(t, l, 0)
	// The memory cases get the CPU time it takes to fill 128 MiB.
	l.CPU, l.Memory = 30*time.Second, 128<<20
	small := newRunner(t, l, 0)
	for _, c := range []struct {
		name, program string
		limit, error  string // want
		output        string // want in the output
	}{
		{"infinite loop", `while (true) {}`, "cpu", "CPU time", ""},
		{"infinite loop that catches", `for (;;) { try { while (true) {} } catch (e) {} }`, "cpu", "CPU time", ""},
		{"memory bomb", `const a = []; for (;;) a.push("x".repeat(1024) + a.length)`, "memory", "memory limit", ""},
		{"huge strings", `const a = []; for (;;) a.push("y".repeat(16 << 20))`, "memory", "memory limit", ""},
		{"a string doubled without end", `let s = "x"; for (;;) s += s`, "cpu|memory", "", ""},
		{"deep recursion", `function f(n) { return f(n + 1) + 1 } return f(0)`, "depth", "deeper than 200", ""},
		{"recursion caught", `function f() { try { return f() } catch (e) { return f() } } f()`, "depth", "", ""},
		{"a huge string printed", `console.log("y".repeat(10 << 20))`, "", "", "output cut at 4096 bytes; 10481665 more"},
		{"10,000 tool calls", `for (let i = 0; i < 10000; i++) await tools.files.list()`, "calls", "more than 50 tool calls", ""},
		{"calls caught and retried", `for (let i = 0; i < 10000; i++) { try { await tools.files.list() } catch (e) {} }`, "calls", "", ""},
		{"a tool built at run time", `return await tools["fil" + "es"]["re" + "ad"]({name: "b.txt"})`, "", "", "result: nothing"},
		{"a tool that is not there", `await tools.admin.delete_everything({})`, "", "there is no tool admin.delete_everything", ""},
		{"require", `const fs = require("fs")`, "", "require is not defined", ""},
		{"process, the network, timers", `return [typeof require, typeof process, typeof fetch, typeof XMLHttpRequest, typeof setTimeout, typeof WebAssembly, typeof Deno, typeof Bun].join(" ")`, "", "", "undefined undefined undefined undefined undefined undefined undefined undefined"},
		{"the global object's constructor", `return (function(){ return this })().constructor.constructor("return typeof process")()`, "", "", "result: undefined"},
		{"the engine's JSON and prototypes tampered with", `JSON.stringify = () => "pwned"; JSON.parse = () => "pwned"; Array.prototype.join = () => "pwned"; const t = await tools.files.read({name: "a.txt"}); console.log(typeof t, t.length)`, "", "", "string 18"},
		{"arguments made strange by the program", `Object.prototype.toJSON = () => "pwned"; await tools.files.read({name: "a.txt"})`, "", `no file ""`, ""},
		{"tampering with tools", `tools.files = null; tools.files.list = null; delete tools.files; return (await tools.files.list()).length`, "", "", "result: 3"},
		{"awaiting forever", `await new Promise(() => {})`, "", "never came", ""},
		{"a syntax error", `return (`, "", "does not parse", ""},
		// Backtracking runs in Go, not in the engine, which cannot stop
		// it between steps: the child still ends with the cpu limit.
		{"a backtracking regular expression", `return /(a+)+\1$/.test("a".repeat(32) + "b")`, "cpu", "CPU time", ""},
		{"a backtracking regular expression with a lookahead", `return /(a*)*(?!x)b/.test("a".repeat(40))`, "cpu", "CPU time", ""},
		{"arguments over a call's limit", `await tools.files.read({name: "y".repeat(2 << 20)})`, "", "the arguments limit", ""},
		{"arguments over a call's limit, caught", `try { await tools.files.read({name: "y".repeat(2 << 20)}) } catch (e) { console.log(e.message) }`, "", "", "(the arguments limit)"},
		{"arguments over the program's limit", `const big = "y".repeat(900 << 10); for (let i = 0; i < 40; i++) { try { await tools.files.read({name: big}) } catch (e) {} }`, "sent", "the sent limit", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			var calls atomic.Int64
			run := r
			if strings.Contains(c.limit, "memory") {
				run = small
			}
			res, err := run.Run(context.Background(), c.program, files(&calls))
			if err != nil {
				t.Fatal(err)
			}
			limitOK := res.Limit == c.limit || res.Limit != "" && strings.Contains(c.limit, res.Limit)
			if !limitOK || !strings.Contains(res.Error, c.error) || !strings.Contains(res.Output, c.output) {
				t.Errorf("got limit %q, error %q, output %.200q", res.Limit, res.Error, res.Output)
			}
			if c.error == "" && c.limit == "" && res.Error != "" {
				t.Errorf("unexpected error %q", res.Error)
			}
			if calls.Load() > 50 {
				t.Errorf("%d tool calls served", calls.Load())
			}
			// The kernel held the child to its memory: a limit that was
			// not set would let it grow far past it before any other
			// limit ended it.
			if res.Limit == "memory" && res.Memory > 2*l.Memory {
				t.Errorf("the child had %d MiB resident under a limit of %d MiB", res.Memory>>20, l.Memory>>20)
			}
		})
	}
}

// A program still running (waiting on a tool, or looping) when its
// caller goes away ends with it.
func TestProgramEndsWithItsCaller(t *testing.T) {
	r := newRunner(t, Limits{CPU: time.Minute}, 0)
	for _, program := range []string{`await tools.files.list(); await tools.slow.wait()`, `await tools.files.list(); while (true) {}`} {
		ctx, cancel := context.WithCancel(context.Background())
		started := make(chan struct{})
		var once sync.Once
		inner := files(new(atomic.Int64))
		call := func(ctx context.Context, server, tool string, args json.RawMessage) (json.RawMessage, error) {
			once.Do(func() { close(started) })
			return inner(ctx, server, tool, args)
		}
		done := make(chan error, 1)
		go func() {
			_, err := r.Run(ctx, program, call)
			done <- err
		}()
		<-started
		cancel()
		select {
		case err := <-done:
			if !errors.Is(err, context.Canceled) {
				t.Errorf("%s: %v", program, err)
			}
		case <-time.After(testenv.Timeout(30 * time.Second)):
			t.Fatalf("%s: still running after its caller went away", program)
		}
	}
}

// A program that waits longer than the wall limit, on a tool, ends with
// the wall limit.
func TestWallLimit(t *testing.T) {
	wall := testenv.Timeout(time.Second)
	r := newRunner(t, Limits{Wall: wall}, 0)
	inner := files(new(atomic.Int64))
	var left time.Duration // how long the program had left when it called
	before := time.Now()
	call := func(ctx context.Context, server, tool string, args json.RawMessage) (json.RawMessage, error) {
		if d, ok := ctx.Deadline(); ok {
			left = d.Sub(before)
		}
		return inner(ctx, server, tool, args)
	}
	res, err := r.Run(context.Background(), `await tools.slow.wait()`, call)
	if err != nil || res.Limit != "wall" || !strings.Contains(res.Error, "wall limit") {
		t.Errorf("%+v %v", res, err)
	}
	// The deadline is the limit, not a multiple of it: it was set once
	// the program started, right after before.
	if left < wall || left > wall+wall/2 {
		t.Errorf("a program under a wall limit of %v had a deadline %v after it was run", wall, left)
	}
}

// Fifty programs at once, four running at a time: every one finishes
// with its own answer.
func TestManyProgramsAtOnce(t *testing.T) {
	r := newRunner(t, Limits{Wall: testenv.Timeout(2 * time.Minute)}, 4)
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Go(func() {
			res, err := r.Run(context.Background(), fmt.Sprintf(`const n = (await tools.files.list()).length; return n * %d`, i), files(new(atomic.Int64)))
			if err != nil || res.Error != "" || res.Output != fmt.Sprintf("result: %d\n", 3*i) {
				t.Errorf("program %d: %+v %v", i, res, err)
			}
		})
	}
	wg.Wait()
}

// BenchmarkProgram is the cost of one program with one tool call: a
// child process started, the program run, the call served.
func BenchmarkProgram(b *testing.B) {
	r, err := New(nil)
	if err != nil {
		b.Fatal(err)
	}
	var calls atomic.Int64
	for b.Loop() {
		res, err := r.Run(context.Background(), `return (await tools.files.list()).length`, files(&calls))
		if err != nil || res.Output != "result: 3\n" {
			b.Fatalf("%+v %v", res, err)
		}
	}
}

// One tenant's programs, however long they wait on slow tools, hold at
// most half the slots: another tenant's program runs at once, and a
// program that had to wait says so.
func TestSlotsAreShared(t *testing.T) {
	r := newRunner(t, Limits{Wall: testenv.Timeout(2 * time.Minute)}, 4)
	slow, cancel := context.WithCancel(WithTenant(context.Background(), "greedy"))
	defer cancel()
	started := make(chan struct{}, 16)
	inner := files(new(atomic.Int64))
	call := func(ctx context.Context, server, tool string, args json.RawMessage) (json.RawMessage, error) {
		started <- struct{}{}
		return inner(ctx, server, tool, args)
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	for range 6 { // more than its share, and more than all the slots
		wg.Go(func() { r.Run(slow, `await tools.slow.wait()`, call) })
	}
	for range 2 { // its share: half of 4
		<-started
	}
	res, err := r.Run(WithTenant(context.Background(), "other"), `return 1`, files(new(atomic.Int64)))
	if err != nil || res.Output != "result: 1\n" {
		t.Fatalf("another tenant's program: %+v %v", res, err)
	}
	if res.Waited != 0 {
		t.Errorf("another tenant's program waited %v", res.Waited)
	}
	// The greedy tenant's next program waits for one of its own.
	done := make(chan *Result, 1)
	go func() {
		res, _ := r.Run(WithTenant(context.Background(), "greedy"), `return 2`, files(new(atomic.Int64)))
		done <- res
	}()
	cancel()
	select {
	case res := <-done:
		if res == nil || res.Waited == 0 || !strings.Contains(res.Text(), "waited") {
			t.Errorf("a program that waited for its turn: %+v", res)
		}
	case <-time.After(testenv.Timeout(time.Minute)):
		t.Fatal("timed out waiting for the greedy tenant's next program")
	}
}

// The fair semaphore: free slots go to the tenant holding the fewest, a
// tenant never holds more than its share, and a waiter that gives up
// leaves no slot taken.
func TestSlotsOrder(t *testing.T) {
	s := newSlots(4)
	ctx := context.Background()
	for range 2 {
		if waited, _ := s.acquire(ctx, "a"); waited {
			t.Fatal("a waited for a free slot within its share")
		}
	}
	got := make(chan string, 8)
	wait := func(tenant string) {
		go func() {
			s.acquire(ctx, tenant)
			got <- tenant
		}()
	}
	wait("a") // over its share: waits though two slots are free
	if waited, _ := s.acquire(ctx, "b"); waited {
		t.Fatal("b waited though a slot was free")
	}
	if waited, _ := s.acquire(ctx, "c"); waited {
		t.Fatal("c waited though a slot was free")
	}
	wait("b")
	gone, cancel := context.WithCancel(ctx)
	cancelled := make(chan error, 1)
	go func() { _, err := s.acquire(gone, "d"); cancelled <- err }()
	cancel()
	if err := <-cancelled; err == nil {
		t.Error("a waiter whose context ended got a slot")
	}
	s.release("c") // b (1 held) and a (2 held) wait: b first
	if first := <-got; first != "b" {
		t.Errorf("the freed slot went to %s, want b", first)
	}
	s.release("b")
	s.release("b") // a now holds 2 of its share of 2: it still waits
	select {
	case who := <-got:
		t.Errorf("%s got a slot over its share", who)
	default:
	}
	s.release("a")
	if who := <-got; who != "a" {
		t.Errorf("got %s", who)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.free != 2 || s.held["a"] != 2 || len(s.waiting) != 0 {
		t.Errorf("free %d, held %v, %d waiting", s.free, s.held, len(s.waiting))
	}
}

// The child gets nothing of toolshelf's environment (its secrets): only
// what marks it as the child and sizes its runtime.
func TestChildEnvironment(t *testing.T) {
	t.Setenv("TOOLSHELF_AUTH_TOKEN", "secret-0123456789")
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	envFile, script := filepath.Join(dir, "env"), filepath.Join(dir, "child.sh")
	testenv.WriteScript(t, script, "#!/bin/sh\nenv > "+envFile+"\nexec "+exe+"\n")
	r, err := New(&Options{Command: []string{script}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := r.Run(context.Background(), `return 1`, files(new(atomic.Int64)))
	if err != nil || res.Output != "result: 1\n" {
		t.Fatalf("%+v %v", res, err)
	}
	b, err := os.ReadFile(envFile)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		name, _, _ := strings.Cut(line, "=")
		if name != "PWD" && name != "SHLVL" && name != "_" { // the shell's own
			names = append(names, name)
		}
	}
	slices.Sort(names)
	if want := []string{"GOMAXPROCS", childEnv}; !slices.Equal(names, want) {
		t.Errorf("the child's environment has %v, want %v", names, want)
	}
	if strings.Contains(string(b), "secret-0123456789") {
		t.Error("the child got toolshelf's token")
	}
}
