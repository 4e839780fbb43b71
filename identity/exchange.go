package identity

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"golang.org/x/oauth2"
)

// The token exchange grant and token type (RFC 8693).
const (
	exchangeGrant   = "urn:ietf:params:oauth:grant-type:token-exchange"
	accessTokenType = "urn:ietf:params:oauth:token-type:access_token"
)

// Exchange gets a token for audience that speaks for p, by exchanging p's
// access token at the provider's token endpoint (RFC 8693) as the
// gateway's client: the server behind the gateway gets a token meant for
// it, never the person's own. Tokens are kept until shortly before they
// expire, per person and audience.
func (v *Verifier) Exchange(ctx context.Context, p *Person, audience string) (*oauth2.Token, error) {
	if p == nil || p.token == "" {
		return nil, errors.New("token exchange needs a signed-in person")
	}
	if v.cfg.ClientID == "" {
		return nil, errors.New(`token exchange needs the gateway's client at the provider ("identity": "clientId", "clientSecret")`)
	}
	key := tokenKey(p.Subject + "\x00" + audience)
	now := v.opts.Now()
	if t, ok := v.exchanged.get(key, now); ok {
		return t, nil
	}
	meta, err := v.Metadata(ctx)
	if err != nil {
		return nil, err
	}
	if meta.TokenEndpoint == "" {
		return nil, errors.New("the identity provider names no token endpoint")
	}
	form := url.Values{
		"grant_type": {exchangeGrant}, "subject_token": {p.token}, "subject_token_type": {accessTokenType},
		"requested_token_type": {accessTokenType}, "audience": {audience},
	}
	status, data, err := v.postForm(ctx, meta.TokenEndpoint, form)
	if err != nil {
		return nil, fmt.Errorf("token exchange: %w", err)
	}
	var out struct {
		AccessToken string `json:"access_token"`
		TokenType   string `json:"token_type"`
		ExpiresIn   int64  `json:"expires_in"`
		Error       string `json:"error"`
	}
	jerr := json.Unmarshal(data, &out)
	switch {
	case status != http.StatusOK && out.Error != "":
		// The description may echo the token: only the code is told.
		return nil, fmt.Errorf("token exchange for %s: the provider answered %s", audience, out.Error)
	case status != http.StatusOK:
		return nil, fmt.Errorf("token exchange for %s: the provider answered HTTP %d", audience, status)
	case jerr != nil || out.AccessToken == "":
		return nil, fmt.Errorf("token exchange for %s: the provider answered something other than a token", audience)
	}
	tok := &oauth2.Token{AccessToken: out.AccessToken, TokenType: "Bearer"}
	until := now.Add(5 * time.Minute)
	if out.ExpiresIn > 0 {
		tok.Expiry = now.Add(time.Duration(out.ExpiresIn) * time.Second)
		until = tok.Expiry.Add(-v.opts.Skew)
	}
	v.exchanged.put(key, tok, until, now)
	return tok, nil
}

// ForgetExchange drops the kept token of p for audience: the server
// refused it.
func (v *Verifier) ForgetExchange(p *Person, audience string) {
	if p != nil {
		v.exchanged.drop(tokenKey(p.Subject + "\x00" + audience))
	}
}
