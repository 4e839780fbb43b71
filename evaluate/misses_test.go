package evaluate

import (
	"testing"

	"github.com/toolshelf/toolshelf/catalog"
	"github.com/toolshelf/toolshelf/search"
)

func TestMissOf(t *testing.T) {
	hit := func(id string) search.Hit {
		return search.Hit{Entry: &catalog.Entry{ID: id}, Score: 1, Matches: []search.Match{{Term: "w", Score: 1}}}
	}
	var hits []search.Hit
	for _, id := range []string{"a", "b", "c", "d", "e", "f", "g"} {
		hits = append(hits, hit(id))
	}
	q := Query{ID: "q", Text: "text", Groups: [][]string{{"b"}, {"x", "f"}}}
	m := missOf(q, hits)
	if m == nil || len(m.Missed) != 1 || m.Missed[0][1] != "f" {
		t.Fatalf("miss = %+v, want the step of f missed", m)
	}
	if m.Found != 6 || len(m.Hits) != 6 || !m.Hits[5].Wanted || m.Hits[0].Wanted || len(m.Hits[0].Matches) != 1 {
		t.Errorf("hits down to the wanted one: found %d, %+v", m.Found, m.Hits)
	}
	// A step found in the top five is no miss; a tool never ranked
	// leaves every hit listed and Found 0.
	if m := missOf(Query{Groups: [][]string{{"e"}}}, hits); m != nil {
		t.Errorf("rank 5 is found: %+v", m)
	}
	if m := missOf(Query{Groups: [][]string{{"zz"}}}, hits); m == nil || m.Found != 0 || len(m.Hits) != len(hits) {
		t.Errorf("never ranked: %+v", m)
	}
}
