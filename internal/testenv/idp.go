package testenv

import (
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// IDP is a real OpenID provider (npm oidc-provider, testdata/idp/idp.mjs)
// on loopback, for the identity tests.
type IDP struct {
	Issuer string
	// Key signs the provider's tokens now; tests forge tokens with it
	// (expired, of another audience) that only the claims make wrong.
	Key *rsa.PrivateKey
	Kid string
}

// IDPPerson is a person the provider knows. A client with the person's
// name (secret: name + "-secret") gets client-credentials tokens that
// speak for them.
type IDPPerson struct {
	Email  string   `json:"email,omitempty"`
	Groups []string `json:"groups,omitempty"`
}

// IDPOptions configures StartIDP; nil means the defaults.
type IDPOptions struct {
	// People are the provider's people (alice of sre, bob of dev and
	// carol of no group when nil).
	People map[string]IDPPerson
	// Format is the access tokens' format: "jwt" (default) or "opaque".
	Format string
	// Audience is the aud of every access token ("toolshelf").
	Audience string
	// Scope is what resource servers allow ("mcp").
	Scope string
	// Clients are more clients, as oidc-provider takes them.
	Clients []map[string]any
	// Redirects are where the gateway's client may send a person's
	// browser back after signing in (the console's callback): with them
	// it may use the authorization code grant.
	Redirects []string
}

// GatewayClient is the client the gateway is registered as, with the
// client credentials and token exchange grants.
const GatewayClient, GatewaySecret = "toolshelf", "toolshelf-secret"

var idpLine = regexp.MustCompile(`idp listening on (\S+)`)

// StartIDP starts the provider; it stops when the test ends. It needs
// testdata/idp and testdata/clients (Node 22) installed.
func StartIDP(t testing.TB, opts *IDPOptions) *IDP {
	t.Helper()
	RequireNPM(t, "testdata/idp", "testdata/clients")
	if opts == nil {
		opts = &IDPOptions{}
	}
	people := opts.People
	if people == nil {
		people = map[string]IDPPerson{
			"alice": {Email: "alice@example.com", Groups: []string{"sre"}},
			"bob":   {Email: "bob@example.com", Groups: []string{"dev"}},
			"carol": {Email: "carol@example.com"},
		}
	}
	gw := map[string]any{
		"client_id": GatewayClient, "client_secret": GatewaySecret,
		"grant_types":    []string{"client_credentials", "urn:ietf:params:oauth:grant-type:token-exchange"},
		"redirect_uris":  []string{},
		"response_types": []string{},
		"scope":          "mcp openid email profile groups",
	}
	if len(opts.Redirects) > 0 {
		gw["grant_types"] = []string{"client_credentials", "urn:ietf:params:oauth:grant-type:token-exchange", "authorization_code"}
		gw["redirect_uris"], gw["response_types"] = opts.Redirects, []string{"code"}
	}
	clients := []map[string]any{gw}
	for name := range people {
		clients = append(clients, map[string]any{
			"client_id": name, "client_secret": name + "-secret",
			"grant_types": []string{"client_credentials"}, "redirect_uris": []string{}, "response_types": []string{},
			"scope": "mcp",
		})
	}
	clients = append(clients, opts.Clients...)
	key, kid := NewSigningKey(t)
	spec := map[string]any{
		"keys": JWKS(key, kid), "people": people, "clients": clients,
		"audience": opts.Audience, "format": opts.Format, "scope": opts.Scope,
	}
	data, err := json.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "idp.json")
	if err := os.WriteFile(file, data, 0o600); err != nil {
		t.Fatal(err)
	}
	root := Root(t)
	node := filepath.Join(root, "testdata", "clients", "node_modules", "node", "bin", "node")
	cmd := exec.Command(node, "idp.mjs", file)
	cmd.Dir = filepath.Join(root, "testdata", "idp")
	issuer := Listening(t, cmd, "the OpenID provider", idpLine)
	return &IDP{Issuer: issuer, Key: key, Kid: kid}
}

// NewSigningKey makes an RSA key and a key id for it.
func NewSigningKey(t testing.TB) (*rsa.PrivateKey, string) {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	id := make([]byte, 8)
	rand.Read(id)
	return key, fmt.Sprintf("k-%x", id)
}

// JWKS is a private key as a JSON Web Key Set.
func JWKS(key *rsa.PrivateKey, kid string) map[string]any {
	b := func(n *big.Int) string { return base64.RawURLEncoding.EncodeToString(n.Bytes()) }
	key.Precompute()
	return map[string]any{"keys": []map[string]any{{
		"kty": "RSA", "kid": kid, "alg": "RS256", "use": "sig",
		"n": b(key.N), "e": b(big.NewInt(int64(key.E))), "d": b(key.D),
		"p": b(key.Primes[0]), "q": b(key.Primes[1]),
		"dp": b(key.Precomputed.Dp), "dq": b(key.Precomputed.Dq), "qi": b(key.Precomputed.Qinv),
	}}}
}

// Rotate makes the provider sign with a new key and publish only it.
func (p *IDP) Rotate(t testing.TB) {
	t.Helper()
	key, kid := NewSigningKey(t)
	data, _ := json.Marshal(JWKS(key, kid))
	resp, err := http.Post(p.Issuer+"/_test/rotate", "application/json", strings.NewReader(string(data)))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("rotating the provider's keys: HTTP %d", resp.StatusCode)
	}
	p.Key, p.Kid = key, kid
}

// Token gets a person's access token (client credentials of the client
// named after them).
func (p *IDP) Token(t testing.TB, person string) string {
	t.Helper()
	var tok struct {
		AccessToken string `json:"access_token"`
	}
	p.post(t, "/token", person, url.Values{"grant_type": {"client_credentials"}, "scope": {"mcp"}}, &tok)
	if tok.AccessToken == "" {
		t.Fatalf("the provider gave %s no token", person)
	}
	return tok.AccessToken
}

// Revoke revokes a person's token (RFC 7009).
func (p *IDP) Revoke(t testing.TB, person, token string) {
	t.Helper()
	p.post(t, "/token/revocation", person, url.Values{"token": {token}}, nil)
}

// Exchanges returns the token exchanges the provider made: which client
// exchanged whose token for which audience.
func (p *IDP) Exchanges(t testing.TB) []map[string]string {
	t.Helper()
	resp, err := http.Get(p.Issuer + "/_test/exchanges")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out []map[string]string
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatal(err)
	}
	return out
}

func (p *IDP) post(t testing.TB, path, client string, form url.Values, v any) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, p.Issuer+path, strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(client, client+"-secret")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode/100 != 2 {
		t.Fatalf("%s %s: HTTP %d: %s", path, client, resp.StatusCode, body)
	}
	if v != nil {
		if err := json.Unmarshal(body, v); err != nil {
			t.Fatalf("%s: %v: %s", path, err, body)
		}
	}
}
