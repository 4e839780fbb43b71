package fleet

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"time"
)

// Key derives a key of the fleet's for a purpose ("console": the
// console's cookies and forms), the same on every replica, and never the
// fleet key itself.
func (m *Member) Key(purpose string) []byte {
	mac := hmac.New(sha256.New, m.keys.sign)
	mac.Write([]byte("purpose " + purpose))
	return mac.Sum(nil)
}

// Failed records a failed sign-in of a client address for the whole
// fleet, and returns how many that address made in the last window
// (console.Attempts).
func (m *Member) Failed(ctx context.Context, addr string, window time.Duration) (int, error) {
	return m.db.AddFailure(ctx, addr, window)
}

// Failures returns how many failed sign-ins a client address made in the
// last window across the fleet, and how long until the oldest leaves it.
func (m *Member) Failures(ctx context.Context, addr string, window time.Duration) (int, time.Duration, error) {
	return m.db.Failures(ctx, addr, window)
}
