package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/toolshelf/toolshelf/learn"
)

var removeCommand = &command{
	name:    "remove",
	summary: "remove a server from the configuration, and the secrets add kept for it",
	usage:   "NAME [--config FILE]",
	help: `
Removes the server NAME from the configuration (the file is replaced at
once, its other servers and settings kept as they were) and the secret
files 'toolshelf add' kept for it in the state folder. The configuration
is --config FILE, $TOOLSHELF_CONFIG, or toolshelf/servers.json in the
user's configuration folder.`,
	flags: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
		config := fs.String("config", "", "the configuration `FILE` to remove from")
		return func(ctx context.Context, e *env, args []string) error {
			if len(args) != 1 {
				return usagef("name one server of the configuration")
			}
			path := configPath(e, *config)
			if path == "" {
				if path = defaultConfigPath(e); path == "" {
					return usagef("no configuration folder: give --config FILE")
				}
			}
			said, err := removeServer(e, path, args[0])
			if err != nil {
				return err
			}
			fmt.Fprintln(e.stdout, said)
			fmt.Fprintln(e.stdout, tookChange(ctx, e, path))
			return nil
		}
	},
}

// removeServer removes a server from the configuration at path, and the
// secrets kept for it, and says what it did.
func removeServer(e *env, path, name string) (string, error) {
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return "", usagef("%s does not exist", path)
	}
	doc, servers, err := readConfigDoc(path)
	if err != nil {
		return "", err
	}
	if _, ok := servers[name]; !ok {
		return "", usagef("%s has no server named %q", path, name)
	}
	delete(servers, name)
	if err := writeConfigDoc(path, doc, servers); err != nil {
		return "", err
	}
	said := fmt.Sprintf("removed %s from %s", name, path)
	if state := learn.DefaultPath(e.getenv); state != "" {
		secrets := filepath.Join(filepath.Dir(state), "secrets", name)
		if filepath.Base(secrets) == name && name != "." && name != ".." {
			if _, err := os.Lstat(secrets); err == nil {
				if err := os.RemoveAll(secrets); err != nil {
					return said, fmt.Errorf("%s; its secrets in %s could not be removed: %w", said, secrets, err)
				}
				said += ", and its secrets kept in " + secrets
			}
		}
	}
	return said, nil
}
