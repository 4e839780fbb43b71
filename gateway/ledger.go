package gateway

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolshelf/toolshelf/identity"
	"github.com/toolshelf/toolshelf/ledger"
	"github.com/toolshelf/toolshelf/upstream"
)

// whoOf is whom a call is counted for: the person the request carries
// (its email, else its subject, and its groups) and the profile served.
func (s *Server) whoOf(ctx context.Context) ledger.Who {
	w := ledger.Who{Profile: s.up.Profile()}
	if p := identity.PersonOf(ctx); p != nil {
		w.Person, w.Groups = cut(p.String(), echoLimit), p.Groups
	}
	return w
}

// countCall admits a call into the ledger before it runs: a call past a
// tool-call budget, or one the ledger cannot count, is refused (the
// result to answer with), and nothing runs.
func (s *Server) countCall(ctx context.Context, c *upstream.Call) (*ledger.Entry, *mcp.CallToolResult) {
	l := s.opts.Ledger
	if l == nil {
		return nil, nil
	}
	e := &ledger.Entry{Kind: ledger.KindCall, Who: s.whoOf(ctx), Server: c.Tool.Server, Tool: c.Tool.Name}
	warnings, err := l.Admit(ctx, e)
	var over *ledger.OverError
	switch {
	case errors.As(err, &over):
		s.logger.Info("call refused by a budget", "tool", c.Tool.Name, "person", e.Person, "profile", e.Profile, "budget", over.Budget.Name())
		return nil, toolError("call_tool %s: refused: %v. Nothing ran.", c.Tool.Name, over)
	case err != nil:
		s.logger.Error("the ledger cannot count a call; refused", "tool", c.Tool.Name, "error", err)
		// The why is the operator's (it names the store): the log has it.
		return nil, toolError("call_tool %s: refused: toolshelf cannot count this call in its ledger just now. Nothing ran; try again later.", c.Tool.Name)
	}
	for _, w := range warnings {
		s.logger.Warn("budget nearly spent", "person", e.Person, "profile", e.Profile, "warning", w)
	}
	return e, nil
}

// settleCall writes how a counted call went.
func (s *Server) settleCall(ctx context.Context, e *ledger.Entry, outcome string, took time.Duration) {
	if e == nil {
		return
	}
	e.Outcome, e.DurationMS = outcome, float64(took.Microseconds())/1000
	if err := s.opts.Ledger.Settle(context.WithoutCancel(ctx), e); err != nil {
		s.logger.Error("the ledger did not take a call's outcome; it stays held", "tool", e.Tool, "error", err)
	}
}

// UsagePath is where a caller reads the ledger: their own usage with
// their token (a person's, or a profile's), everyone's with the admin
// token.
const UsagePath = "/usage"

// usageHandler answers GET /usage (see ledger.Ledger.Report).
func (s *Server) usageHandler(o *HTTPOptions) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		l := s.opts.Ledger
		if l == nil {
			http.Error(w, "this gateway keeps no ledger", http.StatusNotFound)
			return
		}
		if r.Method != http.MethodGet {
			http.Error(w, "GET only", http.StatusMethodNotAllowed)
			return
		}
		token, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		token = strings.TrimSpace(token)
		who, all, ok := ledger.Who{}, false, false
		same := func(a string) bool { return a != "" && subtle.ConstantTimeCompare([]byte(token), []byte(a)) == 1 }
		if token != "" {
			if same(o.admin()) {
				all, ok = true, true
			}
			for t, profile := range o.Tokens {
				if !ok && same(t) {
					who.Profile, ok = profile, true
				}
			}
			if pp := o.People; !ok && pp != nil && pp.Verifier != nil {
				if p, err := pp.Verifier.Verify(r.Context(), token); err == nil {
					who.Person, who.Groups, ok = cut(p.String(), echoLimit), p.Groups, true
				}
			}
		}
		if !ok {
			w.Header().Set("WWW-Authenticate", `Bearer realm="toolshelf"`)
			http.Error(w, "missing or wrong bearer token: your own token shows your usage, the admin token everyone's", http.StatusUnauthorized)
			return
		}
		rep, err := l.Report(r.Context(), r.URL.Query(), who, all)
		if err != nil {
			http.Error(w, "usage: "+err.Error(), http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(rep)
	})
}
