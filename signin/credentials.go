package signin

import (
	"context"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/auth/extauth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"
)

// ClientCredentials returns the OAuth handler of a machine-to-machine
// server: on the server's 401 it discovers the token endpoint and gets a
// token with the client's id and secret (the client credentials grant,
// the go-sdk's extauth handler). Nothing is stored: a new token is one
// request away.
func ClientCredentials(id, secret string) auth.OAuthHandler {
	h, err := extauth.NewClientCredentialsHandler(&extauth.ClientCredentialsHandlerConfig{
		Credentials: &oauthex.ClientCredentials{ClientID: id, ClientSecretAuth: &oauthex.ClientSecretAuth{ClientSecret: secret}},
	})
	if err != nil {
		// The configuration was checked when it was read; a handler that
		// cannot be built is one that refuses.
		return refusing{err}
	}
	return h
}

// Check connects to a streamable HTTP server with h and lists its tools,
// proving that h's credentials are accepted.
func Check(ctx context.Context, resource string, headers map[string]string, h auth.OAuthHandler) error {
	return verify(ctx, resource, headers, h)
}

// refusing is the handler of credentials the go-sdk does not take.
type refusing struct{ err error }

func (r refusing) TokenSource(context.Context) (oauth2.TokenSource, error) { return nil, nil }

func (r refusing) Authorize(_ context.Context, _ *http.Request, resp *http.Response) error {
	resp.Body.Close()
	return r.err
}
