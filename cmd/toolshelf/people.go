package main

import (
	"github.com/toolshelf/toolshelf/config"
	"github.com/toolshelf/toolshelf/gateway"
)

// people is the configuration's "identity" as the HTTP surface takes it:
// the source's verifier of the provider's tokens and people's sign-ins,
// and the claims that open each profile.
func people(src *toolSource) *gateway.People {
	claims := map[string]map[string][]string{config.DefaultProfile: src.config.Identity.Claims}
	for _, p := range src.config.Profiles {
		claims[p.Name] = p.Claims
	}
	return &gateway.People{Verifier: src.identity, Claims: claims, Flows: src.flows}
}
