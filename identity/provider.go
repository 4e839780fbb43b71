package identity

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// send sends a request to the provider, asking for JSON, and returns the
// status and the body (at most maxMetadata bytes of it).
func send(client *http.Client, req *http.Request) (int, []byte, error) {
	req.Header.Set("Accept", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxMetadata))
	return resp.StatusCode, data, err
}

// postForm posts a form to an endpoint of the provider as the gateway's
// client (HTTP basic authentication, RFC 6749 2.3.1).
func (v *Verifier) postForm(ctx context.Context, endpoint string, form url.Values) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(url.QueryEscape(v.cfg.ClientID), url.QueryEscape(v.cfg.ClientSecret))
	return send(v.opts.Client, req)
}

// get gets an endpoint of the provider, with a bearer token when one is
// given.
func get(ctx context.Context, client *http.Client, endpoint, bearer string) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, endpoint, nil)
	if err != nil {
		return 0, nil, err
	}
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	return send(client, req)
}
