package upstream

import (
	"context"
	"log/slog"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolshelf/toolshelf/config"
	"github.com/toolshelf/toolshelf/launcher"
)

// dialers make the go-sdk transport of each of the configuration's
// transports (config.Transports) for cfg, recording in c what it must
// clean up: adding a transport is an entry there and one here
// (TestEveryTransportDials).
var dialers = map[string]func(ctx context.Context, cfg *serverConfig, c *conn, logger *slog.Logger) (mcp.Transport, error){
	"stdio": func(_ context.Context, cfg *serverConfig, c *conn, logger *slog.Logger) (mcp.Transport, error) {
		p, err := launcher.Start(&cfg.Plan, logger)
		if err != nil {
			return nil, err
		}
		c.proc = p
		return &mcp.IOTransport{Reader: p.Stdout(), Writer: p.Stdin(), MaxLineLength: launcher.MaxFrame}, nil
	},
	"http": func(_ context.Context, cfg *serverConfig, c *conn, _ *slog.Logger) (mcp.Transport, error) {
		if cfg.Signin != config.SigninPerPerson && cfg.Signin != config.SigninExchange {
			// Its tasks are followed on the same credentials (tasks.go).
			c.relay = versionClient(c, bearerClient(cfg))
		}
		return &mcp.StreamableClientTransport{Endpoint: cfg.URL, HTTPClient: versionClient(c, headerClient(cfg.Headers)), MaxRetries: -1, OAuthHandler: cfg.oauth}, nil
	},
	"sse": func(_ context.Context, cfg *serverConfig, _ *conn, _ *slog.Logger) (mcp.Transport, error) {
		return &mcp.SSEClientTransport{Endpoint: cfg.URL, HTTPClient: bearerClient(cfg)}, nil
	},
	"in-process": func(ctx context.Context, cfg *serverConfig, _ *conn, _ *slog.Logger) (mcp.Transport, error) {
		return cfg.Dial(ctx)
	},
}
