package gateway

import (
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestCheckHost: a name rebound to the listener's address (DNS rebinding)
// gets 403 on every route; the listen address, localhost on loopback and
// names given with --allowed-host are served.
func TestCheckHost(t *testing.T) {
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) })
	cases := []struct {
		listen  string
		allowed []string
		host    string
		want    int
	}{
		{"127.0.0.1:8080", nil, "127.0.0.1:8080", 204},
		{"127.0.0.1:8080", nil, "localhost:8080", 204},
		{"127.0.0.1:8080", nil, "[::1]:8080", 204},
		{"127.0.0.1:8080", nil, "attacker.example:8080", 403},
		{"127.0.0.1:8080", nil, "127.0.0.1.nip.io:8080", 403},
		{"127.0.0.1:8080", []string{"gw.internal"}, "gw.internal:8080", 204},
		{"127.0.0.1:8080", []string{"gw.internal"}, "GW.Internal", 204},
		{"10.1.2.3:8080", nil, "10.1.2.3:8080", 204},
		{"10.1.2.3:8080", nil, "10.1.2.4:8080", 403},
		{"10.1.2.3:8080", nil, "localhost:8080", 403},
		{"0.0.0.0:8080", nil, "192.168.1.9:8080", 204},
		{"0.0.0.0:8080", nil, "evil.example", 403},
		{"0.0.0.0:8080", []string{"mcp.corp.example"}, "mcp.corp.example", 204},
	}
	for _, c := range cases {
		addr, err := net.ResolveTCPAddr("tcp", c.listen)
		if err != nil {
			t.Fatal(err)
		}
		rec := httptest.NewRecorder()
		req := httptest.NewRequest("GET", "/metrics", nil)
		req.Host = c.host
		CheckHost(addr, c.allowed, ok).ServeHTTP(rec, req)
		if rec.Code != c.want {
			t.Errorf("listen %s allowed %v, Host %q: %d, want %d", c.listen, c.allowed, c.host, rec.Code, c.want)
		}
	}
}

// TestRoutesFailClosed: /metrics refuses everyone when no admin token is
// set and asks for it when one is; /healthz gives its details only with it.
func TestRoutesFailClosed(t *testing.T) {
	g, _ := gatewayFor(t, nil, standardUpstreams(t)...)
	for _, c := range []struct {
		opts   *HTTPOptions
		header map[string]string
		want   int
	}{
		{&HTTPOptions{}, nil, http.StatusUnauthorized},
		{&HTTPOptions{AdminToken: "adm-123456"}, nil, http.StatusUnauthorized},
		{&HTTPOptions{AdminToken: "adm-123456"}, map[string]string{"Authorization": "Bearer wrong"}, http.StatusUnauthorized},
		{&HTTPOptions{AdminToken: "adm-123456"}, map[string]string{"Authorization": "Bearer adm-123456"}, http.StatusOK},
		{&HTTPOptions{AuthToken: "auth-123456"}, map[string]string{"Authorization": "Bearer auth-123456"}, http.StatusOK},
	} {
		srv := httptest.NewServer(g.Handler(c.opts))
		req, _ := http.NewRequest("GET", srv.URL+"/metrics", nil)
		for k, v := range c.header {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.want {
			t.Errorf("%+v %v: /metrics %d, want %d", *c.opts, c.header, resp.StatusCode, c.want)
		}
		body := get(t, srv.URL+"/healthz", nil)
		if strings.Contains(body, `"servers"`) || !strings.Contains(body, `"status"`) {
			t.Errorf("/healthz without the token: %s", body)
		}
		srv.Close()
	}
}
