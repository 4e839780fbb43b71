package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/toolshelf/toolshelf/telemetry"
)

// liveQuality is what doctor --live reports of a running gateway: search
// quality on its real traffic, per profile and server, from its /metrics.
type liveQuality struct {
	URL     string        `json:"url"`
	Servers []liveServer  `json:"servers"`
	Unused  []liveProfile `json:"unusedSearches"`
}

// liveServer is one profile's quality for one server, as audit summary
// reports it from the log; ViaSelect are the unsearched calls whose tool
// a select: search named.
type liveServer struct {
	Profile string `json:"profile"`
	serverQuality
	ViaSelect int `json:"viaSelect"`
}

type liveProfile struct {
	Profile string `json:"profile"`
	Count   int    `json:"count"`
}

// metricsURL turns what the user gave (the gateway's base URL, its /mcp
// URL or its /metrics URL) into the /metrics URL.
func metricsURL(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", usagef("--live %q: want the gateway's URL, such as http://127.0.0.1:8080", raw)
	}
	path := strings.TrimSuffix(u.Path, "/")
	if i := strings.Index(path, "/mcp"); i >= 0 {
		path = path[:i]
	}
	u.Path = strings.TrimSuffix(path, "/metrics") + "/metrics"
	u.RawQuery = ""
	return u.String(), nil
}

// readLive fetches a running gateway's /metrics, with token as its bearer
// token when set, and reads the search-quality metrics from it.
func readLive(ctx context.Context, raw, token string) (*liveQuality, error) {
	u, err := metricsURL(raw)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", u, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		hint := ""
		if resp.StatusCode == http.StatusUnauthorized {
			hint = fmt.Sprintf(" (set $%s to the gateway's --auth-token)", envAuthToken)
		}
		return nil, fmt.Errorf("reading %s: %s%s", u, resp.Status, hint)
	}
	samples, err := telemetry.ReadMetrics(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", u, err)
	}
	return liveFrom(u, samples), nil
}

// liveFrom gathers the quality figures of each profile and server.
func liveFrom(u string, samples map[string][]telemetry.Sample) *liveQuality {
	q := &liveQuality{URL: u, Servers: []liveServer{}, Unused: []liveProfile{}}
	byKey := map[[2]string]*liveServer{}
	at := func(labels map[string]string) *liveServer {
		k := [2]string{labels["profile"], labels["server"]}
		if byKey[k] == nil {
			byKey[k] = &liveServer{Profile: k[0], serverQuality: serverQuality{Server: k[1]}}
		}
		return byKey[k]
	}
	for _, s := range samples["toolshelf_search_rank"] {
		at(s.Labels).setRecall(int(s.Value), [3]int{int(s.Buckets[1]), int(s.Buckets[5]), int(s.Buckets[10])})
	}
	for _, s := range samples["toolshelf_calls_unsearched_total"] {
		ls := at(s.Labels)
		ls.Unsearched += int(s.Value)
		if s.Labels["via"] == "select" {
			ls.ViaSelect += int(s.Value)
		}
	}
	for _, ls := range byKey {
		q.Servers = append(q.Servers, *ls)
	}
	slices.SortFunc(q.Servers, func(a, b liveServer) int {
		return cmp.Or(cmp.Compare(a.Profile, b.Profile), cmp.Compare(a.Server, b.Server))
	})
	for _, s := range samples["toolshelf_searches_unused_total"] {
		q.Unused = append(q.Unused, liveProfile{Profile: s.Labels["profile"], Count: int(s.Value)})
	}
	slices.SortFunc(q.Unused, func(a, b liveProfile) int { return cmp.Compare(a.Profile, b.Profile) })
	return q
}

func writeLive(w io.Writer, q *liveQuality) error {
	fmt.Fprintf(w, "Search quality on live traffic (%s):\n\n", q.URL)
	if len(q.Servers) == 0 {
		fmt.Fprintln(w, "  no call has followed a search yet")
	} else {
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "PROFILE\tSERVER\tCALLS AFTER A SEARCH\tRECALL@1\tRECALL@5\tRECALL@10\tUNSEARCHED\tOF WHICH SELECT:\t")
		for _, s := range q.Servers {
			fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%d\t%d\t\n", s.Profile, s.Server, s.Ranked, s.recallColumns(), s.Unsearched, s.ViaSelect)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	for _, u := range q.Unused {
		fmt.Fprintf(w, "\n%s: %d searches were followed by no call of what they found", u.Profile, u.Count)
	}
	if len(q.Unused) > 0 {
		fmt.Fprintln(w)
	}
	return nil
}
