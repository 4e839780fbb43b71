package upstream

import (
	"context"
	"fmt"
)

// verified lets a call through only to a tool its server listed (not one
// known only from its configuration or a cache) and that the lock file
// does not hold back now (quarantined, or unreviewed under "approve"):
// the catalog a caller resolved in may be older than the last pin check.
func verified(_ context.Context, sc *Scope, c *Call) error {
	if c.Tool.Unverified {
		return fmt.Errorf("%w: %s is known only from %s's configuration or output", ErrUnverified, c.Tool.Name, c.Tool.Server)
	}
	if h, ok := sc.pool.quarantinedTool(c.Tool.Server, c.Tool.Tool); ok {
		return fmt.Errorf("%w: %s", ErrQuarantined, h.Message())
	}
	return nil
}
