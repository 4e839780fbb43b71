package upstream

import (
	"context"
	"fmt"
)

// ErrFiltered stops a call of a tool its server's "tools" filter leaves
// out.
var ErrFiltered = fmt.Errorf("%w: left out by its server's tool filter", ErrUnknownTool)

// serverFilter lets a call through only to a tool its server's own
// configuration keeps ("tools": {"allow", "deny"}).
func serverFilter(_ context.Context, sc *Scope, c *Call) error {
	s := sc.pool.server(c.Tool.Server)
	if s != nil && !s.cfg.Keeps(c.Tool.Tool) {
		return fmt.Errorf("%w %q", ErrFiltered, c.Tool.Name)
	}
	return nil
}
