package main

import (
	"github.com/toolshelf/toolshelf/gateway"
	"github.com/toolshelf/toolshelf/identity"
	"github.com/toolshelf/toolshelf/upstream"
)

// people is the configuration's "identity" as the HTTP surface takes it:
// a verifier of the provider's tokens, and the claims that open each
// profile.
func people(cfg *upstream.Config) (*gateway.People, error) {
	id := cfg.Identity
	v, err := identity.New(id.Config, nil)
	if err != nil {
		return nil, err
	}
	claims := map[string]map[string][]string{upstream.DefaultProfile: id.Claims}
	for _, p := range cfg.Profiles {
		claims[p.Name] = p.Claims
	}
	return &gateway.People{Verifier: v, Claims: claims}, nil
}
