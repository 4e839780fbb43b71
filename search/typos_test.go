package search

import (
	"context"
	"strings"
	"testing"
)

func TestOneEdit(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want bool
	}{
		{"resart", "restart", true},      // a letter dropped
		{"contianer", "container", true}, // neighbours swapped
		{"calender", "calendar", true},   // a letter changed
		{"taks", "task", true},
		{"restart", "resart", true},
		{"task", "task", false},
		{"tsak", "task", true},
		{"tk", "task", false},
		{"abcd", "badc", false},
		{"container", "contain", false},
	} {
		if got := oneEdit(tc.a, tc.b); got != tc.want {
			t.Errorf("oneEdit(%q, %q) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
}

// A mistyped word finds the tool its right spelling names, an apostrophe's
// tail ("who's") is no word, and a request's everyday words reach a
// tool's ("forget" its "omit"), below the request's own words.
func TestEverydayWordsAndTypos(t *testing.T) {
	c := tinyCatalog(t,
		[3]string{"docker", "restart_container", "Restart a running container"},
		[3]string{"docker", "list_containers", "List the containers"},
		[3]string{"notes", "omit_entry", "Omit an entry from the notebook"},
		[3]string{"notes", "forget_entry", "Forget an entry of the notebook"},
		[3]string{"files", "read_file", "Read a file; it's what cat does"},
	)
	x := NewBM25(c)
	ctx := context.Background()
	top := func(q string) Hit {
		t.Helper()
		hits, err := x.Search(ctx, q, 5)
		if err != nil || len(hits) == 0 {
			t.Fatalf("%q: %v %v", q, hits, err)
		}
		return hits[0]
	}
	if h := top("resart the contianers"); h.Entry.Tool != "restart_container" || !strings.Contains(matchTerms(h), "resart?restart") {
		t.Errorf("typos: %s %s", h.Entry.Tool, matchTerms(h))
	}
	hits, _ := x.Search(ctx, "forget the entry", 5)
	if len(hits) < 2 || hits[0].Entry.Tool != "forget_entry" || hits[1].Entry.Tool != "omit_entry" || !strings.Contains(matchTerms(hits[1]), "forget≈omit") {
		t.Errorf("forget the entry: %v", hits)
	}
	if h := top("what's the omit for"); strings.Contains(matchTerms(h), " s ") || h.Entry.Tool != "omit_entry" {
		t.Errorf("contraction: %s %s", h.Entry.Tool, matchTerms(h))
	}
	// A hostile request of many unknown words looks up a bounded number.
	long := strings.Repeat("zqxv ", 5000)
	if _, err := x.Search(ctx, long, 5); err != nil {
		t.Fatal(err)
	}
}

func matchTerms(h Hit) string {
	var b strings.Builder
	for _, m := range h.Matches {
		b.WriteString(" " + m.Term + " ")
	}
	return b.String()
}
