package identity_test

import (
	"context"
	"crypto"
	"crypto/hmac"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolshelf/toolshelf/identity"
	"github.com/toolshelf/toolshelf/internal/testenv"
)

// forge makes a JWT with the header and claims given, signed with key
// (RS256), with secret (HS256), or not at all (alg none).
func forge(t *testing.T, header, claims map[string]any, key *rsa.PrivateKey, secret []byte) string {
	t.Helper()
	enc := func(v any) string {
		data, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return base64.RawURLEncoding.EncodeToString(data)
	}
	input := enc(header) + "." + enc(claims)
	var sig []byte
	switch {
	case key != nil:
		sum := sha256.Sum256([]byte(input))
		var err error
		if sig, err = rsa.SignPKCS1v15(rand.Reader, key, crypto.SHA256, sum[:]); err != nil {
			t.Fatal(err)
		}
	case secret != nil:
		m := hmac.New(sha256.New, secret)
		m.Write([]byte(input))
		sig = m.Sum(nil)
	}
	return input + "." + base64.RawURLEncoding.EncodeToString(sig)
}

func verifier(t *testing.T, idp *testenv.IDP, opts *identity.Options) *identity.Verifier {
	t.Helper()
	v, err := identity.New(identity.Config{
		Issuer: idp.Issuer, Audience: "toolshelf", Scopes: []string{"mcp"},
		ClientID: testenv.GatewayClient, ClientSecret: testenv.GatewaySecret,
	}, opts)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestTokensOfTheProvider checks real tokens of a real OpenID provider,
// and refuses each kind of wrong one with the reason.
func TestTokensOfTheProvider(t *testing.T) {
	idp := testenv.StartIDP(t, nil)
	v := verifier(t, idp, nil)
	ctx := context.Background()

	p, err := v.Verify(ctx, idp.Token(t, "alice"))
	if err != nil {
		t.Fatalf("alice's token: %v", err)
	}
	if p.Subject != "alice" || p.Email != "alice@example.com" || !slices.Equal(p.Groups, []string{"sre"}) || !slices.Contains(p.Scopes, "mcp") {
		t.Errorf("alice is %+v", p)
	}
	if !p.Matches(map[string][]string{"groups": {"sre", "ops"}}) || p.Matches(map[string][]string{"groups": {"dev"}}) {
		t.Errorf("alice's claims match wrongly")
	}

	now := time.Now().Unix()
	good := func() map[string]any {
		return map[string]any{"iss": idp.Issuer, "aud": "toolshelf", "sub": "mallory", "scope": "mcp", "iat": now, "exp": now + 600}
	}
	with := func(k string, val any) map[string]any {
		c := good()
		if val == nil {
			delete(c, k)
		} else {
			c[k] = val
		}
		return c
	}
	rs := map[string]any{"alg": "RS256", "kid": idp.Kid, "typ": "at+jwt"}
	other, otherKid := testenv.NewSigningKey(t)
	pub, _ := x509.MarshalPKIXPublicKey(&idp.Key.PublicKey)
	pubPEM := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub})

	forged := forge(t, rs, good(), idp.Key, nil)
	if p, err := v.Verify(ctx, forged); err != nil || p.Subject != "mallory" {
		t.Fatalf("a token signed with the provider's key, all claims right, is refused: %v", err)
	}
	for _, tc := range []struct {
		name, token, reason string
	}{
		{"expired", forge(t, rs, with("exp", now-3600), idp.Key, nil), "expired"},
		{"not yet valid", forge(t, rs, with("nbf", now+3600), idp.Key, nil), "not valid yet"},
		{"wrong issuer", forge(t, rs, with("iss", "https://evil.example.com"), idp.Key, nil), "different provider"},
		{"wrong audience", forge(t, rs, with("aud", "another-api"), idp.Key, nil), "audience"},
		{"unsigned (alg none)", forge(t, map[string]any{"alg": "none", "typ": "at+jwt"}, good(), nil, nil), "malformed"},
		{"HS256 with the provider's public key", forge(t, map[string]any{"alg": "HS256", "kid": idp.Kid}, good(), nil, pubPEM), "malformed"},
		{"a kid the provider never had", forge(t, map[string]any{"alg": "RS256", "kid": otherKid}, good(), other, nil), "signature"},
		{"the provider's kid, another key", forge(t, rs, good(), other, nil), "signature"},
		{"no subject", forge(t, rs, with("sub", nil), idp.Key, nil), "sub"},
		{"an ID token", forge(t, rs, with("nonce", "n-0123"), idp.Key, nil), "an ID token is not an access token"},
		{"an ID token with at_hash", forge(t, rs, with("at_hash", "x"), idp.Key, nil), "it has at_hash"},
		{"an ID token with c_hash", forge(t, rs, with("c_hash", "x"), idp.Key, nil), "it has c_hash"},
		{"a logout token's typ", forge(t, map[string]any{"alg": "RS256", "kid": idp.Kid, "typ": "logout+jwt"}, good(), idp.Key, nil), `typ "logout+jwt"`},
		{"an ID token's typ", forge(t, map[string]any{"alg": "RS256", "kid": idp.Kid, "typ": "id_token+jwt"}, good(), idp.Key, nil), `typ "id_token+jwt"`},
		{"garbage", "not.a.token", "malformed"},
		{"an opaque token the provider never issued", "opaque-token-of-nobody", "not active"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := v.Verify(ctx, tc.token)
			var invalid *identity.InvalidError
			if !errors.As(err, &invalid) {
				t.Fatalf("want an *InvalidError, got %v", err)
			}
			if !strings.Contains(err.Error(), tc.reason) {
				t.Errorf("the reason %q does not say %q", err, tc.reason)
			}
			if strings.Contains(err.Error(), tc.token) {
				t.Errorf("the error repeats the token")
			}
		})
	}

	t.Run("issued to the gateway's own client", func(t *testing.T) {
		// A gateway whose client at the provider is not its audience:
		// a token for that client is an ID token of its own sign-in.
		own, err := identity.New(identity.Config{Issuer: idp.Issuer, Audience: "toolshelf", ClientID: "toolshelf-console", ClientSecret: "s"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		c := good()
		c["aud"], c["typ"] = []string{"toolshelf", "toolshelf-console"}, nil
		if _, err := own.Verify(ctx, forge(t, map[string]any{"alg": "RS256", "kid": idp.Kid}, c, idp.Key, nil)); err == nil || !strings.Contains(err.Error(), "the gateway's own client") {
			t.Errorf("a token for the gateway's own client: %v", err)
		}
		if _, err := own.Verify(ctx, forge(t, map[string]any{"alg": "RS256", "kid": idp.Kid, "typ": "JWT"}, good(), idp.Key, nil)); err != nil {
			t.Errorf("an access token typed JWT (as many providers give): %v", err)
		}
		// Shaped as an ID token of the gateway's client: its audience
		// matches, no nonce, but azp names the gateway's own client.
		c = good()
		c["azp"] = "toolshelf-console"
		if _, err := own.Verify(ctx, forge(t, map[string]any{"alg": "RS256", "kid": idp.Kid}, c, idp.Key, nil)); err == nil || !strings.Contains(err.Error(), "azp") {
			t.Errorf("a token issued to the gateway's own client (azp): %v", err)
		}
		c["azp"] = "a-client-of-the-person"
		if _, err := own.Verify(ctx, forge(t, map[string]any{"alg": "RS256", "kid": idp.Kid}, c, idp.Key, nil)); err != nil {
			t.Errorf("an access token of another client (azp): %v", err)
		}
	})

	t.Run("without a needed scope", func(t *testing.T) {
		_, err := v.Verify(ctx, forge(t, rs, with("scope", "read"), idp.Key, nil))
		var scope *identity.ScopeError
		if !errors.As(err, &scope) || !slices.Equal(scope.Missing, []string{"mcp"}) {
			t.Errorf("want a *ScopeError naming mcp, got %v", err)
		}
	})
}

// TestProviderRotatesItsKeys follows a provider that signs with a new key
// mid-run: the first token with its key id makes the verifier fetch the
// keys again.
func TestProviderRotatesItsKeys(t *testing.T) {
	idp := testenv.StartIDP(t, nil)
	v := verifier(t, idp, &identity.Options{KeyInterval: -1})
	ctx := context.Background()
	if _, err := v.Verify(ctx, idp.Token(t, "bob")); err != nil {
		t.Fatal(err)
	}
	idp.Rotate(t)
	p, err := v.Verify(ctx, idp.Token(t, "bob"))
	if err != nil {
		t.Fatalf("a token signed with the rotated key: %v", err)
	}
	if p.Subject != "bob" {
		t.Errorf("subject %q", p.Subject)
	}
}

// TestOpaqueTokens asks the provider about tokens that are not JWTs, and
// refuses one it has revoked.
func TestOpaqueTokens(t *testing.T) {
	idp := testenv.StartIDP(t, &testenv.IDPOptions{Format: "opaque"})
	v := verifier(t, idp, &identity.Options{CacheFor: -1})
	ctx := context.Background()
	tok := idp.Token(t, "alice")
	if strings.Count(tok, ".") == 2 {
		t.Fatalf("the provider gave a JWT, not an opaque token")
	}
	p, err := v.Verify(ctx, tok)
	if err != nil {
		t.Fatalf("alice's opaque token: %v", err)
	}
	if p.Subject != "alice" || !slices.Equal(p.Groups, []string{"sre"}) {
		t.Errorf("alice is %+v", p)
	}
	idp.Revoke(t, "alice", tok)
	if _, err := v.Verify(ctx, tok); err == nil || !strings.Contains(err.Error(), "not active") {
		t.Errorf("a revoked token: %v", err)
	}
}

// TestKeysAreFetchedAtMostOnceAnInterval keeps a client that sends tokens
// with unknown key ids from making the verifier fetch the keys for each.
func TestKeysAreFetchedAtMostOnceAnInterval(t *testing.T) {
	idp := testenv.StartIDP(t, nil)
	v := verifier(t, idp, &identity.Options{KeyInterval: time.Hour})
	ctx := context.Background()
	if _, err := v.Verify(ctx, idp.Token(t, "bob")); err != nil {
		t.Fatal(err)
	}
	idp.Rotate(t)
	// Within the interval the rotated key is not fetched: the new token
	// is refused, which shows no fetch happened.
	if _, err := v.Verify(ctx, idp.Token(t, "bob")); err == nil {
		t.Fatal("the keys were fetched again within the interval")
	}
}

// counting counts the requests a client makes to paths ending in suffix.
type counting struct {
	suffix string
	n      atomic.Int64
}

func (c *counting) RoundTrip(r *http.Request) (*http.Response, error) {
	if strings.HasSuffix(r.URL.Path, c.suffix) {
		c.n.Add(1)
	}
	return http.DefaultTransport.RoundTrip(r)
}

// Made-up opaque tokens cost the provider one question each, not one per
// request: a refused token is kept refused for a while, and questions in
// flight are bounded.
func TestMadeUpTokensAskTheProviderOnce(t *testing.T) {
	idp := testenv.StartIDP(t, &testenv.IDPOptions{Format: "opaque"})
	c := &counting{suffix: "/introspection"}
	v := verifier(t, idp, &identity.Options{Client: &http.Client{Transport: c}})
	ctx := context.Background()
	var wg sync.WaitGroup
	for range 50 {
		wg.Go(func() {
			if _, err := v.Verify(ctx, "made-up-opaque-token"); err == nil {
				t.Error("a made-up token was taken")
			}
		})
	}
	wg.Wait()
	if n := c.n.Load(); n < 1 || n > 16 {
		t.Errorf("%d introspections for 50 requests with one made-up token, want between 1 and 16", n)
	}
	before := c.n.Load()
	for range 20 {
		v.Verify(ctx, "made-up-opaque-token")
	}
	if n := c.n.Load() - before; n != 0 {
		t.Errorf("%d more introspections for a token already refused", n)
	}
}
