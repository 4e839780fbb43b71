package journal

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
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
	entries, damaged, err := read(f, nil)
	f.Close()
	if err != nil || len(entries) != 64 || damaged != 0 {
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

// A damaged record in the middle of a file is skipped and counted; every
// record after it is taken over, and the file is kept beside as .damaged.
// Damage of every kind: a flipped byte, a line cut short, garbage, a line
// whose checksum is of another line.
func TestDamagedRecords(t *testing.T) {
	var b []byte
	var lines [][]byte
	for i := range 30 {
		l := encodeLine(nil, nil, []byte(fmt.Sprintf(`{"o":"x.%d","k":"audit","d":%d}`, i, i)))
		lines = append(lines, l)
	}
	flipped := bytes.Clone(lines[3])
	flipped[20] ^= 0x01
	lines[3] = flipped
	lines[7] = append(bytes.Clone(lines[7][:15]), '\n')
	lines[11] = []byte("\x00\x00garbage\n")
	lines[19] = append(append([]byte{}, lines[20][:9]...), lines[19][9:]...) // another line's checksum
	for _, l := range lines {
		b = append(b, l...)
	}
	b = append(b, `{"o":"x.99","k":"audit","d":1}`+"\n"...) // a line of an older journal, without a checksum
	dir := t.TempDir()
	file := filepath.Join(dir, "journal-x.wal")
	os.WriteFile(file, b, 0o600)
	j, err := Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	got := j.Pending("audit")
	if len(got) != 27 {
		t.Errorf("taken over: %d records, want 27 (30 less 4 damaged, and the older journal's line)", len(got))
	}
	for _, e := range got {
		if e.Origin == "x.3" || e.Origin == "x.7" || e.Origin == "x.19" {
			t.Errorf("a damaged record was taken: %s %s", e.Origin, e.Data)
		}
	}
	if _, err := os.Stat(file + ".damaged"); err != nil {
		t.Errorf("the damaged file is not kept: %v", err)
	}
	if _, err := os.Stat(file); err == nil {
		t.Error("the damaged file is still there to be taken again")
	}
}

// A journal that cannot take a record says so (Ready), and is ready again
// once it can: here the file is full (MaxBytes), then emptied by the
// store taking what waits.
func TestNotReadyWhenFull(t *testing.T) {
	j, err := Open(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	if err := j.Ready(); err != nil {
		t.Fatal(err)
	}
	o, err := j.Add("audit", 1)
	if err != nil {
		t.Fatal(err)
	}
	j.mu.Lock()
	j.size = MaxBytes - 20 // as if full
	j.mu.Unlock()
	if _, err := j.Add("audit", strings.Repeat("x", 100)); !errors.Is(err, ErrFull) {
		t.Fatalf("an add past MaxBytes: %v", err)
	}
	if err := j.Ready(); !errors.Is(err, ErrFull) {
		t.Errorf("a full journal is ready: %v", err)
	}
	j.Done(o) // the store took everything: the file is emptied
	j.mu.Lock()
	j.probed = time.Time{}
	j.mu.Unlock()
	if err := j.Ready(); err != nil {
		t.Errorf("after the store took what waited: %v", err)
	}
}

// A write that fails (the file's descriptor no longer writable, as on a
// disk gone read-only) breaks the journal until a probe succeeds.
func TestNotReadyWhenWritesFail(t *testing.T) {
	dir := t.TempDir()
	j, err := Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	good := j.f
	ro, err := os.Open(j.Where()) // read-only: every write fails
	if err != nil {
		t.Fatal(err)
	}
	j.mu.Lock()
	j.f = ro
	j.mu.Unlock()
	if _, err := j.Add("audit", 1); err == nil {
		t.Fatal("an add to a read-only file succeeded")
	}
	if err := j.Ready(); err == nil {
		t.Error("a journal whose writes fail is ready")
	}
	j.mu.Lock()
	j.f, j.probed = good, time.Time{}
	j.mu.Unlock()
	ro.Close()
	if err := j.Ready(); err != nil {
		t.Errorf("once writes go again: %v", err)
	}
	j.Close()
}

// A signed journal (a fleet's replica) refuses a line it did not sign:
// one written into the folder by someone without the key, one with a
// checksum only, one of an older journal without either; its own lines
// are taken over by the next journal with the key.
func TestSignedJournal(t *testing.T) {
	dir := t.TempDir()
	key := []byte("a key derived from the fleet key")
	j, err := OpenSigned(dir, key, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if _, err := j.Append(context.Background(), "audit", i); err != nil {
			t.Fatal(err)
		}
	}
	f, _ := os.OpenFile(j.Where(), os.O_APPEND|os.O_WRONLY, 0)
	f.Write(encodeLine(nil, nil, []byte(`{"o":"forged.1","k":"audit","d":"checksummed only"}`)))
	f.Write(encodeLine(nil, []byte("another key"), []byte(`{"o":"forged.2","k":"audit","d":"signed by another key"}`)))
	f.Write([]byte(`{"o":"forged.3","k":"audit","d":"no checksum"}` + "\n"))
	f.Close()
	path := j.Where()
	j.f.Close() // as if the process died: the file stays, unlanded
	j.f = nil
	next, err := OpenSigned(dir, key, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer next.Close()
	got := next.Pending("audit")
	if len(got) != 3 {
		t.Errorf("taken over: %d entries, want the 3 signed ones", len(got))
	}
	for _, e := range got {
		if strings.HasPrefix(e.Origin, "forged") {
			t.Errorf("a line not signed with the key was taken: %s", e.Origin)
		}
	}
	if _, err := os.Stat(path + ".damaged"); err != nil {
		t.Errorf("the file with refused lines is not kept: %v", err)
	}
}

// An entry is on disk before Append returns: a flush of the file is seen
// holding it. (Skipping the flush passes every other test: a kill cannot
// show it, only the machine's power can.) Appends that wait together are
// served by fewer flushes than entries.
func TestAppendFlushesBeforeItReturns(t *testing.T) {
	var mu sync.Mutex
	var flushed []int64 // the file's size at each flush
	saved := syncFile
	t.Cleanup(func() { syncFile = saved })
	syncFile = func(f *os.File) error {
		st, err := f.Stat()
		if err != nil {
			return err
		}
		mu.Lock()
		flushed = append(flushed, st.Size())
		mu.Unlock()
		return saved(f)
	}
	j, err := Open(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	ctx := context.Background()
	for i := range 3 {
		if _, err := j.Append(ctx, "audit", map[string]int{"n": i}); err != nil {
			t.Fatal(err)
		}
		st, err := j.f.Stat()
		if err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		last := flushed[len(flushed)-1]
		mu.Unlock()
		if last != st.Size() {
			t.Fatalf("entry %d: Append returned with %d bytes written and %d flushed", i, st.Size(), last)
		}
	}
	// Many at once: one flush may serve a group.
	mu.Lock()
	before := len(flushed)
	mu.Unlock()
	var wg sync.WaitGroup
	for i := range 64 {
		wg.Go(func() {
			if _, err := j.Append(ctx, "audit", map[string]int{"n": i}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	mu.Lock()
	n := len(flushed) - before
	mu.Unlock()
	if n == 0 || n > 64 {
		t.Errorf("%d flushes for 64 appends", n)
	}
	t.Logf("%d flushes for 64 appends at once", n)
}

// A journal whose lines end in CRLF (it passed through an editor or a
// copy on Windows) loses no record.
func TestCRLFLines(t *testing.T) {
	dir := t.TempDir()
	crlf := `{"o":"x.0","k":"audit","d":1}` + "\r\n" + `{"o":"x.1","k":"audit","d":2}` + "\r\n"
	os.WriteFile(filepath.Join(dir, "journal-x.wal"), []byte(crlf), 0o600)
	j, err := Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	if n := len(j.Pending("audit")); n != 2 {
		t.Errorf("taken over from a CRLF file: %d, want 2", n)
	}
}
