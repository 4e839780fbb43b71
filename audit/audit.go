// Package audit keeps the gateway's audit log: one JSON line per tool call
// and per search, written by a goroutine of its own so that a slow disk
// never slows a call. The queue between them is bounded; when it is full a
// record is dropped and counted, and the count is written to the log as a
// line of its own, so that no drop goes unseen. The file is rotated by
// size.
//
// It is public because gateway.Options takes an *audit.Log: an agent that
// embeds the gateway keeps its own audit trail the same way.
package audit

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/toolshelf/toolshelf/journal"
)

// Record is one line of the log. Argument values are kept only when asked
// for; the hash is always there, so that two calls with the same arguments
// can be matched.
type Record struct {
	Time    time.Time `json:"time"`
	Kind    string    `json:"kind"` // call, search, code (a run_code program), or dropped
	Profile string    `json:"profile"`
	// Subject and Email are the person who called, when they signed in
	// with the team's identity provider.
	Subject       string  `json:"subject,omitempty"`
	Email         string  `json:"email,omitempty"`
	Client        string  `json:"client,omitempty"`
	ClientVersion string  `json:"clientVersion,omitempty"`
	Tool          string  `json:"tool,omitempty"`
	Server        string  `json:"server,omitempty"`
	DurationMS    float64 `json:"durationMs"`
	Outcome       string  `json:"outcome,omitempty"`
	// Decision and Rule say why the operators' rules stopped a call:
	// "forbidden" or "declined" (by the person, or a client that cannot
	// ask), and the rules that decided.
	Decision      string `json:"decision,omitempty"`
	Rule          string `json:"rule,omitempty"`
	RequestBytes  int    `json:"requestBytes"`
	ResponseBytes int    `json:"responseBytes"`
	ArgsSHA256    string `json:"argsSha256,omitempty"`
	// Args are the arguments' values, only when the gateway is asked to
	// keep them (serve --audit-args), with secrets removed.
	Args string `json:"args,omitempty"`
	// Dropped is the number of records dropped since the last such line
	// (Kind "dropped").
	Dropped int64 `json:"dropped,omitempty"`
	// Rank is, for a call, the rank its tool had in the session's latest
	// search that returned it; 0 when no search ranked it (or the record
	// predates this field).
	Rank int `json:"rank,omitempty"`
	// Via says how a call was made when not by the client itself: "code"
	// for a call a run_code program made.
	Via string `json:"via,omitempty"`

	// origin is the record's place in the journal, until the store has
	// it.
	origin string
}

// Hash is the hex SHA-256 of a request's arguments.
func Hash(args []byte) string {
	sum := sha256.Sum256(args)
	return hex.EncodeToString(sum[:])
}

var discard = slog.New(slog.DiscardHandler)

// Options configures a Log. Nil means defaults.
type Options struct {
	// MaxBytes is the size at which the file is rotated (default 64 MiB);
	// Keep is how many rotated files are kept, as FILE.1 ... FILE.Keep
	// (default 3).
	MaxBytes int64
	Keep     int
	// Queue is how many records may wait for the writer (default 4096).
	Queue  int
	Logger *slog.Logger
	// Journal, for a log in the shared store, holds each record in this
	// machine's journal file from Add until the store has it: a replica
	// killed before the store took its records leaves them for the next
	// one to land. The journal's Sync (the gateway's Options.Sync) puts
	// them on disk before an answer leaves.
	Journal *journal.Journal
}

// Log is an audit log file. Add may be called from any goroutine; Run
// writes.
type Log struct {
	path    string
	shared  Shared // the store the records go to instead of a file
	opts    Options
	logger  *slog.Logger
	queue   chan Record
	dropped atomic.Int64 // not yet reported in the file
	total   atomic.Int64 // dropped since Open
	waiting atomic.Int64 // for the shared store, while it is away
	// journalFailed counts the records the journal did not take.
	journalFailed atomic.Int64
	running       atomic.Bool
}

// Open returns the log at path, creating the file (mode 0600: it names
// tools and clients) when it does not exist. Nothing is written until Run.
func Open(path string, opts *Options) (*Log, error) {
	l := &Log{path: path}
	if opts != nil {
		l.opts = *opts
	}
	if l.opts.MaxBytes <= 0 {
		l.opts.MaxBytes = 64 << 20
	}
	if l.opts.Keep <= 0 {
		l.opts.Keep = 3
	}
	if l.opts.Queue <= 0 {
		l.opts.Queue = 4096
	}
	l.logger = l.opts.Logger
	if l.logger == nil {
		l.logger = discard
	}
	f, err := openLog(path)
	if err != nil {
		return nil, fmt.Errorf("audit log: %w", err)
	}
	f.Close()
	l.queue = make(chan Record, l.opts.Queue)
	return l, nil
}

// Add queues a record; when the queue is full the record is dropped and
// counted. With a journal (Options.Journal) the record is first written
// there; the error is a record the journal did not take (it waits in
// memory only, and the answer it belongs to must not promise it).
func (l *Log) Add(r Record) error {
	var journalErr error
	if j := l.opts.Journal; j != nil && l.shared != nil {
		origin, err := j.Add("audit", r)
		if err != nil {
			journalErr = err
			if n := l.journalFailed.Add(1); n&(n-1) == 0 {
				l.logger.Warn("audit: a record is not in the journal; it waits in memory only", "journal", j.Where(), "error", err, "times", n)
			}
		} else {
			r.origin = origin
		}
	}
	select {
	case l.queue <- r:
	default:
		l.dropped.Add(1)
		if n := l.total.Add(1); n&(n-1) == 0 { // log at 1, 2, 4, 8, ...
			l.logger.Warn("audit records dropped: the log cannot keep up", "dropped", n)
		}
	}
	return journalErr
}

// Dropped is the number of records dropped since Open.
func (l *Log) Dropped() int64 { return l.total.Load() }

// Run writes queued records until ctx is done, then writes what is still
// queued and returns.
func (l *Log) Run(ctx context.Context) error {
	// Two writers of one queue would split it between them and write
	// over each other's file.
	if !l.running.CompareAndSwap(false, true) {
		return errors.New("audit: the log is already running")
	}
	if l.shared != nil {
		return l.runShared(ctx)
	}
	f, err := openLog(l.path)
	if err != nil {
		return fmt.Errorf("audit log: %w", err)
	}
	w := &writer{l: l, f: f, buf: bufio.NewWriter(f)}
	if fi, err := f.Stat(); err == nil {
		w.size = fi.Size()
	}
	defer func() { w.flush(); w.f.Close() }()
	for {
		select {
		case r := <-l.queue:
			w.write(r)
			// Write whatever else is waiting before flushing once.
			for more := true; more; {
				select {
				case r := <-l.queue:
					w.write(r)
				default:
					more = false
				}
			}
			w.flush()
		case <-ctx.Done():
			for {
				select {
				case r := <-l.queue:
					w.write(r)
				default:
					w.reportDrops()
					return nil
				}
			}
		}
	}
}

type writer struct {
	l    *Log
	f    *os.File
	buf  *bufio.Writer
	size int64
}

func (w *writer) write(r Record) {
	w.reportDrops()
	w.line(r)
}

// reportDrops writes the count of records dropped since the last report.
func (w *writer) reportDrops() {
	if n := w.l.dropped.Swap(0); n > 0 {
		w.line(Record{Time: time.Now().UTC(), Kind: "dropped", Dropped: n})
	}
}

func (w *writer) line(r Record) {
	b, err := json.Marshal(r)
	if err != nil {
		return
	}
	b = append(b, '\n')
	if w.size > 0 && w.size+int64(len(b)) > w.l.opts.MaxBytes {
		w.rotate()
	}
	n, err := w.buf.Write(b)
	w.size += int64(n)
	if err != nil {
		w.l.logger.Warn("audit log: write failed", "error", err)
	}
}

func (w *writer) flush() {
	if err := w.buf.Flush(); err != nil {
		w.l.logger.Warn("audit log: write failed", "error", err)
	}
}

// rotate moves FILE to FILE.1 (and FILE.1 to FILE.2, ...) and starts a new
// FILE.
func (w *writer) rotate() {
	w.flush()
	w.f.Close()
	p := w.l.path
	os.Remove(p + "." + strconv.Itoa(w.l.opts.Keep))
	for i := w.l.opts.Keep - 1; i >= 1; i-- {
		os.Rename(p+"."+strconv.Itoa(i), p+"."+strconv.Itoa(i+1))
	}
	if err := os.Rename(p, p+".1"); err != nil {
		w.l.logger.Warn("audit log: rotation failed", "error", err)
	}
	f, err := openLog(p)
	if err != nil {
		// Keep writing to nowhere rather than stop the gateway; say so.
		w.l.logger.Error("audit log: cannot reopen after rotation", "error", err)
		f, _ = os.Open(os.DevNull)
	}
	w.f, w.buf, w.size = f, bufio.NewWriter(f), 0
}

// openLog opens the log file to append, never through a symbolic link
// (noFollow), and only a regular file: not a FIFO or a device someone
// put in its place.
func openLog(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY|noFollow, 0o600)
	if err != nil {
		return nil, err
	}
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	return f, nil
}
