package main

import (
	"strings"
	"testing"
)

// A run's report: package lines, a failed test's output, every skip with
// its reason, an unexpected skip failing the run, and the summary last.
func TestReport(t *testing.T) {
	in := strings.Join([]string{
		`{"Action":"run","Package":"p","Test":"TestA"}`,
		`{"Action":"output","Package":"p","Test":"TestA","Output":"=== RUN   TestA\n"}`,
		`{"Action":"pass","Package":"p","Test":"TestA"}`,
		`{"Action":"output","Package":"p","Test":"TestB","Output":"    b_test.go:9: got 2, want 3\n"}`,
		`{"Action":"output","Package":"p","Test":"TestB","Output":"--- FAIL: TestB (0.00s)\n"}`,
		`{"Action":"fail","Package":"p","Test":"TestB"}`,
		`{"Action":"output","Package":"p","Test":"TestC/sub","Output":"    c_test.go:4: chromium is not installed\n"}`,
		`{"Action":"output","Package":"p","Test":"TestC/sub","Output":"--- SKIP: TestC/sub (0.00s)\n"}`,
		`{"Action":"skip","Package":"p","Test":"TestC/sub"}`,
		`{"Action":"output","Package":"p","Test":"TestD","Output":"    d_test.go:4: a measurement\n"}`,
		`{"Action":"skip","Package":"p","Test":"TestD"}`,
		`{"Action":"output","Package":"p","Output":"FAIL\n"}`,
		`{"Action":"output","Package":"p","Output":"FAIL\tp\t0.1s\n"}`,
		`{"Action":"fail","Package":"p"}`,
	}, "\n")
	for _, tc := range []struct {
		name    string
		allowed map[string]bool
		want    []string
		ok      bool
	}{
		{"no list", nil, []string{"got 2, want 3", "FAIL\tp", "p TestC/sub: chromium is not installed\n", "p TestD: a measurement\n", "1 passed, 1 failed, 2 skipped\n"}, false},
		{"a skip not expected", map[string]bool{"TestD": true}, []string{"TestC/sub: chromium is not installed  (NOT EXPECTED)"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out strings.Builder
			r := &report{out: &out, output: map[key][]string{}}
			if err := r.read(strings.NewReader(in)); err != nil {
				t.Fatal(err)
			}
			if ok := r.finish(tc.allowed); ok != tc.ok {
				t.Errorf("ok = %v, want %v", ok, tc.ok)
			}
			for _, w := range tc.want {
				if !strings.Contains(out.String(), w) {
					t.Errorf("no %q in:\n%s", w, out.String())
				}
			}
			if !strings.HasSuffix(out.String(), "skipped\n") {
				t.Errorf("the summary is not the last line:\n%s", out.String())
			}
		})
	}
	// A passing run whose only skip is expected passes.
	r := &report{out: &strings.Builder{}, output: map[key][]string{}}
	r.read(strings.NewReader(`{"Action":"skip","Package":"p","Test":"TestC/sub"}` + "\n" + `{"Action":"pass","Package":"p","Test":"TestA"}`))
	if !r.finish(map[string]bool{"TestC": true}) {
		t.Error("a run with an expected skip failed")
	}
}

// A package that timed out, with no test marked failed, counts as a
// failure in the summary.
func TestReportTimeout(t *testing.T) {
	var out strings.Builder
	r := &report{out: &out, output: map[key][]string{}}
	r.read(strings.NewReader(strings.Join([]string{
		`{"Action":"pass","Package":"p","Test":"TestA"}`,
		`{"Action":"output","Package":"p","Test":"TestHangs","Output":"    hangs_test.go:3: waiting\n"}`,
		`{"Action":"output","Package":"p","Output":"panic: test timed out after 10m0s\n"}`,
		`{"Action":"fail","Package":"p"}`,
	}, "\n")))
	if r.finish(nil) || !strings.Contains(out.String(), "panic: test timed out") || !strings.Contains(out.String(), "unfinished: TestHangs\n    hangs_test.go:3: waiting") || !strings.HasSuffix(out.String(), "1 passed, 1 failed, 0 skipped\n") {
		t.Errorf("a package that timed out:\n%s", out.String())
	}
}
