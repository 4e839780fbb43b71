package identity

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"time"
)

// introspect asks the provider about a token that is not a JWT (RFC
// 7662), keeping the answer a short while (Options.CacheFor).
func (v *Verifier) introspect(ctx context.Context, meta *Metadata, token string) (*Person, error) {
	switch {
	case meta.IntrospectionEndpoint == "":
		return nil, &InvalidError{"not a JWT, and the provider has no introspection endpoint"}
	case v.cfg.ClientID == "":
		return nil, &InvalidError{`not a JWT, and introspection needs the gateway's client ("clientId", "clientSecret")`}
	}
	key := tokenKey(token)
	now := v.opts.Now()
	for {
		if a, ok := v.cache.get(key, now); ok {
			if a.refused != "" {
				return nil, &InvalidError{a.refused}
			}
			return a.p, nil
		}
		// One question per token at a time: the others wait for its
		// answer, kept in the cache.
		v.mu.Lock()
		wait, asked := v.inflight[key]
		if !asked {
			v.inflight[key] = make(chan struct{})
		}
		v.mu.Unlock()
		if !asked || v.opts.CacheFor < 0 {
			break
		}
		select {
		case <-wait:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	defer func() {
		v.mu.Lock()
		if done, ok := v.inflight[key]; ok {
			close(done)
			delete(v.inflight, key)
		}
		v.mu.Unlock()
	}()
	// At most maxAsking questions to the provider at once: made-up
	// tokens cost a client nothing, and the provider must not pay for
	// each at once.
	select {
	case v.asking <- struct{}{}:
		defer func() { <-v.asking }()
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	p, err := v.ask(ctx, meta, token, now)
	var invalid *InvalidError
	switch {
	case errors.As(err, &invalid) && v.opts.CacheFor > 0:
		// A refused token stays refused: it is not asked about again for
		// a while either.
		v.cache.put(key, introspected{refused: invalid.Reason}, now.Add(v.opts.CacheFor), now)
	case err == nil && v.opts.CacheFor > 0:
		until := now.Add(v.opts.CacheFor)
		if !p.Expiry.IsZero() && p.Expiry.Before(until) {
			until = p.Expiry
		}
		v.cache.put(key, introspected{p: p}, until, now)
	}
	return p, err
}

// maxAsking bounds the introspection requests in flight.
const maxAsking = 16

// introspected is a kept answer: the person, or why the token was
// refused.
type introspected struct {
	p       *Person
	refused string
}

// ask asks the provider's introspection endpoint about a token.
func (v *Verifier) ask(ctx context.Context, meta *Metadata, token string, now time.Time) (*Person, error) {
	status, data, err := v.postForm(ctx, meta.IntrospectionEndpoint, url.Values{"token": {token}, "token_type_hint": {"access_token"}})
	if err != nil {
		return nil, fmt.Errorf("identity provider: introspection: %w", err)
	}
	if status != http.StatusOK {
		return nil, fmt.Errorf("identity provider: introspection answered HTTP %d", status)
	}
	var claims map[string]any
	if err := json.Unmarshal(data, &claims); err != nil {
		return nil, fmt.Errorf("identity provider: introspection answered something other than a JSON object")
	}
	if active, _ := claims["active"].(bool); !active {
		return nil, &InvalidError{"the provider says it is not active (expired, revoked or unknown)"}
	}
	if iss, ok := claims["iss"].(string); ok && iss != meta.Issuer {
		return nil, &InvalidError{fmt.Sprintf("issued by %q, not %q", iss, meta.Issuer)}
	}
	if aud := claimValues(claims["aud"]); !slices.Contains(aud, v.cfg.Audience) {
		return nil, &InvalidError{fmt.Sprintf("audience %q does not include %q", aud, v.cfg.Audience)}
	}
	p := personOf(claims)
	if p.Subject == "" {
		// A client's own token (client credentials) speaks for the
		// client, as a JWT of it does (RFC 9068).
		p.Subject, _ = claims["client_id"].(string)
	}
	if p.Subject == "" {
		return nil, &InvalidError{`no "sub"`}
	}
	if exp, ok := claims["exp"].(float64); ok {
		p.Expiry = time.Unix(int64(exp), 0)
		if p.Expiry.Add(v.opts.Skew).Before(now) {
			return nil, &InvalidError{fmt.Sprintf("expired at %s", p.Expiry.UTC().Format(time.RFC3339))}
		}
	}
	p.token = token
	return p, nil
}

// maxCached bounds the answers and tokens kept.
const maxCached = 4096

// expiring keeps values by a hash (never a token itself), each until a
// time, at most max of them.
type expiring[V any] struct {
	mu  sync.Mutex
	max int
	m   map[[32]byte]entry[V]
}

type entry[V any] struct {
	v     V
	until time.Time
}

func newExpiring[V any](max int) *expiring[V] {
	return &expiring[V]{max: max, m: map[[32]byte]entry[V]{}}
}

func (a *expiring[V]) get(key [32]byte, now time.Time) (V, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	x, ok := a.m[key]
	if !ok || !now.Before(x.until) {
		delete(a.m, key)
		var zero V
		return zero, false
	}
	return x.v, true
}

// put keeps a value; when full, the expired go first, then any (a map's
// order): a lost entry costs one more request to the provider.
func (a *expiring[V]) put(key [32]byte, v V, until, now time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.m) >= a.max {
		for k, x := range a.m {
			if !now.Before(x.until) {
				delete(a.m, k)
			}
		}
		for k := range a.m {
			if len(a.m) < a.max {
				break
			}
			delete(a.m, k)
		}
	}
	a.m[key] = entry[V]{v, until}
}

func (a *expiring[V]) drop(key [32]byte) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.m, key)
}
