package upstream

import (
	"context"
	"log/slog"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolshelf/toolshelf/config"
)

// A transportKind is one way of reaching a server: the one table of
// transports, so that adding one is one entry here. dial makes the
// go-sdk transport for cfg, recording in c what it must clean up.
type transportKind struct {
	name string
	// remote transports take "url"; the others "command" (or Dial).
	remote bool
	dial   func(ctx context.Context, cfg *serverConfig, c *conn, logger *slog.Logger) (mcp.Transport, error)
}

var transports = []transportKind{
	{name: "stdio", dial: func(_ context.Context, cfg *serverConfig, c *conn, logger *slog.Logger) (mcp.Transport, error) {
		p, err := startProcess(cfg, logger)
		if err != nil {
			return nil, err
		}
		c.proc = p
		return &mcp.IOTransport{Reader: p.stdout, Writer: p.stdin, MaxLineLength: maxFrame}, nil
	}},
	{name: "http", remote: true, dial: func(_ context.Context, cfg *serverConfig, c *conn, _ *slog.Logger) (mcp.Transport, error) {
		if cfg.Signin != config.SigninPerPerson && cfg.Signin != config.SigninExchange {
			// Its tasks are followed on the same credentials (tasks.go).
			c.relay = versionClient(c, bearerClient(cfg))
		}
		return &mcp.StreamableClientTransport{Endpoint: cfg.URL, HTTPClient: versionClient(c, headerClient(cfg.Headers)), MaxRetries: -1, OAuthHandler: cfg.oauth}, nil
	}},
	{name: "sse", remote: true, dial: func(_ context.Context, cfg *serverConfig, _ *conn, _ *slog.Logger) (mcp.Transport, error) {
		return &mcp.SSEClientTransport{Endpoint: cfg.URL, HTTPClient: bearerClient(cfg)}, nil
	}},
	{name: "in-process", dial: func(ctx context.Context, cfg *serverConfig, _ *conn, _ *slog.Logger) (mcp.Transport, error) {
		return cfg.Dial(ctx)
	}},
}

// transportNamed returns the transport of a name, and whether there is one.
func transportNamed(name string) (transportKind, bool) {
	for _, t := range transports {
		if t.name == name {
			return t, true
		}
	}
	return transportKind{}, false
}
