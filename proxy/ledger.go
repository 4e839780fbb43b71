package proxy

import (
	"bytes"
	"cmp"
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/toolshelf/toolshelf/identity"
	"github.com/toolshelf/toolshelf/internal/jsonscan"
	"github.com/toolshelf/toolshelf/ledger"
)

// Callers say who may call the proxy with a token of their own, and so
// whom each model request is counted for: the people of the team's
// identity provider, and the profiles' static tokens. Clients send the
// token where they send an API key (x-api-key, or Authorization:
// Bearer); the proxy sends its own key upstream (Options.APIKey).
type Callers struct {
	// People verifies people's access tokens; nil takes none.
	People *identity.Verifier
	// Profiles are the profiles, in the configuration's order: a
	// person's request is counted under the first whose claims they
	// carry.
	Profiles []CallerProfile
}

// CallerProfile is a profile as the proxy reads it.
type CallerProfile struct {
	Name   string
	Tokens []string
	Claims map[string][]string
	// APIKey, when set, is the upstream's key for the profile's callers,
	// in place of the proxy's own (Options.APIKey).
	APIKey string
}

// WarningHeader carries, on an answer, the budgets past their warning
// share.
const WarningHeader = "Toolshelf-Budget-Warning"

// caller is who sent r: a profile's token, a person's, or (without
// Callers) the proxy's own. It takes the caller's token out of r's
// headers and puts the proxy's API key in.
func (s *Server) caller(r *http.Request) (ledger.Who, int, string) {
	c := s.opts.Callers
	if c == nil {
		return ledger.Who{}, 0, ""
	}
	token := r.Header.Get("X-Api-Key")
	if token == "" {
		if v, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
			token = strings.TrimSpace(v)
		}
	}
	// The caller's token never goes upstream, whoever they turn out to
	// be.
	r.Header.Del("X-Api-Key")
	r.Header.Del("Authorization")
	if token == "" {
		return ledger.Who{}, http.StatusUnauthorized, "toolshelf proxy: no token: send yours as the API key (x-api-key, or Authorization: Bearer)"
	}
	key := func(p *CallerProfile) {
		k := cmp.Or(p.APIKey, s.opts.APIKey)
		if strings.HasSuffix(r.URL.Path, "/chat/completions") {
			r.Header.Set("Authorization", "Bearer "+k)
		} else {
			r.Header.Set("X-Api-Key", k)
		}
	}
	for i := range c.Profiles {
		p := &c.Profiles[i]
		for _, t := range p.Tokens {
			if subtle.ConstantTimeCompare([]byte(token), []byte(t)) == 1 {
				key(p)
				return ledger.Who{Profile: p.Name}, 0, ""
			}
		}
	}
	if c.People == nil {
		return ledger.Who{}, http.StatusUnauthorized, "toolshelf proxy: the token is not one of a profile's"
	}
	person, err := c.People.Verify(r.Context(), token)
	if err != nil {
		return ledger.Who{}, http.StatusUnauthorized, "toolshelf proxy: " + err.Error()
	}
	for i := range c.Profiles {
		if p := &c.Profiles[i]; person.Matches(p.Claims) {
			key(p)
			*r = *r.WithContext(identity.WithPerson(r.Context(), person))
			return ledger.Who{Person: cutString(person.String(), 200), Groups: person.Groups, Profile: p.Name}, 0, ""
		}
	}
	return ledger.Who{}, http.StatusForbidden, fmt.Sprintf("toolshelf proxy: %s carries the claims of no profile here", person)
}

// metered reports whether a request to path is a model request the
// ledger counts.
func metered(path string) bool {
	return strings.HasSuffix(path, "/v1/messages") || strings.HasSuffix(path, "/chat/completions")
}

// account is one client request's place in the ledger: the entry
// admitted for its first round, and the rounds it has sent.
type account struct {
	l         *ledger.Ledger
	who       ledger.Who
	model     string
	maxTokens int64

	mu     sync.Mutex
	first  *ledger.Entry // admitted, not yet sent
	rounds int
}

type accountKey struct{}

// admit attributes r and, with a ledger, admits it under the budgets:
// false when it answered r itself (a refusal). The request it returns
// carries the account and its body, read once.
func (s *Server) admit(w http.ResponseWriter, r *http.Request) (*http.Request, *account, bool) {
	who, status, msg := s.caller(r)
	openAI := strings.HasSuffix(r.URL.Path, "/chat/completions")
	fail := func(status int, kind, msg string) {
		if openAI {
			openAIError(w, status, kind, msg)
		} else {
			writeError(w, status, kind, msg)
		}
	}
	if status != 0 {
		kind := "authentication_error"
		if status == http.StatusForbidden {
			kind = "permission_error"
		}
		fail(status, kind, msg)
		return r, nil, false
	}
	if s.opts.Ledger == nil || r.Method != http.MethodPost || !metered(r.URL.Path) {
		return r, nil, true
	}
	body, berr := readLimited(w, r, s.opts.MaxRequestBytes)
	if berr != nil {
		fail(berr.status, berr.kind, "toolshelf proxy: "+berr.msg)
		return r, nil, false
	}
	a := &account{l: s.opts.Ledger, who: who}
	a.model, a.maxTokens = modelAndMax(body)
	e := a.entry(int64(len(body)))
	warnings, err := a.l.Admit(r.Context(), e)
	var over *ledger.OverError
	switch {
	case errors.As(err, &over):
		w.Header().Set("Retry-After", strconv.Itoa(over.RetryAfter(time.Now())))
		// Sent again at once, it would be refused again: the SDKs read
		// this header before their retries.
		w.Header().Set("X-Should-Retry", "false")
		if openAI {
			openAIError(w, http.StatusTooManyRequests, "budget_exceeded", "toolshelf proxy: "+over.Error())
		} else {
			writeError(w, http.StatusTooManyRequests, "rate_limit_error", "toolshelf proxy: "+over.Error())
		}
		s.logger.Info("request refused by a budget", "person", who.Person, "profile", who.Profile, "budget", over.Budget.Name())
		return r, nil, false
	case err != nil:
		s.logger.Error("the ledger cannot count a request; refused", "error", err)
		// The why is the operator's (it names the store): the log has it.
		w.Header().Set("Retry-After", "10")
		fail(http.StatusServiceUnavailable, "api_error", "toolshelf proxy: the ledger cannot count this request just now, so it is not sent; try again later")
		return r, nil, false
	}
	a.first = e
	for _, msg := range warnings {
		w.Header().Add(WarningHeader, msg)
		s.logger.Warn("budget nearly spent", "person", who.Person, "profile", who.Profile, "warning", msg)
	}
	ctx := context.WithValue(r.Context(), accountKey{}, a)
	ctx = context.WithValue(ctx, bodyKey{}, body)
	r = r.WithContext(ctx)
	r.Body = io.NopCloser(bytes.NewReader(body))
	return r, a, true
}

// bodyKey carries a request body admit read, so that the handler does not
// read it again.
type bodyKey struct{}

// defaultMaxTokens bounds a request that names no max_tokens (Chat
// Completions' is optional): the largest output of today's models.
const defaultMaxTokens = 128_000

// modelAndMax reads a request's model and its bound on output tokens
// (max_tokens, or Chat Completions' max_completion_tokens).
func modelAndMax(body []byte) (model string, maxTokens int64) {
	sc := jsonscan.New(body)
	if sc.Peek() == '{' {
		sc.Object(func(key string) {
			switch key {
			case "model":
				model, _ = sc.String()
			case "max_tokens", "max_completion_tokens":
				if n, err := strconv.ParseInt(string(bytes.TrimSpace(sc.Value())), 10, 64); err == nil && n > 0 {
					maxTokens = n
				}
			default:
				sc.Skip()
			}
		})
	}
	if maxTokens == 0 {
		maxTokens = defaultMaxTokens
	}
	return cutString(model, 200), maxTokens
}

func cutString(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "")
}

// entry is a new round's entry at the most it could cost: every byte of
// its body an input token, max_tokens out.
func (a *account) entry(bodyBytes int64) *ledger.Entry {
	return &ledger.Entry{Kind: ledger.KindRound, Who: a.who, Model: a.model,
		Tokens: ledger.Tokens{Input: bodyBytes, Output: a.maxTokens}}
}

// round is the entry of a round about to be sent: the admitted one for
// the first, an own round (admitted here, held) for the proxy's searches.
func (a *account) round(ctx context.Context, bodyBytes int64) (*ledger.Entry, error) {
	a.mu.Lock()
	e := a.first
	a.first = nil
	a.rounds++
	a.mu.Unlock()
	if e != nil {
		return e, nil
	}
	e = a.entry(bodyBytes)
	e.Own = true
	_, err := a.l.Admit(ctx, e)
	return e, err
}

// finish voids the admitted entry of a request that never went upstream
// (the proxy answered it, or it was malformed).
func (a *account) finish(ctx context.Context) error {
	a.mu.Lock()
	e := a.first
	a.first = nil
	a.mu.Unlock()
	if e == nil {
		return nil
	}
	e.Void, e.Outcome = true, "not sent"
	return a.l.Settle(context.WithoutCancel(ctx), e)
}

// usage answers GET /usage: the caller's own usage (a person's, or a
// profile token's) and the budgets that apply to them. Without callers
// of its own, the proxy's clients are one, and see it all.
func (s *Server) usage(w http.ResponseWriter, r *http.Request) {
	if s.opts.Ledger == nil {
		writeError(w, http.StatusNotFound, "not_found_error", "toolshelf proxy: this proxy keeps no ledger")
		return
	}
	who, status, msg := s.caller(r)
	if status != 0 {
		writeError(w, status, "authentication_error", msg)
		return
	}
	rep, err := s.opts.Ledger.Report(r.Context(), r.URL.Query(), who, s.opts.Callers == nil)
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "toolshelf proxy: /usage: "+err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(rep)
}
