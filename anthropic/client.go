// Package anthropic is a small HTTP client for the Anthropic Messages API:
// the endpoints toolshelf needs (messages and count_tokens), with request
// and response bodies as raw JSON so that nothing the caller built is
// lost on the way. Request shaping lives in package messages, which does
// no I/O; this package is its network side.
package anthropic

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// DefaultBaseURL is the Anthropic API.
const DefaultBaseURL = "https://api.anthropic.com"

// APIVersion is the anthropic-version header value.
const APIVersion = "2023-06-01"

// Client calls the Messages API.
type Client struct {
	baseURL string
	apiKey  string
	http    *http.Client
}

// Options configures a Client. Nil means defaults.
type Options struct {
	// BaseURL defaults to DefaultBaseURL.
	BaseURL string
	// HTTPClient defaults to a client with a 10-minute timeout.
	HTTPClient *http.Client
}

// NewClient returns a client authenticating with apiKey.
func NewClient(apiKey string, opts *Options) *Client {
	c := &Client{baseURL: DefaultBaseURL, apiKey: apiKey, http: &http.Client{Timeout: 10 * time.Minute}}
	if opts != nil {
		if opts.BaseURL != "" {
			c.baseURL = strings.TrimRight(opts.BaseURL, "/")
		}
		if opts.HTTPClient != nil {
			c.http = opts.HTTPClient
		}
	}
	return c
}

// BaseURL returns the URL requests go to.
func (c *Client) BaseURL() string { return c.baseURL }

// Error is an error response of the API.
type Error struct {
	Status  int
	Type    string // error.type, such as "invalid_request_error"
	Message string
}

func (e *Error) Error() string {
	return fmt.Sprintf("anthropic API: %d %s: %s", e.Status, e.Type, e.Message)
}

// post sends a JSON body and returns the response body of a 2xx answer.
func (c *Client) post(ctx context.Context, path string, body []byte, betas []string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, "POST", c.baseURL+path, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("content-type", "application/json")
	req.Header.Set("anthropic-version", APIVersion)
	if c.apiKey != "" {
		req.Header.Set("x-api-key", c.apiKey)
	}
	if len(betas) > 0 {
		req.Header.Set("anthropic-beta", strings.Join(betas, ","))
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode/100 != 2 {
		var e struct {
			Error struct {
				Type    string `json:"type"`
				Message string `json:"message"`
			} `json:"error"`
		}
		_ = json.Unmarshal(data, &e)
		if e.Error.Message == "" {
			e.Error.Message = strings.TrimSpace(string(data[:min(len(data), 200)]))
		}
		return nil, &Error{Status: resp.StatusCode, Type: e.Error.Type, Message: e.Error.Message}
	}
	return data, nil
}

// CreateMessage posts a request body to /v1/messages and returns the
// response body.
func (c *Client) CreateMessage(ctx context.Context, body json.RawMessage, betas []string) (json.RawMessage, error) {
	return c.post(ctx, "/v1/messages", body, betas)
}

// CountTokens posts a request body to /v1/messages/count_tokens and
// returns input_tokens.
func (c *Client) CountTokens(ctx context.Context, body json.RawMessage, betas []string) (int, error) {
	data, err := c.post(ctx, "/v1/messages/count_tokens", body, betas)
	if err != nil {
		return 0, err
	}
	var r struct {
		InputTokens *int `json:"input_tokens"`
	}
	if err := json.Unmarshal(data, &r); err != nil || r.InputTokens == nil {
		return 0, errors.New("anthropic API: count_tokens answered without input_tokens")
	}
	return *r.InputTokens, nil
}
