package config

import (
	"net/url"
	"regexp"
	"slices"
	"strings"
)

// Secrets are toolshelf's own secrets: the bearer tokens that open the
// gateway (--auth-token, the profiles' tokens) and the names of the
// environment variables they were read from. No server's environment
// carries them, and they are cut from what servers send back, so that a
// server (or a client reading a server's output) cannot learn a token
// that opens more than its own profile.
type Secrets struct {
	Values []string
	Vars   []string
	// Files hold secrets (token files, keys, the configuration): no
	// contained server sees them, whatever its grants.
	Files []string
}

// Add registers a secret value and, if it came from one, its variable.
func (s *Secrets) Add(value, fromVar string) {
	if value != "" {
		s.Values = append(s.Values, value)
	}
	if fromVar != "" {
		s.Vars = append(s.Vars, fromVar)
	}
}

// Secrets returns the configuration's own secrets: every profile's tokens,
// the store's URL and password, and the variables they came from.
func (c *Config) Secrets() Secrets {
	var s Secrets
	for _, p := range c.Profiles {
		s.Values = append(s.Values, p.Tokens...)
		s.Vars = append(s.Vars, p.tokenVars...)
		s.Files = append(s.Files, p.tokenFiles...)
	}
	s.Files = append(s.Files, c.files...)
	for _, sc := range c.Servers {
		s.Files = append(s.Files, sc.Files...)
	}
	if id := c.Identity; id != nil {
		s.Add(id.ClientSecret, "")
		s.Vars = append(s.Vars, id.vars...)
		s.Files = append(s.Files, id.files...)
	}
	if c.Store != "" {
		s.Values = append(s.Values, c.Store)
		s.Vars = append(s.Vars, c.storeVars...)
		if u, err := url.Parse(c.Store); err == nil && u.User != nil {
			if pw, ok := u.User.Password(); ok {
				s.Add(pw, "")
			}
		}
	}
	return s
}

// SecretValues lists what a server's configuration holds that may be secret:
// every value a ${VAR} expanded to, every header value, the env values
// whose names say they are secret (GITHUB_TOKEN, API_KEY; not NODE_ENV),
// and its URL's password and query values.
func (c *ServerConfig) SecretValues() []string {
	out := slices.Clone(c.Expanded)
	for k, v := range c.Env {
		if secretName.MatchString(k) {
			out = append(out, v)
		}
	}
	if c.OAuth != nil && c.OAuth.ClientSecret != "" {
		out = append(out, c.OAuth.ClientSecret)
	}
	for _, v := range c.Headers {
		out = append(out, v)
		if _, token, ok := strings.Cut(v, " "); ok {
			out = append(out, token) // "Bearer <token>": the token alone too
		}
	}
	if u, err := url.Parse(c.URL); err == nil {
		if p, ok := u.User.Password(); ok {
			out = append(out, p)
		}
		for _, vs := range u.Query() {
			out = append(out, vs...)
		}
	}
	return out
}

// secretName matches the names of env variables that hold secrets.
var secretName = regexp.MustCompile(`(?i)(token|key|secret|passw|auth|credential|cookie|session|private|pat$)`)
