package audit

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func run(t *testing.T, l *Log) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); l.Run(ctx) }()
	return func() { cancel(); <-done }
}

// Every record reaches the file, rotated by size, and Read gives them
// back in order across the rotated files.
func TestWriteRotateRead(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	l, err := Open(path, &Options{MaxBytes: 2000, Keep: 5})
	if err != nil {
		t.Fatal(err)
	}
	stop := run(t, l)
	for i := range 50 {
		l.Add(Record{Time: time.Unix(int64(i), 0).UTC(), Kind: "call", Tool: "mcp__s__t", DurationMS: float64(i)})
	}
	stop()
	if _, err := os.Stat(path + ".1"); err != nil {
		t.Errorf("no rotated file: %v", err)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v", fi.Mode())
	}
	recs, bad, err := Read(path, time.Time{})
	if err != nil || bad != 0 {
		t.Fatal(err, bad)
	}
	// Keep 5 files of about 2,000 bytes: the oldest records may be gone,
	// and the rest are in order.
	if len(recs) < 30 || recs[len(recs)-1].DurationMS != 49 {
		t.Fatalf("%d records read, last %+v", len(recs), recs[len(recs)-1])
	}
	for i := 1; i < len(recs); i++ {
		if recs[i].DurationMS != recs[i-1].DurationMS+1 {
			t.Fatalf("out of order at %d: %v after %v", i, recs[i].DurationMS, recs[i-1].DurationMS)
		}
	}
	since, _, _ := Read(path, time.Unix(45, 0))
	if len(since) != 5 {
		t.Errorf("since: %d records", len(since))
	}
}

// With the writer stopped, a full queue drops records without waiting,
// counts them, and the count is written once the writer runs.
func TestDropsAreCounted(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	l, err := Open(path, &Options{Queue: 3})
	if err != nil {
		t.Fatal(err)
	}
	for range 10 {
		l.Add(Record{Time: time.Now(), Kind: "search"})
	}
	if l.Dropped() != 7 {
		t.Fatalf("dropped %d, want 7", l.Dropped())
	}
	run(t, l)()
	recs, _, _ := Read(path, time.Time{})
	var kept, reported int64
	for _, r := range recs {
		if r.Kind == "dropped" {
			reported += r.Dropped
		} else {
			kept++
		}
	}
	if kept != 3 || reported != 7 {
		t.Errorf("%d kept, %d reported dropped; want 3 and 7", kept, reported)
	}
}
