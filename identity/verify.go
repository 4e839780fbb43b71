package identity

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"
)

// Config names the identity provider and what a token must be to open
// the gateway ("identity" in the configuration).
type Config struct {
	// Issuer is the provider's issuer URL, exactly as its tokens say it.
	Issuer string
	// Audience is what a token's "aud" must contain: the gateway's name
	// at the provider (its resource indicator or API identifier).
	Audience string
	// Scopes are scopes every token must carry; a token without one is
	// refused with 403 insufficient_scope, naming them.
	Scopes []string
	// ClientID and ClientSecret are the gateway's client at the
	// provider: for introspection of opaque tokens (RFC 7662), token
	// exchange (RFC 8693) and the console's sign-in.
	ClientID, ClientSecret string
	// Algorithms are the signature algorithms accepted (DefaultAlgorithms
	// when empty). "none" and the HMAC algorithms are never accepted: a
	// provider's tokens are signed with a private key, and HS256 "signed"
	// with its public key is the classic forgery.
	Algorithms []string
}

// DefaultAlgorithms are the asymmetric JWS algorithms.
var DefaultAlgorithms = []string{"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"}

// Check reports what is wrong with a configuration, naming the key.
func (c *Config) Check() error {
	u, err := url.Parse(c.Issuer)
	switch {
	case c.Issuer == "":
		return errors.New(`"issuer" is required: the identity provider's issuer URL`)
	case err != nil || u.Host == "" || (u.Scheme != "https" && !(u.Scheme == "http" && loopback(u.Hostname()))):
		return fmt.Errorf(`"issuer" %q must be an https URL (http only on loopback)`, c.Issuer)
	case c.Audience == "":
		return errors.New(`"audience" is required: what the tokens' "aud" must contain (the gateway's name at the provider)`)
	case (c.ClientID == "") != (c.ClientSecret == ""):
		return errors.New(`"clientId" and "clientSecret" go together`)
	}
	for _, a := range c.Algorithms {
		if !slices.Contains(DefaultAlgorithms, a) {
			return fmt.Errorf(`"algorithms": %q is not accepted (want some of %s; never none or an HMAC algorithm)`, a, strings.Join(DefaultAlgorithms, ", "))
		}
	}
	return nil
}

func loopback(host string) bool {
	return host == "localhost" || host == "127.0.0.1" || host == "::1"
}

// Options tunes a [Verifier]; nil means the defaults.
type Options struct {
	// Client makes the requests to the provider (one with a 10 s timeout
	// when nil).
	Client *http.Client
	// Skew is the clock difference tolerated on exp and nbf (30 s when
	// zero).
	Skew time.Duration
	// KeyInterval is the least time between two fetches of the
	// provider's keys (10 s when zero, none when negative): a token naming
	// an unknown key id makes the verifier fetch them again, and a client
	// sending such tokens must not make it fetch for each.
	KeyInterval time.Duration
	// CacheFor is how long an introspection's answer is kept (30 s when
	// zero, none when negative): a revoked token is refused at most this
	// long after.
	CacheFor time.Duration
	// Now is the clock (time.Now when nil).
	Now func() time.Time
}

// Verifier checks access tokens against the provider. It is safe for
// concurrent use.
type Verifier struct {
	cfg  Config
	opts Options

	mu       sync.Mutex
	meta     *Metadata
	verifier *oidc.IDTokenVerifier
	keys     oidc.KeySet
	failedAt time.Time // when discovery last failed
	failure  error

	cache     *expiring[introspected]    // introspection's answers
	exchanged *expiring[*oauth2.Token]   // exchanged tokens, by person and audience
	asking    chan struct{}              // introspections in flight
	inflight  map[[32]byte]chan struct{} // the tokens asked about now (under mu)
}

// Metadata is what the verifier uses of the provider's metadata.
type Metadata struct {
	Issuer                string `json:"issuer"`
	AuthorizationEndpoint string `json:"authorization_endpoint"`
	TokenEndpoint         string `json:"token_endpoint"`
	JWKSURI               string `json:"jwks_uri"`
	IntrospectionEndpoint string `json:"introspection_endpoint"`
	UserinfoEndpoint      string `json:"userinfo_endpoint"`
	// ScopesSupported are the scopes the provider says it knows.
	ScopesSupported []string `json:"scopes_supported"`
	// GrantTypes are the grants the provider says it supports.
	GrantTypes []string `json:"grant_types_supported"`
}

// New returns a verifier of cfg's tokens. The provider is asked for its
// metadata on the first token, not here: a gateway starts while its
// provider is down, and refuses every token until it answers.
func New(cfg Config, opts *Options) (*Verifier, error) {
	if err := cfg.Check(); err != nil {
		return nil, err
	}
	v := &Verifier{cfg: cfg}
	if opts != nil {
		v.opts = *opts
	}
	if v.opts.Client == nil {
		v.opts.Client = &http.Client{Timeout: 10 * time.Second}
	}
	if v.opts.Skew == 0 {
		v.opts.Skew = 30 * time.Second
	}
	if v.opts.KeyInterval == 0 {
		v.opts.KeyInterval = 10 * time.Second
	}
	if v.opts.CacheFor == 0 {
		v.opts.CacheFor = 30 * time.Second
	}
	if v.opts.Now == nil {
		v.opts.Now = time.Now
	}
	if len(v.cfg.Algorithms) == 0 {
		v.cfg.Algorithms = DefaultAlgorithms
	}
	v.cache = newExpiring[introspected](maxCached)
	v.asking = make(chan struct{}, maxAsking)
	v.inflight = map[[32]byte]chan struct{}{}
	v.exchanged = newExpiring[*oauth2.Token](maxCached)
	return v, nil
}

// Config returns the verifier's configuration.
func (v *Verifier) Config() Config { return v.cfg }

// An InvalidError is a token that was refused: expired, of another
// issuer or audience, badly signed, unknown to the provider. Its text
// says why and never includes the token.
type InvalidError struct{ Reason string }

func (e *InvalidError) Error() string { return "invalid token: " + e.Reason }

// A ScopeError is a valid token without a scope the gateway needs.
type ScopeError struct{ Missing []string }

func (e *ScopeError) Error() string {
	return fmt.Sprintf("the token lacks scope %q", strings.Join(e.Missing, " "))
}

// maxTokenBytes bounds a token: a longer one is refused unread.
const maxTokenBytes = 16 << 10

// Verify checks an access token and returns the person it speaks for. The
// error is an *InvalidError, a *ScopeError, or the provider's being
// unreachable.
func (v *Verifier) Verify(ctx context.Context, token string) (*Person, error) {
	if token == "" || len(token) > maxTokenBytes {
		return nil, &InvalidError{"empty or longer than 16 KiB"}
	}
	meta, jwt, err := v.provider(ctx)
	if err != nil {
		return nil, err
	}
	var p *Person
	if strings.Count(token, ".") == 2 {
		p, err = v.verifyJWT(ctx, jwt, token)
	} else {
		p, err = v.introspect(ctx, meta, token)
	}
	if err != nil {
		return nil, err
	}
	var missing []string
	for _, s := range v.cfg.Scopes {
		if !slices.Contains(p.Scopes, s) {
			missing = append(missing, s)
		}
	}
	if len(missing) > 0 {
		return nil, &ScopeError{missing}
	}
	return p, nil
}

// verifyJWT checks a JWT's signature, issuer, audience, expiry and
// not-before with go-oidc, and reads the person from its claims.
func (v *Verifier) verifyJWT(ctx context.Context, jwt *oidc.IDTokenVerifier, token string) (*Person, error) {
	t, err := jwt.Verify(oidc.ClientContext(ctx, v.opts.Client), token)
	if err != nil {
		var expired *oidc.TokenExpiredError
		if errors.As(err, &expired) {
			return nil, &InvalidError{fmt.Sprintf("expired at %s", expired.Expiry.UTC().Format(time.RFC3339))}
		}
		if strings.Contains(err.Error(), "nbf") {
			return nil, &InvalidError{"not valid yet: its nbf is in the future"}
		}
		return nil, &InvalidError{strings.TrimPrefix(err.Error(), "oidc: ")}
	}
	var claims map[string]any
	if err := t.Claims(&claims); err != nil {
		return nil, &InvalidError{"claims are not a JSON object"}
	}
	// go-oidc allows five minutes on nbf; the gateway allows its skew.
	if nbf, ok := claims["nbf"].(float64); ok {
		if at := time.Unix(int64(nbf), 0); at.After(v.opts.Now().Add(v.opts.Skew)) {
			return nil, &InvalidError{fmt.Sprintf("not valid yet: its nbf is %s", at.UTC().Format(time.RFC3339))}
		}
	}
	if t.Subject == "" {
		return nil, &InvalidError{`no "sub"`}
	}
	if why := notAccessToken(token, claims, v.cfg); why != "" {
		// An ID token (of the console's sign-in, say) proves who signed
		// in to a client; it is not an access token for the gateway.
		return nil, &InvalidError{"an ID token is not an access token (" + why + ")"}
	}
	p := personOf(claims)
	p.Expiry, p.token = t.Expiry, token
	return p, nil
}

// notAccessToken says why a signed JWT is not an access token, or "":
// its header's typ is neither RFC 9068's at+jwt nor the plain JWT many
// providers still give access tokens; it carries what only ID tokens
// carry (nonce, at_hash, c_hash); or it was issued to the gateway's own
// client (aud holds its clientId, which is not its audience, or azp, the
// party it was issued to, is that client), as the ID token of the
// console's sign-in is.
func notAccessToken(token string, claims map[string]any, cfg Config) string {
	header, _, _ := strings.Cut(token, ".")
	var h struct {
		Typ string `json:"typ"`
	}
	if raw, err := base64.RawURLEncoding.DecodeString(header); err != nil || json.Unmarshal(raw, &h) != nil {
		return "its header cannot be read"
	}
	switch typ := strings.ToLower(strings.TrimPrefix(strings.ToLower(h.Typ), "application/")); typ {
	case "", "jwt", "at+jwt":
	default:
		return fmt.Sprintf("typ %q", h.Typ)
	}
	for _, c := range []string{"nonce", "at_hash", "c_hash"} {
		if _, ok := claims[c]; ok {
			return "it has " + c
		}
	}
	if cfg.ClientID != "" && cfg.ClientID != cfg.Audience && slices.Contains(claimValues(claims["aud"]), cfg.ClientID) {
		return "its audience is the gateway's own client"
	}
	if azp, _ := claims["azp"].(string); cfg.ClientID != "" && azp == cfg.ClientID {
		// An ID token names the client it was issued to in azp; an
		// access token for the gateway is a client's, never the
		// gateway's own.
		return "it was issued to the gateway's own client (azp)"
	}
	return ""
}

// personOf reads a person from a token's claims.
func personOf(claims map[string]any) *Person {
	p := &Person{Claims: claims}
	p.Subject, _ = claims["sub"].(string)
	p.Email, _ = claims["email"].(string)
	p.Groups = claimValues(claims["groups"])
	if s, ok := claims["scope"].(string); ok {
		p.Scopes = strings.Fields(s)
	} else {
		p.Scopes = claimValues(claims["scp"])
	}
	return p
}

// retryDiscovery is how long a failed discovery is not tried again:
// each token in that time is refused with the same error.
const retryDiscovery = 5 * time.Second

// provider returns the provider's metadata and a JWT verifier for it,
// discovering them on first use.
func (v *Verifier) provider(ctx context.Context) (*Metadata, *oidc.IDTokenVerifier, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.verifier != nil {
		return v.meta, v.verifier, nil
	}
	if v.failure != nil && v.opts.Now().Sub(v.failedAt) < retryDiscovery {
		return nil, nil, v.failure
	}
	meta, err := Discover(ctx, v.opts.Client, v.cfg.Issuer)
	if err != nil {
		v.failure, v.failedAt = err, v.opts.Now()
		return nil, nil, err
	}
	keys := &http.Client{Transport: &keyFetches{base: v.opts.Client, every: v.opts.KeyInterval, now: v.opts.Now}, Timeout: v.opts.Client.Timeout}
	keySet := oidc.NewRemoteKeySet(oidc.ClientContext(context.WithoutCancel(ctx), keys), meta.JWKSURI)
	v.meta, v.keys = meta, keySet
	v.verifier = oidc.NewVerifier(meta.Issuer, keySet, &oidc.Config{
		ClientID:             v.cfg.Audience,
		SupportedSigningAlgs: v.cfg.Algorithms,
		// Expiry with the gateway's skew; nbf checked after.
		Now: func() time.Time { return v.opts.Now().Add(-v.opts.Skew) },
	})
	v.failure = nil
	return v.meta, v.verifier, nil
}

// Metadata returns the provider's metadata, discovering it if need be.
func (v *Verifier) Metadata(ctx context.Context) (*Metadata, error) {
	meta, _, err := v.provider(ctx)
	return meta, err
}

// maxMetadata bounds a provider's answer.
const maxMetadata = 1 << 20

// Discover reads an issuer's metadata: OpenID discovery first, then the
// OAuth authorization server metadata of RFC 8414. The issuer the
// document names must be the issuer asked about.
func Discover(ctx context.Context, client *http.Client, issuer string) (*Metadata, error) {
	u, err := url.Parse(issuer)
	if err != nil {
		return nil, err
	}
	trimmed := strings.TrimSuffix(issuer, "/")
	// RFC 8414 puts the well-known segment before the issuer's path.
	rfc8414 := *u
	rfc8414.Path = "/.well-known/oauth-authorization-server" + strings.TrimSuffix(u.Path, "/")
	var errs []error
	for _, where := range []string{trimmed + "/.well-known/openid-configuration", rfc8414.String()} {
		var m Metadata
		if err := getJSON(ctx, client, where, &m); err != nil {
			errs = append(errs, err)
			continue
		}
		switch {
		case m.Issuer != issuer:
			return nil, fmt.Errorf("identity provider: %s names issuer %q, not %q", where, m.Issuer, issuer)
		case m.JWKSURI == "":
			return nil, fmt.Errorf("identity provider: %s has no jwks_uri", where)
		}
		return &m, nil
	}
	return nil, fmt.Errorf("identity provider %s: no metadata (%w)", issuer, errors.Join(errs...))
}

func getJSON(ctx context.Context, client *http.Client, where string, v any) error {
	status, data, err := get(ctx, client, where, "")
	if err != nil {
		return err
	}
	if status != http.StatusOK {
		return fmt.Errorf("%s: HTTP %d", where, status)
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("%s: %v", where, err)
	}
	return nil
}

// keyFetches lets the provider's keys be fetched at most once every
// interval: go-oidc fetches them again for every token whose key id it
// does not know, and such tokens cost a client nothing to make. Within the
// interval the last answer is given again.
type keyFetches struct {
	base  *http.Client
	every time.Duration
	now   func() time.Time

	mu   sync.Mutex
	at   time.Time
	last []byte
}

func (k *keyFetches) RoundTrip(req *http.Request) (*http.Response, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.last != nil && k.every > 0 && k.now().Sub(k.at) < k.every {
		return &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {"application/json"}}, Body: io.NopCloser(strings.NewReader(string(k.last))), Request: req}, nil
	}
	resp, err := k.base.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxMetadata))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode == http.StatusOK {
		k.at, k.last = k.now(), data
	}
	resp.Body = io.NopCloser(strings.NewReader(string(data)))
	return resp, nil
}

// tokenKey is what an answer about a token is kept under: its hash, so
// that the cache holds no token.
func tokenKey(token string) [32]byte { return sha256.Sum256([]byte(token)) }
