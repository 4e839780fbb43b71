package main

import (
	"context"
	"flag"
	"fmt"
)

var storeCommand = &command{
	name:    "store",
	summary: "look after the shared store: rotate the key that seals sign-ins",
	usage:   "rotate-key [--config FILE] [--store URL]",
	help: `
'store rotate-key' seals every sign-in of the shared store again with a new
store key, so that the old one can be retired (a laptop that held it is
lost, a person who knew it left). Replicas read sign-ins sealed with either
key while it runs:

  1. Give every replica the new key as $TOOLSHELF_STORE_KEY_FILE and the
     old one as $TOOLSHELF_STORE_OLD_KEY_FILE, and restart them one by one.
  2. Run, with the same two variables:
       toolshelf store rotate-key --store postgres://...
  3. Remove $TOOLSHELF_STORE_OLD_KEY_FILE from the replicas.

A sign-in that opens with neither key (sealed with a third, or altered) is
left as it is and named; 'toolshelf auth status' lists it, and signing in
again replaces it. Each sign-in sealed again gets a newer version, so the
rows sealed with the old key cannot be put back.

` + configHelp,
	flags: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
		config := fs.String("config", "", "servers configuration `FILE` (for its \"store\")")
		storeURL := storeFlag(fs)
		return func(ctx context.Context, e *env, args []string) error {
			if len(args) != 1 || args[0] != "rotate-key" {
				return usagef("store needs rotate-key")
			}
			if e.getenv(envStoreKey) == "" || e.getenv(envStoreOldKey) == "" {
				return usagef("rotate-key needs the new key in $%s_FILE and the old in $%s_FILE (or the variables themselves)", envStoreKey, envStoreOldKey)
			}
			cfg, _, err := optionalConfig(e, *config)
			if err != nil {
				return err
			}
			store, closeStore, err := authTokens(e, cfg, *storeURL)
			if err != nil {
				return err
			}
			defer closeStore()
			n, bad, err := store.Reseal(ctx)
			if err != nil {
				return err
			}
			fmt.Fprintf(e.stdout, "Sealed %d sign-ins with the new key in %s.\n", n, store.Where())
			for _, u := range bad {
				fmt.Fprintf(e.stdout, "Left %s: %s\n", u.Key.Server, u.Reason)
			}
			if len(bad) > 0 {
				return exitStatus(1)
			}
			fmt.Fprintf(e.stdout, "The old key ($%s) is needed no more.\n", envStoreOldKey)
			return nil
		}
	},
}
