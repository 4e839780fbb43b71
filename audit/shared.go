package audit

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/toolshelf/toolshelf/journal"
	"github.com/toolshelf/toolshelf/store"
)

// Shared is a store that keeps the records of several replicas
// (store.DB is one).
type Shared interface {
	store.Audit
	Where() string
}

// OpenShared returns a log whose records go to a store that replicas
// share (serve --store with --audit store): the fleet's trail in
// one place. While the store is away, records wait in memory (at most
// Options.Queue of them; past that they are dropped and counted, and the
// count is written as a record when the store is back).
func OpenShared(st Shared, opts *Options) *Log {
	l := &Log{shared: st}
	if opts != nil {
		l.opts = *opts
	}
	if l.opts.Queue <= 0 {
		l.opts.Queue = 4096
	}
	l.logger = l.opts.Logger
	if l.logger == nil {
		l.logger = discard
	}
	l.queue = make(chan Record, l.opts.Queue)
	return l
}

// runShared writes queued records to the store in batches until ctx is
// done, then what is still waiting (for a few seconds at most).
func (l *Log) runShared(ctx context.Context) error {
	var pending []Record
	if j := l.opts.Journal; j != nil {
		// What replicas gone (or this one's last run) left unlanded.
		if n := journal.Take(j, "audit", func(r Record, origin string) {
			r.origin = origin
			pending = append(pending, r)
		}); n > 0 {
			l.logger.Info("audit: landing the records a journal left", "records", n)
		}
	}
	retry := time.NewTimer(0)
	<-retry.C
	if len(pending) > 0 {
		retry.Reset(0) // land the journal's records now
	}
	delay, away := 200*time.Millisecond, false
	take := func(r Record) {
		if len(pending) >= l.opts.Queue {
			l.dropped.Add(1)
			l.total.Add(1)
			return
		}
		pending = append(pending, r)
	}
	write := func(ctx context.Context) {
		if n := l.dropped.Swap(0); n > 0 {
			pending = append(pending, Record{Time: time.Now().UTC(), Kind: "dropped", Dropped: n})
		}
		if len(pending) == 0 {
			return
		}
		if err := l.insert(ctx, pending); err != nil {
			l.waiting.Store(int64(len(pending)))
			if !away {
				l.logger.Warn("audit: the store is unreachable; records wait in memory", "store", l.shared.Where(), "waiting", len(pending), "error", err)
			}
			away = true
			retry.Reset(delay)
			delay = min(2*delay, 5*time.Second)
			return
		}
		if away {
			l.logger.Info("audit: the store is back; waiting records written", "records", len(pending))
		}
		if j := l.opts.Journal; j != nil {
			var landed []string
			for _, r := range pending {
				if r.origin != "" {
					landed = append(landed, r.origin)
				}
			}
			j.Done(landed...)
		}
		pending, away, delay = pending[:0], false, 200*time.Millisecond
		l.waiting.Store(0)
	}
	drain := func() {
		for {
			select {
			case r := <-l.queue:
				take(r)
			default:
				return
			}
		}
	}
	for {
		select {
		case r := <-l.queue:
			take(r)
			drain()
			if !away {
				write(ctx)
			}
		case <-retry.C:
			write(ctx)
		case <-ctx.Done():
			drain()
			last, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			write(last)
			if len(pending) > 0 {
				return fmt.Errorf("audit: %d records could not be written to the store %s", len(pending), l.shared.Where())
			}
			return nil
		}
	}
}

// Waiting is the number of records waiting for the shared store to take
// them (0 for a file, and while the store is well).
func (l *Log) Waiting() int { return int(l.waiting.Load()) }

// insert writes a batch in one transaction. A record landed twice (its
// journal's mark lost in a crash) is taken once.
func (l *Log) insert(ctx context.Context, recs []Record) error {
	rows := make([]store.AuditRow, 0, len(recs))
	for _, r := range recs {
		raw, err := json.Marshal(r)
		if err != nil {
			continue
		}
		rows = append(rows, store.AuditRow{Time: r.Time, Record: raw, Origin: r.origin})
	}
	return l.shared.AddRecords(ctx, rows)
}

// ReadShared returns the store's records from since on (all when since is
// zero), oldest first.
func ReadShared(ctx context.Context, st store.Audit, since time.Time) ([]Record, error) {
	raws, err := st.Records(ctx, since)
	if err != nil {
		return nil, err
	}
	recs := make([]Record, len(raws))
	for i, raw := range raws {
		if err := json.Unmarshal(raw, &recs[i]); err != nil {
			return nil, err
		}
	}
	return recs, nil
}
