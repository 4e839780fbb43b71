package upstream

import (
	"context"
	"fmt"
)

// inProfile lets a call through only to a tool of the scope's profile:
// its servers, and its allow and deny patterns. A tool found in another
// catalog than the scope's (a snapshot a caller kept) is checked here.
func inProfile(_ context.Context, sc *Scope, c *Call) error {
	if sc.profile == nil {
		return nil
	}
	if !sc.profile.HasServer(c.Tool.Server) || !sc.profile.Keeps(c.Tool) {
		return fmt.Errorf("%w %q in profile %s", ErrUnknownTool, c.Tool.Name, sc.profile.Name)
	}
	return nil
}
