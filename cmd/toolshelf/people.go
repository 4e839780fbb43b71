package main

import (
	"github.com/toolshelf/toolshelf/gateway"
	"github.com/toolshelf/toolshelf/upstream"
)

// people is the configuration's "identity" as the HTTP surface takes it:
// the source's verifier of the provider's tokens and people's sign-ins,
// and the claims that open each profile.
func people(src *toolSource) *gateway.People {
	claims := map[string]map[string][]string{upstream.DefaultProfile: src.config.Identity.Claims}
	for _, p := range src.config.Profiles {
		claims[p.Name] = p.Claims
	}
	return &gateway.People{Verifier: src.identity, Claims: claims, Flows: src.flows}
}
