// Package identity knows who is calling: it checks the bearer token a
// person's client sends against the team's identity provider (an OpenID
// provider, or an OAuth authorization server with RFC 8414 metadata),
// reads the person from its claims, and carries the person in a request's
// context, where rules, limits, audit records, traces and per-person
// sign-ins read it.
//
// Signatures and keys are checked by github.com/coreos/go-oidc/v3 (over
// go-jose): keys come from the provider's jwks_uri and are fetched again
// when a token names a key id not seen yet. Tokens that are not JWTs are
// asked about at the provider's introspection endpoint (RFC 7662).
package identity

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"
)

// Person is who a verified access token speaks for.
type Person struct {
	// Subject is the token's "sub": the provider's id of the person (or
	// of the client, for a token of a machine).
	Subject string
	// Email is the "email" claim, when the token carries one.
	Email string
	// Groups is the "groups" claim (a list of strings, or one string).
	Groups []string
	// Scopes are the token's scopes ("scope", space-separated, or "scp").
	Scopes []string
	// Claims are every claim of the token, as JSON decodes them.
	Claims map[string]any
	// Expiry is when the token stops being valid.
	Expiry time.Time

	// token is the access token itself, kept for token exchange
	// (RFC 8693) and never written anywhere.
	token string
}

// AccessToken returns the token the person was verified from, for
// exchanging it at the provider (RFC 8693). It is a secret: never log it,
// and never send it to another server.
func (p *Person) AccessToken() string { return p.token }

// String names the person for logs: the email when there is one, else
// the subject. It never includes the token.
func (p *Person) String() string {
	if p == nil {
		return ""
	}
	if p.Email != "" {
		return p.Email
	}
	return p.Subject
}

// Claim returns the values of a claim as strings: a string is one value,
// a list of strings (or numbers, or booleans) each of its members, and a
// number or boolean its JSON text. A claim the token does not carry has
// none.
func (p *Person) Claim(name string) []string {
	return claimValues(p.Claims[name])
}

func claimValues(v any) []string {
	switch v := v.(type) {
	case string:
		return []string{v}
	case bool:
		return []string{fmt.Sprint(v)}
	case float64:
		return []string{strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%f", v), "0"), ".")}
	case []any:
		var out []string
		for _, x := range v {
			if _, nested := x.([]any); nested {
				continue
			}
			out = append(out, claimValues(x)...)
		}
		return out
	}
	return nil
}

// Matches reports whether the person's token carries, for every claim
// named in want, one of the values listed: the rule that lets a person
// open a profile ("claims": {"groups": ["sre"]}). An empty want matches
// no one: a profile without claims is not opened by people.
func (p *Person) Matches(want map[string][]string) bool {
	if p == nil || len(want) == 0 {
		return false
	}
	for name, values := range want {
		have := p.Claim(name)
		if !slices.ContainsFunc(values, func(v string) bool { return slices.Contains(have, v) }) {
			return false
		}
	}
	return true
}

// DescribeClaims words a claim rule for messages: groups=sre|ops, email=….
func DescribeClaims(want map[string][]string) string {
	var parts []string
	for name, values := range want {
		parts = append(parts, name+"="+strings.Join(values, "|"))
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}

type personKey struct{}

// WithPerson returns ctx carrying the person a request is made for.
func WithPerson(ctx context.Context, p *Person) context.Context {
	return context.WithValue(ctx, personKey{}, p)
}

// PersonOf returns the person ctx carries, or nil: a request opened with
// a static token, or over stdio, is a profile's and no person's.
func PersonOf(ctx context.Context) *Person {
	p, _ := ctx.Value(personKey{}).(*Person)
	return p
}

// encoded is a Person as Encode writes it.
type encoded struct {
	Claims map[string]any `json:"claims"`
	Token  string         `json:"token,omitempty"`
	Expiry time.Time      `json:"expiry,omitzero"`
}

// Encode writes a person, their access token included, for a replica of
// the same fleet, which seals it on the way: it is a secret.
func Encode(p *Person) ([]byte, error) {
	return json.Marshal(encoded{Claims: p.Claims, Token: p.token, Expiry: p.Expiry})
}

// Decode reads a person Encode wrote.
func Decode(data []byte) (*Person, error) {
	var e encoded
	if err := json.Unmarshal(data, &e); err != nil {
		return nil, err
	}
	p := personOf(e.Claims)
	if p.Subject == "" {
		return nil, errors.New("identity: an encoded person without a subject")
	}
	p.token, p.Expiry = e.Token, e.Expiry
	return p, nil
}
