package search

import (
	"context"
	"fmt"
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

// What a typo's lookup will not do: a word of under four letters, a
// first letter changed, an English word the catalog lacks ("bake" is no
// typo of "base"), or more than maxTypoWords words of one request.
func TestTyposRefuse(t *testing.T) {
	x := NewBM25(tinyCatalog(t,
		[3]string{"docker", "restart_container", "Restart a running container"},
		[3]string{"geo", "area_size", "The area of a region"},
		[3]string{"git", "base_branch", "The base branch"},
		[3]string{"todo", "task_list", "List each task"},
	))
	for _, q := range []string{"tarea", "bake", "tsk"} {
		hits, _ := x.Search(context.Background(), q, 5)
		if len(hits) > 0 {
			t.Errorf("%q found %s by %s", q, hits[0].Entry.Tool, matchTerms(hits[0]))
		}
	}
	if hits, _ := x.Search(context.Background(), "taks", 5); len(hits) == 0 || hits[0].Entry.Tool != "task_list" {
		t.Errorf("taks: %v", hits)
	}
	unknown := func(n int) string {
		var b strings.Builder
		for i := range n {
			fmt.Fprintf(&b, "qwxzv%c ", 'a'+i)
		}
		return b.String()
	}
	if hits, _ := x.Search(context.Background(), unknown(maxTypoWords)+"resart", 5); len(hits) > 0 {
		t.Errorf("a typo past the first %d unknown words was looked up: %s", maxTypoWords, matchTerms(hits[0]))
	}
	if hits, _ := x.Search(context.Background(), unknown(maxTypoWords-1)+"resart", 5); len(hits) == 0 {
		t.Errorf("the %dth unknown word was not looked up", maxTypoWords)
	}
}

// A word of a sense derived from the request's word's ("remember" →
// "recollection") weighs more than a synonym of one of its senses
// ("recall"); a related word a large share of a large catalog has is
// left out, and kept in a small one.
func TestRelatedWeights(t *testing.T) {
	x := NewBM25(tinyCatalog(t,
		[3]string{"notes", "recall_note", "A note"},
		[3]string{"notes", "recollection_note", "A note"},
	))
	hits, _ := x.Search(context.Background(), "remember note", 5)
	if len(hits) < 2 || hits[0].Entry.Tool != "recollection_note" {
		t.Errorf("remember note: %v", hits)
	}

	var tools [][3]string
	for i := range 150 {
		tools = append(tools, [3]string{"s", fmt.Sprintf("tool_%d", i), "Omit the entry " + fmt.Sprint(i)})
	}
	for i := range 50 {
		tools = append(tools, [3]string{"s", fmt.Sprintf("other_%d", i), "Keep the record " + fmt.Sprint(i)})
	}
	big := NewBM25(tinyCatalog(t, tools...))
	if hits, _ := big.Search(context.Background(), "forget", 5); len(hits) > 0 {
		t.Errorf("a related word 150 of 200 tools have was kept: %s", matchTerms(hits[0]))
	}
	small := NewBM25(tinyCatalog(t, tools[:20]...))
	if hits, _ := small.Search(context.Background(), "forget", 5); len(hits) == 0 {
		t.Error("a small catalog lost its related word")
	}
}

// A request of several clauses is weak only when every clause's best hit
// is, and then for the whole request's reason.
func TestClausesWeakTogether(t *testing.T) {
	tiny := NewBM25(tinyCatalog(t,
		[3]string{"mail", "send_mail", "Send mail"},
		[3]string{"fs", "list_files", "List files"},
		[3]string{"git", "create_issue", "Create an issue"},
		[3]string{"crm", "personal_notes", "Personal notes"},
		[3]string{"sms", "send_text", "Send a text message"},
	))
	for query, want := range map[string]string{
		"send mail and then bake a chocolate cake":                                     "",
		"bake a chocolate cake and send it, then water the garden plants with grandma": WeakNotHere,
	} {
		if clauses(query) == nil {
			t.Fatalf("%q is not split into clauses", query)
		}
		hits, _ := tiny.Search(context.Background(), query, 5)
		if len(hits) == 0 || hits[0].WeakReason != want || hits[0].Weak != (want != "") {
			t.Errorf("%q: weak for %q, want %q", query, reasonOf(hits), want)
		}
	}
}
