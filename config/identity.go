package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/toolshelf/toolshelf/identity"
)

// Identity is "identity": the team's identity provider, whose people open
// the gateway's profiles with their own access tokens (see package
// identity).
type Identity struct {
	identity.Config
	// Claims say who opens the default profile (/mcp), as a profile's
	// "claims" do; without them no person opens it.
	Claims map[string][]string
	// ConsoleView and ConsoleAct say who may sign in to the web console
	// with the provider and look, and who may also approve, deny and
	// forget ("console": {"view": {...}, "act": {...}}); without "act"
	// only the admin token opens the console.
	ConsoleView, ConsoleAct map[string][]string
	// vars and files are where the client secret came from.
	vars, files []string
}

// identityJSON is "identity" as users write it.
type identityJSON struct {
	Issuer       string              `json:"issuer"`
	Audience     string              `json:"audience"`
	Scopes       []string            `json:"scopes"`
	ClientID     string              `json:"clientId"`
	ClientSecret string              `json:"clientSecret"`
	Algorithms   []string            `json:"algorithms"`
	Claims       map[string][]string `json:"claims"`
	Console      *struct {
		View map[string][]string `json:"view"`
		Act  map[string][]string `json:"act"`
	} `json:"console"`
}

var identityKeys = []string{"issuer", "audience", "scopes", "clientId", "clientSecret", "algorithms", "claims", "console"}

// parseIdentity reads "identity".
func parseIdentity(raw json.RawMessage, getenv func(string) string, dir string) (*Identity, error) {
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(raw, &keys); err != nil || keys == nil {
		return nil, errors.New(`"identity" must be an object: {"issuer": "https://idp.example.com", "audience": "toolshelf"}`)
	}
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		if !slices.Contains(identityKeys, k) {
			return nil, &keyedError{k, fmt.Sprintf("identity: unknown key %q%s", k, didYouMean(k, identityKeys))}
		}
	}
	var j identityJSON
	if err := json.Unmarshal(raw, &j); err != nil {
		var typ *json.UnmarshalTypeError
		if errors.As(err, &typ) {
			return nil, &keyedError{typ.Field, fmt.Sprintf("identity: %q has the wrong type: want %v, got a JSON %s", typ.Field, typ.Type, typ.Value)}
		}
		return nil, fmt.Errorf("identity: %v", err)
	}
	x := expander{getenv: getenv, dir: dir}
	id := &Identity{Config: identity.Config{
		Issuer: x.expand(j.Issuer, "issuer"), Audience: x.expand(j.Audience, "audience"), Scopes: j.Scopes,
		ClientID: x.expand(j.ClientID, "clientId"), Algorithms: j.Algorithms,
	}}
	files := x.files
	sx := expander{getenv: getenv, dir: dir}
	id.ClientSecret = sx.expand(j.ClientSecret, "clientSecret")
	if err := errors.Join(x.err, sx.err); err != nil {
		return nil, fmt.Errorf("identity: %v", err)
	}
	id.vars, id.files = sx.vars, append(files, sx.files...)
	if err := id.Check(); err != nil {
		return nil, fmt.Errorf("identity: %v", err)
	}
	claims, err := checkClaims(j.Claims)
	if err != nil {
		return nil, &keyedError{"claims", "identity: " + err.Error()}
	}
	id.Claims = claims
	if c := j.Console; c != nil {
		if id.ConsoleView, err = checkClaims(c.View); err == nil {
			id.ConsoleAct, err = checkClaims(c.Act)
		}
		switch {
		case err != nil:
			return nil, &keyedError{"console", "identity: console: " + err.Error()}
		case len(id.ConsoleAct) == 0:
			return nil, &keyedError{"console", `identity: "console" needs "act": the claims of the people who may approve, deny and forget`}
		case id.ClientID == "":
			return nil, &keyedError{"console", `identity: "console" signs people in as the gateway's client: it needs "clientId" and "clientSecret"`}
		}
	}
	return id, nil
}

// checkClaims checks a claim rule: each claim named has values.
func checkClaims(c map[string][]string) (map[string][]string, error) {
	for name, values := range c {
		if name == "" || len(values) == 0 {
			return nil, fmt.Errorf(`"claims": claim %q lists no values: a person must carry one of them, as in {"groups": ["sre"]}`, name)
		}
	}
	if len(c) == 0 {
		return nil, nil
	}
	return c, nil
}
