package journal

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// What a journal promised and did not mark done is taken over by the
// next journal opened in the folder, once; what was done is not.
func TestTakeOver(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	a, err := Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	var origins []string
	for i := range 5 {
		o, err := a.Append(ctx, "audit", map[string]int{"n": i})
		if err != nil {
			t.Fatal(err)
		}
		origins = append(origins, o)
	}
	if _, err := a.Append(ctx, "learn", "a pair"); err != nil {
		t.Fatal(err)
	}
	a.Done(origins[0], origins[2])
	// A live journal's file is not taken over.
	live, err := Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(live.Pending("audit")); n != 0 {
		t.Errorf("a live journal's entries taken over: %d", n)
	}
	live.Close()
	a.Close() // as a process gone: its lock is released

	b, err := Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	got := b.Pending("audit")
	var ns []int
	for _, e := range got {
		var v map[string]int
		json.Unmarshal(e.Data, &v)
		ns = append(ns, v["n"])
	}
	if fmt.Sprint(ns) != "[1 3 4]" || len(b.Pending("learn")) != 1 {
		t.Errorf("taken over: audit %v", ns)
	}
	if len(b.Pending("audit")) != 0 {
		t.Errorf("Pending handed the entries out twice")
	}
	if files, _ := filepath.Glob(filepath.Join(dir, "*.wal")); len(files) != 1 {
		t.Errorf("files after the takeover: %v", files)
	}
	// Landed, they leave nothing behind.
	var os_ []string
	for _, e := range got {
		os_ = append(os_, e.Origin)
	}
	b.Done(os_...)
	if b.Undone() != 1 {
		t.Errorf("undone: %d, want the learn entry", b.Undone())
	}
}

// Concurrent appends all return on disk; when all are done the file is
// emptied, and a closed empty journal leaves no file.
func TestAppendsAndCompaction(t *testing.T) {
	dir := t.TempDir()
	j, err := Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var origins []string
	var wg sync.WaitGroup
	for i := range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			o, err := j.Append(context.Background(), "audit", i)
			if err != nil {
				t.Error(err)
			}
			mu.Lock()
			origins = append(origins, o)
			mu.Unlock()
		}()
	}
	wg.Wait()
	// Every one is in the file now (read by another process's eyes).
	f, _ := os.Open(j.Where())
	entries, err := read(f)
	f.Close()
	if err != nil || len(entries) != 64 {
		t.Fatalf("in the file: %d entries, %v", len(entries), err)
	}
	j.Done(origins...)
	if st, _ := os.Stat(j.Where()); st.Size() != 0 {
		t.Errorf("the file after every entry was landed: %d bytes", st.Size())
	}
	j.Close()
	if _, err := os.Stat(j.Where()); !os.IsNotExist(err) {
		t.Errorf("an empty journal's file stays: %v", err)
	}
}

// A line torn by a kill mid-write (never fsynced, so never promised) ends
// the reading; what precedes it is taken over.
func TestTornLine(t *testing.T) {
	dir := t.TempDir()
	good := `{"o":"x.0","k":"audit","d":1}` + "\n" + `{"o":"x.1","k":"audit","d":2}` + "\n" + `{"o":"x.2","k":"au`
	os.WriteFile(filepath.Join(dir, "journal-x.wal"), []byte(good), 0o600)
	j, err := Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	if n := len(j.Pending("audit")); n != 2 {
		t.Errorf("taken over from a torn file: %d, want 2", n)
	}
}
