package signin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"golang.org/x/oauth2"
)

// Refreshing is written here rather than left to golang.org/x/oauth2,
// whose refresh request cannot carry the resource parameter that the MCP
// authorization specification asks for on every token request (RFC 8707).

// maxTokenResponse bounds what is read of a token endpoint's answer.
const maxTokenResponse = 1 << 20

// refresh asks the record's token endpoint for a new token.
func refresh(ctx context.Context, client *http.Client, rec *Record) (*oauth2.Token, error) {
	if rec.RefreshToken == "" {
		return nil, errors.New("no refresh token")
	}
	form := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rec.RefreshToken}, "resource": {rec.Resource}}
	basic := false
	switch oauth2.AuthStyle(rec.AuthStyle) {
	case oauth2.AuthStyleInHeader:
		basic = true
	case oauth2.AuthStyleInParams:
	default:
		basic = rec.ClientSecret != ""
	}
	if !basic {
		form.Set("client_id", rec.ClientID)
		if rec.ClientSecret != "" {
			form.Set("client_secret", rec.ClientSecret)
		}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, rec.TokenURL, strings.NewReader(form.Encode()))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	if basic {
		req.SetBasicAuth(url.QueryEscape(rec.ClientID), url.QueryEscape(rec.ClientSecret))
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxTokenResponse))
	if err != nil {
		return nil, err
	}
	var t struct {
		AccessToken  string `json:"access_token"`
		TokenType    string `json:"token_type"`
		RefreshToken string `json:"refresh_token"`
		ExpiresIn    int64  `json:"expires_in"`
		Error        string `json:"error"`
	}
	jerr := json.Unmarshal(body, &t)
	switch {
	case resp.StatusCode != http.StatusOK && t.Error != "":
		return nil, fmt.Errorf("the token endpoint answered %s", t.Error)
	case resp.StatusCode != http.StatusOK:
		return nil, fmt.Errorf("the token endpoint answered HTTP %d", resp.StatusCode)
	case jerr != nil || t.AccessToken == "":
		return nil, errors.New("the token endpoint answered something other than a token")
	}
	tok := &oauth2.Token{AccessToken: t.AccessToken, TokenType: t.TokenType, RefreshToken: t.RefreshToken}
	if tok.RefreshToken == "" {
		tok.RefreshToken = rec.RefreshToken // the server keeps the old one valid
	}
	if t.ExpiresIn > 0 {
		tok.Expiry = time.Now().Add(time.Duration(t.ExpiresIn) * time.Second)
	}
	return tok, nil
}
