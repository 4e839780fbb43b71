// Package registry reads MCP Registries: the official one and any that
// serve its API's read side (/v0.1: servers by search, a server's
// versions, one version or the latest), such as a team's own. An entry is
// a server.json (packages to run, remotes to reach, their inputs) and the
// registry's status of it (active, deprecated, deleted). Plan turns an
// entry into a server of toolshelf's configuration.
package registry

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
)

// Official is the official MCP Registry's base URL.
const Official = "https://registry.modelcontextprotocol.io"

// maxAnswer bounds what a registry's answer may be.
const maxAnswer = 8 << 20

// Entry is one version of a server as a registry serves it.
type Entry struct {
	Server Server `json:"server"`
	Meta   struct {
		Official Status `json:"io.modelcontextprotocol.registry/official"`
	} `json:"_meta"`
	// Registry is the base URL of the registry that served it.
	Registry string `json:"-"`
}

// Status is the registry's record of an entry.
type Status struct {
	Status        string    `json:"status"` // active, deprecated or deleted
	StatusMessage string    `json:"statusMessage,omitempty"`
	PublishedAt   time.Time `json:"publishedAt"`
	UpdatedAt     time.Time `json:"updatedAt"`
	IsLatest      bool      `json:"isLatest"`
}

// Server is a server.json.
type Server struct {
	Name        string    `json:"name"`
	Title       string    `json:"title,omitempty"`
	Description string    `json:"description"`
	Version     string    `json:"version"`
	WebsiteURL  string    `json:"websiteUrl,omitempty"`
	Packages    []Package `json:"packages,omitempty"`
	Remotes     []Remote  `json:"remotes,omitempty"`
}

// Package is a way to run the server locally.
type Package struct {
	RegistryType         string     `json:"registryType"`
	RegistryBaseURL      string     `json:"registryBaseUrl,omitempty"`
	Identifier           string     `json:"identifier"`
	Version              string     `json:"version,omitempty"`
	FileSHA256           string     `json:"fileSha256,omitempty"`
	RuntimeHint          string     `json:"runtimeHint,omitempty"`
	Transport            Transport  `json:"transport"`
	RuntimeArguments     []Argument `json:"runtimeArguments,omitempty"`
	PackageArguments     []Argument `json:"packageArguments,omitempty"`
	EnvironmentVariables []Input    `json:"environmentVariables,omitempty"`
}

// Transport is how a package or remote is spoken to.
type Transport struct {
	Type    string  `json:"type"`
	URL     string  `json:"url,omitempty"`
	Headers []Input `json:"headers,omitempty"`
}

// Remote is a server reached over the network.
type Remote struct {
	Type    string  `json:"type"`
	URL     string  `json:"url"`
	Headers []Input `json:"headers,omitempty"`
}

// Input is a value the person may have to give: an environment
// variable, a header, or an argument's.
type Input struct {
	Name        string   `json:"name,omitempty"`
	Description string   `json:"description,omitempty"`
	IsRequired  bool     `json:"isRequired,omitempty"`
	IsSecret    bool     `json:"isSecret,omitempty"`
	Format      string   `json:"format,omitempty"` // string, number, boolean, filepath
	Value       string   `json:"value,omitempty"`
	Default     string   `json:"default,omitempty"`
	Placeholder string   `json:"placeholder,omitempty"`
	Choices     []string `json:"choices,omitempty"`
}

// Argument is a command-line argument: positional or --named.
type Argument struct {
	Input
	Type      string `json:"type"` // positional or named
	ValueHint string `json:"valueHint,omitempty"`
}

// Client reads registries, the first that knows a server first: a
// team's own before the official one.
type Client struct {
	Registries []string
	HTTP       *http.Client
}

// ErrNotFound is a server or version no registry knows.
var ErrNotFound = errors.New("not found")

// Get returns a version of a server ("latest" for the newest), from the
// first registry that has it. A deleted entry is returned too (with its
// status): the caller refuses it, saying why.
func (c *Client) Get(ctx context.Context, name, version string) (*Entry, error) {
	if version == "" {
		version = "latest"
	}
	var errs []error
	for _, base := range c.Registries {
		var e Entry
		err := c.get(ctx, base, "/v0.1/servers/"+url.PathEscape(name)+"/versions/"+url.PathEscape(version)+"?include_deleted=true", &e)
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if e.Server.Name != name {
			errs = append(errs, fmt.Errorf("%s answered for %s with %q", base, name, e.Server.Name))
			continue
		}
		e.Registry = base
		return &e, nil
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return nil, fmt.Errorf("%s@%s: %w in %s", name, version, ErrNotFound, strings.Join(c.Registries, ", "))
}

// Search returns the latest version of the servers whose names (or
// descriptions) match words, from every registry, at most limit of each.
func (c *Client) Search(ctx context.Context, words string, limit int) ([]Entry, error) {
	var out []Entry
	var errs []error
	for _, base := range c.Registries {
		var list struct {
			Servers []Entry `json:"servers"`
		}
		q := url.Values{"search": {words}, "version": {"latest"}, "limit": {fmt.Sprint(limit)}}
		if err := c.get(ctx, base, "/v0.1/servers?"+q.Encode(), &list); err != nil {
			errs = append(errs, err)
			continue
		}
		for _, e := range list.Servers {
			e.Registry = base
			out = append(out, e)
		}
	}
	if len(out) == 0 && len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return out, nil
}

// UpdatedSince returns the entries of a registry updated since a time
// (deleted ones too, as the API gives them then).
func (c *Client) UpdatedSince(ctx context.Context, base string, since time.Time) ([]Entry, error) {
	var out []Entry
	cursor := ""
	for range 100 {
		q := url.Values{"updated_since": {since.UTC().Format(time.RFC3339)}, "limit": {"100"}}
		if cursor != "" {
			q.Set("cursor", cursor)
		}
		var list struct {
			Servers  []Entry `json:"servers"`
			Metadata struct {
				NextCursor string `json:"nextCursor"`
			} `json:"metadata"`
		}
		if err := c.get(ctx, base, "/v0.1/servers?"+q.Encode(), &list); err != nil {
			return out, err
		}
		for _, e := range list.Servers {
			e.Registry = base
			out = append(out, e)
		}
		if list.Metadata.NextCursor == "" || list.Metadata.NextCursor == cursor {
			break
		}
		cursor = list.Metadata.NextCursor
	}
	return out, nil
}

func (c *Client) get(ctx context.Context, base, path string, into any) error {
	hc := c.HTTP
	if hc == nil {
		hc = &http.Client{Timeout: 30 * time.Second}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(base, "/")+path, nil)
	if err != nil {
		return fmt.Errorf("registry %s: %v", base, err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("registry %s: %v", base, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer+1))
	switch {
	case err != nil:
		return fmt.Errorf("registry %s: %v", base, err)
	case resp.StatusCode == http.StatusNotFound:
		return ErrNotFound
	case resp.StatusCode != http.StatusOK:
		return fmt.Errorf("registry %s: HTTP %d", base, resp.StatusCode)
	case len(body) > maxAnswer:
		return fmt.Errorf("registry %s: an answer larger than %d bytes", base, maxAnswer)
	}
	if err := json.Unmarshal(body, into); err != nil {
		return fmt.Errorf("registry %s: not an answer of the registry API: %v", base, err)
	}
	return nil
}
