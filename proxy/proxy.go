// Package proxy puts tool search in front of a model API, for any client:
// an agent that sends every tool definition on every turn (Claude Code
// behind a gateway that is not Anthropic's, agents built on the Messages
// API without tool search) points its base URL at the proxy instead.
//
// For each POST /v1/messages, the request's tools go through the same
// deferral decision as the gateway's (package policy). Below the
// threshold, or when the client defers tools itself, the request passes
// untouched. Above it, the deferrable tools (MCP tools) leave the request
// for one search tool, and the system prompt announces them. When the
// model calls the search tool the proxy answers it itself, adds the
// tools found to the request and asks the model again, until the model
// answers or calls one of the client's tools: the client gets one
// response, as if the model had called its tool at once. Tools the model
// called earlier in the conversation stay loaded.
//
// Everything else (other paths, count_tokens of a request that passes)
// goes to the upstream unchanged. API keys pass through and are never
// kept or logged.
//
// It is public because a [Server] is an http.Handler: a program can mount
// tool search in front of its own model traffic without the CLI.
package proxy

import (
	"bytes"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httputil"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/toolshelf/toolshelf/ledger"
	"github.com/toolshelf/toolshelf/messages"
	"github.com/toolshelf/toolshelf/policy"
	"github.com/toolshelf/toolshelf/telemetry"
	"go.opentelemetry.io/otel/trace"
)

// Defaults of Options.
const (
	DefaultMaxRounds        = 4
	DefaultMaxRequestBytes  = 32 << 20
	DefaultMaxResponseBytes = 32 << 20
	// DefaultMaxTools bounds the tools one request may carry: the Messages
	// API's own limit is far below it, and each tool indexed costs the
	// proxy memory (setSize).
	DefaultMaxTools = 20_000
)

// TokenHeader carries the proxy's own token, when it has one: clients
// send their API key in the usual headers, which go upstream.
const TokenHeader = "X-Toolshelf-Token"

// Options configure a Server. Nil means defaults.
type Options struct {
	// Upstream is the model API's base URL, such as
	// https://api.anthropic.com. Required.
	Upstream string
	// Client sends requests upstream (default: http.DefaultClient's
	// transport, without a timeout: answers take minutes).
	Client *http.Client
	// Logger gets one line per request (nil is silent).
	Logger *slog.Logger
	// Settings is the deferral mode (default: auto, 10% of the context
	// window), as serve --mode reads it.
	Settings policy.Settings
	// ContextWindow overrides the model's context window when positive.
	ContextWindow int
	// MaxRounds bounds the search rounds the proxy answers per request;
	// past it the model's last answer goes to the client with a note.
	MaxRounds int
	// MaxRequestBytes bounds a request body (default 32 MiB).
	MaxRequestBytes int64
	// MaxResponseBytes bounds an upstream answer the proxy reads whole
	// (not a stream it passes on; default 32 MiB).
	MaxResponseBytes int64
	// MaxPlanBytes bounds the tool sets the proxy keeps indexed, by
	// their size (default 256 MiB).
	MaxPlanBytes int64
	// MaxTools bounds the tools of one request (default DefaultMaxTools);
	// a request with more is refused with 413.
	MaxTools int
	// Engine is the search engine kind (search.DefaultEngine when empty).
	Engine string
	// Token, when set, is required in the X-Toolshelf-Token header.
	Token string
	// Telemetry traces each request, its rounds and the searches the
	// proxy answers (see tracing.go); nil traces nothing.
	Telemetry *telemetry.Telemetry
	// Native is when the API's own tool search is used instead of the
	// proxy's search rounds: NativeAuto (default) when the upstream is
	// Anthropic's API and the model supports it, NativeAlways, or
	// NativeNever.
	Native string
	// ToolAdditions is when the proxy's search rounds add the tools a
	// search found as tool definitions in a system message after the
	// search's results (the Messages API's mid-conversation tool
	// changes, beta messages.BetaInlineTools), so that the request's
	// tools, its system prompt and every earlier message stay byte for
	// byte what they were, and the prompt cache holds: ToolAdditionsAuto
	// (default) for the models messages.AddsToolsMidConversation names,
	// ToolAdditionsAlways, or ToolAdditionsNever (the found tools join the
	// request's tools, as before).
	ToolAdditions string
	// Ledger counts every model request (see admit and meter) and holds
	// them to its budgets; nil counts nothing.
	Ledger *ledger.Ledger
	// Callers, when set, are who may call with a token of their own; the
	// proxy then sends APIKey upstream in place of the caller's token.
	Callers *Callers
	// APIKey is the upstream's key, sent when Callers is set.
	APIKey string
}

// Values of Options.ToolAdditions.
const (
	ToolAdditionsAuto   = "auto"
	ToolAdditionsAlways = "always"
	ToolAdditionsNever  = "never"
)

// Values of Options.Native.
const (
	NativeAuto   = "auto"
	NativeAlways = "always"
	NativeNever  = "never"
)

// Server is the proxy. It is safe for concurrent use.
type Server struct {
	opts     Options
	upstream *url.URL
	logger   *slog.Logger
	pass     *httputil.ReverseProxy
	plans    *planCache
	hidden   *hiddenRounds
}

// New returns a proxy to opts.Upstream.
func New(opts *Options) (*Server, error) {
	s := &Server{}
	if opts != nil {
		s.opts = *opts
	}
	u, err := url.Parse(s.opts.Upstream)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("--upstream %q: want an http(s) URL such as https://api.anthropic.com", s.opts.Upstream)
	}
	s.upstream = u
	if s.opts.Client == nil {
		s.opts.Client = &http.Client{}
	}
	if s.opts.Settings.Mode == "" {
		s.opts.Settings = policy.Settings{Mode: policy.ModeAuto, Percent: policy.DefaultPercent}
	}
	if err := autoAlwaysNever(&s.opts.Native, "--native"); err != nil {
		return nil, err
	}
	if err := autoAlwaysNever(&s.opts.ToolAdditions, "--tool-additions"); err != nil {
		return nil, err
	}
	if s.opts.MaxRounds <= 0 {
		s.opts.MaxRounds = DefaultMaxRounds
	}
	if s.opts.MaxRequestBytes <= 0 {
		s.opts.MaxRequestBytes = DefaultMaxRequestBytes
	}
	if s.opts.MaxResponseBytes <= 0 {
		s.opts.MaxResponseBytes = DefaultMaxResponseBytes
	}
	if s.opts.MaxTools <= 0 {
		s.opts.MaxTools = DefaultMaxTools
	}
	s.logger = s.opts.Logger
	if s.logger == nil {
		s.logger = slog.New(slog.DiscardHandler)
	}
	if s.opts.Telemetry == nil {
		s.opts.Telemetry = telemetry.Discard()
	}
	s.pass = &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(s.upstream)
			r.Out.Host = s.upstream.Host
			r.Out.Header.Del(TokenHeader)
		},
		FlushInterval: -1, // streams go through as they come
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			if failure, ok := r.Context().Value(passErrKey{}).(*error); ok {
				*failure = err
			}
			writeError(w, http.StatusBadGateway, "api_error", "toolshelf proxy: the upstream cannot be reached: "+err.Error())
		},
	}
	if c := s.opts.Callers; c != nil && s.opts.APIKey == "" && (len(c.Profiles) == 0 || slices.ContainsFunc(c.Profiles, func(p CallerProfile) bool { return p.APIKey == "" })) {
		return nil, errors.New("callers with tokens of their own need the proxy's own API key for the upstream (or one for each of their profiles)")
	}
	if s.opts.Ledger != nil {
		m, err := newLedgerMetrics(s.opts.Telemetry)
		if err != nil {
			return nil, err
		}
		c := *s.opts.Client
		c.Transport = &meter{next: orDefault(c.Transport), logger: s.logger, metrics: m}
		s.opts.Client = &c
		s.pass.Transport = &meter{next: http.DefaultTransport, logger: s.logger, metrics: m}
	}
	s.plans = newPlanCache(s.opts.MaxPlanBytes)
	s.hidden = newHiddenRounds()
	return s, nil
}

// ServeHTTP answers the Messages API's POST /v1/messages and
// /v1/messages/count_tokens, and the Chat Completions API's POST
// /v1/chat/completions, and passes everything else upstream.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodGet && r.URL.Path == "/healthz" {
		// The proxy's own health, for a load balancer: it does not ask the
		// upstream, whose health is the upstream's to report.
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"status":"ok"}`+"\n")
		return
	}
	if s.opts.Token != "" && subtle.ConstantTimeCompare([]byte(r.Header.Get(TokenHeader)), []byte(s.opts.Token)) != 1 {
		writeError(w, http.StatusUnauthorized, "authentication_error", "toolshelf proxy: missing or wrong "+TokenHeader)
		return
	}
	if r.Method == http.MethodGet && r.URL.Path == "/metrics" {
		s.opts.Telemetry.MetricsHandler().ServeHTTP(w, r)
		return
	}
	if r.Method == http.MethodGet && r.URL.Path == "/usage" {
		s.usage(w, r)
		return
	}
	r, a, ok := s.admit(w, r)
	if !ok {
		return
	}
	if a != nil {
		defer func() {
			if err := a.finish(r.Context()); err != nil {
				s.logger.Error("the ledger did not take a request that was not sent; it stays counted at its most", "error", err)
			}
		}()
	}
	if s.opts.Telemetry.Tracing() {
		var span trace.Span
		r, span = s.traceRequest(r)
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		defer func() { endRequest(span, sw.status) }()
		w = sw
	}
	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/v1/messages":
		s.messages(w, r)
	case r.Method == http.MethodPost && r.URL.Path == "/v1/messages/count_tokens":
		s.countTokens(w, r)
	case r.Method == http.MethodPost && r.URL.Path == "/v1/chat/completions":
		s.chat(w, r)
	default:
		s.pass.ServeHTTP(w, r)
	}
}

// errorBody is the Messages API's error shape.
type errorBody struct {
	Type  string `json:"type"`
	Error struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
}

func errorJSON(kind, msg string) []byte {
	var e errorBody
	e.Type, e.Error.Type, e.Error.Message = "error", kind, msg
	b, _ := json.Marshal(e)
	return b
}

// writeError answers with the Messages API's error shape.
func writeError(w http.ResponseWriter, status int, kind, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(errorJSON(kind, msg))
}

// bodyError is why a request body could not be read.
type bodyError struct {
	status int
	kind   string
	msg    string
}

// readLimited reads a request body within max bytes.
func readLimited(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, *bodyError) {
	if body, ok := r.Context().Value(bodyKey{}).([]byte); ok {
		return body, nil // read by admit
	}
	// Room for the body its length announces, up to presize: growing the
	// buffer a megabyte body needs was a tenth of a cached request's
	// time, and a client that announces more than it sends gets no more.
	buf := bytes.NewBuffer(make([]byte, 0, min(max(r.ContentLength, 0), limit, presize)+bytes.MinRead))
	_, err := buf.ReadFrom(http.MaxBytesReader(w, r.Body, limit))
	body := buf.Bytes()
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		return nil, &bodyError{http.StatusRequestEntityTooLarge, "request_too_large", fmt.Sprintf("the request is over %d bytes", limit)}
	case err != nil:
		return nil, &bodyError{http.StatusBadRequest, "invalid_request_error", "reading the request: " + err.Error()}
	}
	return body, nil
}

// tooManyTools says why a request of n tools is refused, or "".
func (s *Server) tooManyTools(n int) string {
	if n <= s.opts.MaxTools {
		return ""
	}
	return fmt.Sprintf("toolshelf proxy: the request has %d tools, more than the %d the proxy takes (--max-tools)", n, s.opts.MaxTools)
}

// presize is the most readLimited sets aside before a body arrives.
const presize = 4 << 20

// readRequest reads a Messages API request, answering the client itself
// when it cannot.
func (s *Server) readRequest(w http.ResponseWriter, r *http.Request) ([]byte, messages.Request, bool) {
	body, berr := readLimited(w, r, s.opts.MaxRequestBytes)
	if berr != nil {
		writeError(w, berr.status, berr.kind, "toolshelf proxy: "+berr.msg)
		return nil, messages.Request{}, false
	}
	// Not json.Unmarshal, which would validate the body before the
	// request's own decoder validates it again; and without a copy: the
	// body is this request's own and nothing writes to it.
	req, err := messages.DecodeRequest(body)
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "toolshelf proxy: the request is not valid JSON: "+err.Error())
		return nil, req, false
	}
	if msg := s.tooManyTools(len(req.Tools)); msg != "" {
		writeError(w, http.StatusRequestEntityTooLarge, "request_too_large", msg)
		return nil, req, false
	}
	return body, req, true
}

// relay answers with an upstream's response as it came (an API error:
// overloaded, rate limited, invalid), so that the client reads it as if
// it had asked directly.
func relay(w http.ResponseWriter, resp *http.Response, raw []byte) {
	copyHeaders(w.Header(), resp.Header)
	w.Header().Set("Content-Type", resp.Header.Get("Content-Type"))
	w.WriteHeader(resp.StatusCode)
	w.Write(raw)
}

// hopHeaders are not forwarded (RFC 9110, 7.6.1), nor what the proxy sets
// itself.
var hopHeaders = []string{"Connection", "Keep-Alive", "Proxy-Connection", "Te", "Trailer", "Transfer-Encoding", "Upgrade",
	"Content-Length", "Accept-Encoding", "Host", TokenHeader}

// upstreamRequest is a POST of body to the client request's path and
// query upstream, with its headers (its API key among them).
func (s *Server) upstreamRequest(client *http.Request, body []byte) (*http.Request, error) {
	u := *s.upstream
	u.Path = strings.TrimSuffix(u.Path, "/") + client.URL.Path
	// The upstream's own query (Azure's ?api-version=) and the client's
	// (Claude Code asks for /v1/messages?beta=true), as the pass-through
	// requests have them.
	switch {
	case u.RawQuery == "":
		u.RawQuery = client.URL.RawQuery
	case client.URL.RawQuery != "":
		u.RawQuery += "&" + client.URL.RawQuery
	}
	req, err := http.NewRequestWithContext(client.Context(), http.MethodPost, u.String(), bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	for k, vs := range client.Header {
		req.Header[k] = append([]string(nil), vs...)
	}
	for _, h := range hopHeaders {
		req.Header.Del(h)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	s.opts.Telemetry.InjectHeader(req.Context(), req.Header)
	return req, nil
}

// send posts body upstream (see upstreamRequest) and returns the response
// read whole.
func (s *Server) send(client *http.Request, body []byte) (*http.Response, []byte, error) {
	req, err := s.upstreamRequest(client, body)
	if err != nil {
		return nil, nil, err
	}
	resp, err := s.opts.Client.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	raw, err := s.readAnswer(resp)
	return resp, raw, err
}

// readAnswer reads an upstream answer whole, within MaxResponseBytes: an
// upstream that never ends its body must not take the proxy's memory. The
// read ends with the client's request too (the upstream request carries
// its context).
func (s *Server) readAnswer(resp *http.Response) ([]byte, error) {
	raw, err := io.ReadAll(io.LimitReader(resp.Body, s.opts.MaxResponseBytes+1))
	if err == nil && int64(len(raw)) > s.opts.MaxResponseBytes {
		return nil, fmt.Errorf("the upstream's answer is over %d bytes", s.opts.MaxResponseBytes)
	}
	return raw, err
}

// orDefault is t, or the default transport.
func orDefault(t http.RoundTripper) http.RoundTripper {
	if t == nil {
		return http.DefaultTransport
	}
	return t
}

// copyHeaders copies an upstream response's headers that a client may
// read (request ids, rate limits).
func copyHeaders(dst, src http.Header) {
	for k, vs := range src {
		switch http.CanonicalHeaderKey(k) {
		case "Content-Length", "Content-Type", "Content-Encoding", "Transfer-Encoding", "Connection":
			continue
		}
		dst[k] = append([]string(nil), vs...)
	}
}

// since is a duration in milliseconds, for logs.
func since(t time.Time) float64 { return float64(time.Since(t).Microseconds()) / 1000 }

// logCut is a client's string (a model's name) as logged: a client can
// send megabytes in any field, and a log line must stay a line.
func logCut(s string) string {
	const most = 200
	if len(s) <= most {
		return s
	}
	return strings.ToValidUTF8(s[:most], "") + fmt.Sprintf("…(%d bytes)", len(s))
}
