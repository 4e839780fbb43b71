package identity

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"
)

// A person signs in to a web page of the gateway (the console) with the
// authorization code flow of OpenID Connect, with PKCE: the page sends
// the browser to AuthCodeURL, and SignIn takes the code it comes back
// with.

// OAuth2 returns the gateway's client at the provider for a sign-in that
// comes back to redirect, asking for scopes.
func (v *Verifier) OAuth2(ctx context.Context, redirect string, scopes []string) (*oauth2.Config, error) {
	if v.cfg.ClientID == "" {
		return nil, errors.New(`signing people in needs the gateway's client at the provider ("identity": "clientId", "clientSecret")`)
	}
	meta, err := v.Metadata(ctx)
	if err != nil {
		return nil, err
	}
	if meta.AuthorizationEndpoint == "" || meta.TokenEndpoint == "" {
		return nil, errors.New("the identity provider names no authorization or token endpoint")
	}
	return &oauth2.Config{
		ClientID: v.cfg.ClientID, ClientSecret: v.cfg.ClientSecret, RedirectURL: redirect, Scopes: scopes,
		Endpoint: oauth2.Endpoint{AuthURL: meta.AuthorizationEndpoint, TokenURL: meta.TokenEndpoint},
	}, nil
}

// SignIn ends a person's sign-in: it redeems code (with the PKCE
// verifier), checks the ID token (signature, issuer, the gateway's client
// as audience, expiry, nonce) and returns the person, with the claims of
// the provider's userinfo beside the ID token's (a provider may keep
// email and groups there).
func (v *Verifier) SignIn(ctx context.Context, oc *oauth2.Config, code, verifier, nonce string) (*Person, error) {
	ctx = oidc.ClientContext(ctx, v.opts.Client)
	tok, err := oc.Exchange(ctx, code, oauth2.VerifierOption(verifier))
	if err != nil {
		var re *oauth2.RetrieveError
		if errors.As(err, &re) && re.ErrorCode != "" {
			return nil, fmt.Errorf("the provider refused the code: %s", re.ErrorCode)
		}
		return nil, fmt.Errorf("redeeming the code: %w", err)
	}
	raw, _ := tok.Extra("id_token").(string)
	if raw == "" {
		return nil, errors.New(`the provider sent no ID token (is "openid" among the scopes?)`)
	}
	if _, _, err := v.provider(ctx); err != nil {
		return nil, err
	}
	v.mu.Lock()
	keys, meta := v.keys, v.meta
	v.mu.Unlock()
	idv := oidc.NewVerifier(meta.Issuer, keys, &oidc.Config{ClientID: v.cfg.ClientID, SupportedSigningAlgs: v.cfg.Algorithms, Now: func() time.Time { return v.opts.Now().Add(-v.opts.Skew) }})
	idt, err := idv.Verify(ctx, raw)
	if err != nil {
		return nil, &InvalidError{"ID token: " + err.Error()}
	}
	if idt.Nonce != nonce {
		return nil, &InvalidError{"ID token: the nonce is not this sign-in's"}
	}
	var claims map[string]any
	if err := idt.Claims(&claims); err != nil {
		return nil, &InvalidError{"ID token: claims are not a JSON object"}
	}
	if meta.UserinfoEndpoint != "" {
		// Best effort: an access token meant for an API (a resource
		// indicator) may not open the userinfo endpoint, and the ID
		// token's claims are enough then.
		info, err := v.userinfo(ctx, meta.UserinfoEndpoint, tok.AccessToken)
		var refused *refusedError
		switch {
		case errors.As(err, &refused):
			info = nil
		case err != nil:
			return nil, err
		case info["sub"] != idt.Subject:
			return nil, errors.New("the provider's userinfo is of another subject than the ID token")
		}
		for k, x := range info {
			if _, ok := claims[k]; !ok {
				claims[k] = x
			}
		}
	}
	p := personOf(claims)
	p.Expiry = idt.Expiry
	return p, nil
}

func (v *Verifier) userinfo(ctx context.Context, endpoint, access string) (map[string]any, error) {
	status, data, err := get(ctx, v.opts.Client, endpoint, access)
	if err != nil {
		return nil, fmt.Errorf("userinfo: %w", err)
	}
	switch {
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		return nil, &refusedError{status}
	case status != http.StatusOK:
		return nil, fmt.Errorf("userinfo answered HTTP %d", status)
	}
	var info map[string]any
	if err := json.Unmarshal(data, &info); err != nil {
		return nil, errors.New("userinfo answered something other than a JSON object")
	}
	return info, nil
}

// refusedError is a userinfo endpoint that refused the access token.
type refusedError struct{ status int }

func (e *refusedError) Error() string { return fmt.Sprintf("userinfo answered HTTP %d", e.status) }
