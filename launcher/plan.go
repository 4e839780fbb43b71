// Package launcher starts a stdio server from a plan that says everything
// the server will get: its program and arguments, its environment (set
// inside its sandbox only), the paths it is granted and the files of
// toolshelf's it is kept from, its network and the host ports it may
// reach, its package cache and the install that fills it. Processes on
// the host side (bubblewrap, slirp4netns, nsenter, a container engine's
// CLI) run with toolshelf's own minimal environment, never the server's.
//
// upstream keeps connections, the pool and scopes; it makes a Plan of
// each server's configuration and hands it here.
package launcher

import (
	"github.com/toolshelf/toolshelf/config"
)

// Plan is what a stdio server is started with: its configuration (the
// person's, or a registry's that the person confirmed with toolshelf add)
// and what the pool adds to it.
type Plan struct {
	config.ServerConfig
	// Environ is the server's environment ("NAME=value"), set inside its
	// sandbox only; nil gives it the host's basic variables and its own
	// "env".
	Environ []string
	// Hide are toolshelf's files, covered in the server's sandbox;
	// Uncontained says why the pool runs it uncontained.
	Hide        []string
	Uncontained string
	// CacheDir is the folder of the server's own package caches (npx's,
	// uvx's): see CacheDir.
	CacheDir string
}
