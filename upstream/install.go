package upstream

import (
	"context"
	"fmt"

	"github.com/toolshelf/toolshelf/launcher"
)

// Install installs a server's package now, as its first start would (a
// contained npx server's; nothing for another): toolshelf add runs it so
// that the next list or serve starts a ready server. It takes a slot of
// the servers starting at once.
func (p *Pool) Install(ctx context.Context, name string) error {
	s := p.server(name)
	if s == nil {
		return fmt.Errorf("no server %q", name)
	}
	select {
	case p.starting <- struct{}{}:
		defer func() { <-p.starting }()
	case <-ctx.Done():
		return ctx.Err()
	}
	return s.install(ctx)
}

// install installs the server's package when it needs it (see
// launcher.Install).
func (s *server) install(ctx context.Context) error {
	return launcher.Install(ctx, &s.cfg.Plan, s.redactor().Redact, s.logger)
}
