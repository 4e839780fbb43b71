package identity_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/toolshelf/toolshelf/identity"
)

// A person's sign-in (the console's) takes an ID token only when it is
// for the gateway's own client, from the provider, for this sign-in, and
// in date: a provider of its own on loopback hands out ID tokens with one
// thing wrong each, and each is refused with that thing named. (The
// browser test signs in at a real provider; this one fails fast on the
// check itself.)
func TestSignInChecksTheIDToken(t *testing.T) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	var idToken string // what the token endpoint hands out next
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	defer srv.Close()
	mux.HandleFunc("GET /.well-known/openid-configuration", func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(map[string]any{"issuer": srv.URL, "authorization_endpoint": srv.URL + "/auth",
			"token_endpoint": srv.URL + "/token", "jwks_uri": srv.URL + "/jwks", "id_token_signing_alg_values_supported": []string{"RS256"}})
	})
	mux.HandleFunc("GET /jwks", func(w http.ResponseWriter, r *http.Request) {
		b64 := func(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }
		json.NewEncoder(w).Encode(map[string]any{"keys": []map[string]any{{"kty": "RSA", "kid": "k1", "alg": "RS256", "use": "sig",
			"n": b64(key.N.Bytes()), "e": b64(big.NewInt(int64(key.E)).Bytes())}}})
	})
	mux.HandleFunc("POST /token", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"access_token": "at", "token_type": "Bearer", "expires_in": 60, "id_token": idToken})
	})
	const client, nonce = "toolshelf-gateway", "nonce-of-this-sign-in"
	v, err := identity.New(identity.Config{Issuer: srv.URL, Audience: "toolshelf", ClientID: client, ClientSecret: "s"}, &identity.Options{Client: srv.Client()})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	oc, err := v.OAuth2(ctx, srv.URL+"/back", []string{"openid"})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	good := map[string]any{"iss": srv.URL, "aud": client, "sub": "alice", "email": "alice@example.com",
		"nonce": nonce, "iat": now.Unix(), "exp": now.Add(5 * time.Minute).Unix()}
	with := func(k string, v any) map[string]any {
		c := map[string]any{}
		for kk, vv := range good {
			c[kk] = vv
		}
		if v == nil {
			delete(c, k)
		} else {
			c[k] = v
		}
		return c
	}
	header := map[string]any{"alg": "RS256", "kid": "k1", "typ": "JWT"}
	other, _ := rsa.GenerateKey(rand.Reader, 2048)
	for _, tt := range []struct {
		name   string
		token  string
		refuse string
	}{
		{"another client's", forge(t, header, with("aud", "another-client"), key, nil), "audience"},
		{"the API's audience", forge(t, header, with("aud", "toolshelf"), key, nil), "audience"},
		{"no audience", forge(t, header, with("aud", nil), key, nil), "audience"},
		{"another issuer's", forge(t, header, with("iss", "https://evil.example"), key, nil), "issue"},
		{"another sign-in's", forge(t, header, with("nonce", "a-nonce-of-another"), key, nil), "nonce"},
		{"no nonce", forge(t, header, with("nonce", nil), key, nil), "nonce"},
		{"expired", forge(t, header, with("exp", now.Add(-time.Hour).Unix()), key, nil), "expired"},
		{"signed by another key", forge(t, header, good, other, nil), "signature"},
		{"unsigned", forge(t, map[string]any{"alg": "none"}, good, nil, nil), "signature algorithm"},
	} {
		idToken = tt.token
		p, err := v.SignIn(ctx, oc, "code", "verifier", nonce)
		var invalid *identity.InvalidError
		if err == nil || !errors.As(err, &invalid) || !strings.Contains(strings.ToLower(err.Error()), tt.refuse) {
			t.Errorf("%s ID token: %v, %v; want it refused naming %q", tt.name, p, err, tt.refuse)
		}
	}
	idToken = forge(t, header, good, key, nil)
	p, err := v.SignIn(ctx, oc, "code", "verifier", nonce)
	if err != nil || p.Subject != "alice" || p.Email != "alice@example.com" {
		t.Errorf("a good ID token: %+v %v", p, err)
	}
}
