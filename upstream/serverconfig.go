package upstream

import (
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/toolshelf/toolshelf/launcher"
)

// serverConfig is a server's configuration with what the pool adds to
// it when it runs the server: the launcher's plan of a stdio server, and
// the sign-in of a remote one.
type serverConfig struct {
	launcher.Plan
	// oauth sends the server's token (Options.Tokens), for remote servers.
	oauth auth.OAuthHandler
}
