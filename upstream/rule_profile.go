package upstream

import (
	"context"
	"fmt"
)

// inProfile lets a call through only to a tool of the scope's profile:
// its servers, and its allow and deny patterns. A tool found in another
// catalog than the scope's (a snapshot a caller kept) is checked here.
func inProfile(_ context.Context, sc *Scope, c *Call) error {
	profile := sc.profile.Load()
	if profile == nil {
		return nil
	}
	if !profile.HasServer(c.Tool.Server) || !profile.Keeps(c.Tool) {
		return fmt.Errorf("%w %q in profile %s", ErrUnknownTool, c.Tool.Name, profile.Name)
	}
	return nil
}
