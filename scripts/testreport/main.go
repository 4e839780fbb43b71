// Command testreport reads `go test -json` on stdin and prints what a
// person needs of it: each package's result line, the output of every
// test that failed, and at the end every test that was skipped with its
// reason, so that a run that skipped the browser or the database tests
// does not pass for a whole one. Its last line is the summary
// "N passed, M failed, K skipped".
//
//	go test -json ./... | go run ./scripts/testreport [-expected FILE]
//
// With -expected (a file of lines "TestName: why", # for comments), a
// skip of a test the file does not name fails the run, as a failure does:
// CI passes the file, so a test that stops running there is noticed. The
// exit status is 1 on any failure, a package that did not build, or an
// unexpected skip.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
)

// event is one line of test2json's output.
type event struct {
	Action     string
	Package    string
	ImportPath string // build output
	Test       string
	Output     string
}

type key struct{ pkg, test string }

// report follows a run.
type report struct {
	out                     io.Writer
	output                  map[key][]string // a running test's output, kept until it ends
	passed, failed, skipped int
	skips                   []skip
	broken                  bool            // a package failed outside its tests, or did not build
	failedIn                map[string]bool // packages with a failed test
}

type skip struct {
	pkg, test, why string
}

func main() {
	expected := flag.String("expected", "", "`FILE` of the skips expected (lines \"TestName: why\"); any other fails the run")
	flag.Parse()
	allowed, err := readExpected(*expected)
	if err != nil {
		fmt.Fprintln(os.Stderr, "testreport:", err)
		os.Exit(2)
	}
	r := &report{out: os.Stdout, output: map[key][]string{}}
	if err := r.read(os.Stdin); err != nil {
		fmt.Fprintln(os.Stderr, "testreport:", err)
		os.Exit(2)
	}
	if !r.finish(allowed) {
		os.Exit(1)
	}
}

// readExpected reads the expected skips: test names (a subtest's parent
// names all of its subtests).
func readExpected(file string) (map[string]bool, error) {
	if file == "" {
		return nil, nil
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	names := map[string]bool{}
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, _, _ := strings.Cut(line, ":")
		names[strings.TrimSpace(name)] = true
	}
	return names, nil
}

func (r *report) read(in io.Reader) error {
	sc := bufio.NewScanner(in)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var ev event
		if json.Unmarshal(line, &ev) != nil || ev.Action == "" {
			// Not test2json's: a build error printed as it is.
			fmt.Fprintln(r.out, string(line))
			continue
		}
		r.event(ev)
	}
	return sc.Err()
}

func (r *report) event(ev event) {
	k := key{ev.Package, ev.Test}
	switch {
	case ev.Action == "build-output":
		fmt.Fprint(r.out, ev.Output)
	case ev.Action == "build-fail":
		r.broken = true
		r.failed++ // the package's tests, none of which ran
	case ev.Test == "":
		// A package's own lines: its result ("ok", "FAIL", "?"), and
		// what it printed outside any test (a panic, a timeout).
		switch ev.Action {
		case "output":
			if o := ev.Output; !strings.HasPrefix(o, "PASS\n") && !strings.HasPrefix(o, "=== ") && o != "FAIL\n" {
				fmt.Fprint(r.out, o)
			}
		case "fail":
			r.broken = true
			// Tests that never ended (the package timed out, or
			// panicked): what they printed says where.
			for k, lines := range r.output {
				if k.pkg == ev.Package {
					fmt.Fprintf(r.out, "--- unfinished: %s\n", k.test)
					for _, o := range lines {
						if !strings.HasPrefix(o, "=== ") {
							fmt.Fprint(r.out, o)
						}
					}
					delete(r.output, k)
				}
			}
			if !r.failedIn[ev.Package] {
				// No test of its failed: it timed out, panicked outside
				// a test, or did not build. It counts as one failure,
				// so that the summary does not say 0.
				r.failed++
			}
		}
	case ev.Action == "output":
		r.output[k] = append(r.output[k], ev.Output)
	case ev.Action == "pass":
		r.passed++
		delete(r.output, k)
	case ev.Action == "fail":
		r.failed++
		if r.failedIn == nil {
			r.failedIn = map[string]bool{}
		}
		r.failedIn[ev.Package] = true
		for _, o := range r.output[k] {
			if !strings.HasPrefix(o, "=== ") {
				fmt.Fprint(r.out, o)
			}
		}
		delete(r.output, k)
	case ev.Action == "skip":
		r.skipped++
		r.skips = append(r.skips, skip{ev.Package, ev.Test, skipReason(r.output[k])})
		delete(r.output, k)
	}
}

// skipReason is what t.Skip said: the output lines after "--- SKIP".
func skipReason(lines []string) string {
	var why []string
	for _, l := range lines {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "=== ") || strings.HasPrefix(l, "--- SKIP") {
			continue
		}
		// "file_test.go:12: message"
		if _, msg, ok := strings.Cut(l, ": "); ok && strings.Contains(l[:len(l)-len(msg)], ".go:") {
			l = msg
		}
		why = append(why, l)
	}
	return strings.Join(why, " ")
}

// finish prints the skips and the summary, and reports whether the run
// passed.
func (r *report) finish(allowed map[string]bool) bool {
	ok := r.failed == 0 && !r.broken
	if len(r.skips) > 0 {
		fmt.Fprintf(r.out, "\nskipped tests (%d):\n", len(r.skips))
		slices.SortFunc(r.skips, func(a, b skip) int { return strings.Compare(a.pkg+" "+a.test, b.pkg+" "+b.test) })
		for _, s := range r.skips {
			mark := ""
			if allowed != nil && !expectedSkip(allowed, s.test) {
				mark = "  (NOT EXPECTED)"
				ok = false
			}
			fmt.Fprintf(r.out, "  %s %s: %s%s\n", strings.TrimPrefix(s.pkg, "github.com/toolshelf/toolshelf/"), s.test, s.why, mark)
		}
	}
	fmt.Fprintf(r.out, "%d passed, %d failed, %d skipped\n", r.passed, r.failed, r.skipped)
	return ok
}

// expectedSkip reports whether a test, or a test it is a subtest of, is
// expected to skip.
func expectedSkip(allowed map[string]bool, test string) bool {
	for name := test; ; {
		if allowed[name] {
			return true
		}
		i := strings.LastIndex(name, "/")
		if i < 0 {
			return false
		}
		name = name[:i]
	}
}
