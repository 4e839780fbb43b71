package main

import (
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/toolshelf/toolshelf/internal/fakeembed"
)

func TestHybridEngine(t *testing.T) {
	fake := &fakeembed.Server{}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	embed := []string{"--embed-url", srv.URL + "/v1", "--embed-model", "test-model"}

	r := runCLI(t, append([]string{"eval", "--dataset", "testdata/tiny", "--engine", "hybrid", "--json"}, embed...)...)
	if r.code != 0 {
		t.Fatalf("eval hybrid: %d %s", r.code, r.stderr)
	}
	var rep struct {
		Engine  string `json:"engine"`
		Subsets map[string]struct {
			Recall5 float64 `json:"recall@5"`
		} `json:"subsets"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || rep.Engine != "hybrid" || rep.Subsets["all"].Recall5 == 0 {
		t.Errorf("report: %+v %v", rep, err)
	}
	embedded := fake.Texts.Load()
	// A second run finds every tool embedding in the disk cache.
	runCLI(t, append([]string{"eval", "--dataset", "testdata/tiny", "--engine", "semantic"}, embed...)...)
	if queries := fake.Texts.Load() - embedded; queries > 4 {
		t.Errorf("the second run embedded %d texts; only its 4 queries were new", queries)
	}

	r = runCLI(t, append([]string{"search", "--catalog", "testdata/tiny", "--engine", "semantic", "email"}, embed...)...)
	if r.code != 0 || !strings.Contains(r.stdout, "mcp__mail__send_email") {
		t.Errorf("search semantic: %d %s %s", r.code, r.stdout, r.stderr)
	}

	fake.Fail.Store(true)
	r = runCLI(t, append([]string{"search", "--catalog", realCatalog, "--engine", "hybrid", "create a pull request"}, embed...)...)
	if r.code != 1 || !strings.Contains(r.stderr, "embeddings endpoint: 503") {
		t.Errorf("a failing endpoint at start: %d %s", r.code, r.stderr)
	}
	for _, args := range [][]string{
		{"search", "--engine", "hybrid", "--embed-url", srv.URL, "x"},
		{"eval", "--dataset", "testdata/tiny", "--engine", "semantic", "--embed-model", "m"},
		{"serve", "--engine", "hybrid", "--embed-model", "m"},
	} {
		if r := runCLI(t, args...); r.code != 2 || !strings.Contains(r.stderr, "needs both --embed-url and --embed-model") {
			t.Errorf("%v: %d %s", args, r.code, r.stderr)
		}
	}
}
