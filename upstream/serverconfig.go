package upstream

import (
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/toolshelf/toolshelf/config"
)

// serverConfig is a server's configuration with what the pool adds to
// it when it runs the server.
type serverConfig struct {
	config.ServerConfig
	// oauth sends the server's token (Options.Tokens), for remote servers.
	oauth auth.OAuthHandler
	// environ is a stdio server's environment (see serverEnv).
	environ []string
	// hide are toolshelf's files, covered in the server's sandbox;
	// uncontained says why the pool runs it uncontained (Options.NoContain).
	hide        []string
	uncontained string
	// cacheDir is the folder of the server's own package caches (npx's,
	// uvx's).
	cacheDir string
}
