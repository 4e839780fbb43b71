package embedding

import (
	"context"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/toolshelf/toolshelf/internal/fakeembed"
)

func TestClient(t *testing.T) {
	fake := &fakeembed.Server{}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	var progress []int
	c := NewClient(srv.URL+"/v1/", "test-model", &Options{BatchSize: 2, Progress: func(done, total int) {
		progress = append(progress, done, total)
	}})
	texts := []string{"create an issue", "send a message", "read a file", "list repos", "post to slack"}
	vs, err := c.Embed(context.Background(), texts)
	if err != nil {
		t.Fatal(err)
	}
	if want := []int{2, 5, 4, 5, 5, 5}; !slices.Equal(progress, want) {
		t.Errorf("progress (done, total)... = %v, want %v", progress, want)
	}
	if fake.Requests.Load() != 3 {
		t.Errorf("%d requests for 5 texts in batches of 2, want 3", fake.Requests.Load())
	}
	for i, v := range vs {
		if !slices.Equal(v, fakeembed.Vector(texts[i])) {
			t.Errorf("vector %d is not %q's (indexes ignored?)", i, texts[i])
		}
	}
	fake.Fail.Store(true)
	if _, err := c.Embed(context.Background(), texts[:1]); err == nil || !strings.Contains(err.Error(), "503") {
		t.Errorf("failing endpoint: %v", err)
	}
	srv.Close()
	if _, err := c.Embed(context.Background(), texts[:1]); err == nil {
		t.Error("closed endpoint: no error")
	}
}

// A restart embeds nothing it embedded before; a changed text is
// embedded again.
func TestCache(t *testing.T) {
	fake := &fakeembed.Server{}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	dir := t.TempDir()
	texts := []string{"create an issue", "send a message", "read a file"}
	first := NewCache(dir, "m", NewClient(srv.URL, "m", nil))
	want, err := first.Embed(context.Background(), texts)
	if err != nil {
		t.Fatal(err)
	}
	if fake.Texts.Load() != 3 {
		t.Fatalf("%d texts embedded, want 3", fake.Texts.Load())
	}
	restarted := NewCache(dir, "m", NewClient(srv.URL, "m", nil))
	got, err := restarted.Embed(context.Background(), texts)
	if err != nil {
		t.Fatal(err)
	}
	if fake.Texts.Load() != 3 {
		t.Errorf("the restart embedded %d texts again", fake.Texts.Load()-3)
	}
	for i := range got {
		if !slices.Equal(got[i], want[i]) {
			t.Errorf("cached vector %d differs", i)
		}
	}
	if _, err := restarted.Embed(context.Background(), []string{"create an issue", "a new text"}); err != nil || fake.Texts.Load() != 4 {
		t.Errorf("a new text: %v, %d embedded in all", err, fake.Texts.Load())
	}
	// Another model does not share vectors.
	other := NewCache(dir, "other", NewClient(srv.URL, "other", nil))
	other.Embed(context.Background(), texts[:1])
	if fake.Texts.Load() != 5 {
		t.Errorf("another model reused the cache")
	}
}
