// Package evaluate measures how well a search engine retrieves the right
// tools on a labelled dataset.
//
// A dataset is a folder with tools.jsonl (the catalog), queries.jsonl (the
// queries with the groups of tools that answer them) and, optionally,
// servers.jsonl (server descriptions). [Run] searches every query and
// reports recall@1/5/10, complete@10, MRR@10 and nDCG@10 over the whole
// dataset and over each value of the queries' level, category and subset
// fields, plus index build time and query latency.
//
// It is public for Go programs that measure search on their own tools and
// requests (toolshelf eval is its first user): the dataset format is
// documented in docs/datasets.md.
package evaluate

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/toolshelf/toolshelf/catalog"
)

// Dataset is a labelled tool-retrieval dataset.
type Dataset struct {
	// Name is the dataset folder's base name.
	Name    string
	Catalog *catalog.Catalog
	Queries []Query
}

// Query is one labelled query.
type Query struct {
	ID   string
	Text string
	// Groups are the tool ids the query needs: every group is needed, and
	// any one tool of a group satisfies it. A query with no groups is an
	// abstain case: no tool fits it.
	Groups [][]string
	// Labels are "level=2", "category=live_simple" and the like, one per
	// optional field present on the query.
	Labels []string
}

// fileError names the file a problem was found in.
func fileError(path string, err error) error { return catalog.InFile(path, err) }

// Load reads the dataset in dir.
func Load(dir string) (*Dataset, error) {
	if fi, err := os.Stat(dir); err != nil {
		return nil, fmt.Errorf("dataset %s: %w", dir, err)
	} else if !fi.IsDir() {
		return nil, fmt.Errorf("dataset %s is not a folder (want one with tools.jsonl and queries.jsonl)", dir)
	}
	toolsPath := filepath.Join(dir, "tools.jsonl")
	entries, err := readFile(toolsPath, ReadTools)
	if err != nil {
		return nil, err
	}
	var servers []catalog.Server
	serversPath := filepath.Join(dir, "servers.jsonl")
	if _, err := os.Stat(serversPath); err == nil {
		if servers, err = readFile(serversPath, ReadServers); err != nil {
			return nil, err
		}
	}
	ds := &Dataset{Name: filepath.Base(filepath.Clean(dir)), Catalog: catalog.New(entries, servers)}
	ids := make(map[string]bool, len(entries))
	for _, e := range entries {
		ids[e.ID] = true
	}
	queriesPath := filepath.Join(dir, "queries.jsonl")
	ds.Queries, err = readFile(queriesPath, func(r io.Reader) ([]Query, error) { return readQueries(r, ids) })
	if err != nil {
		return nil, err
	}
	if len(ds.Queries) == 0 {
		return nil, &catalog.FileError{File: queriesPath, Err: errors.New("no queries")}
	}
	return ds, nil
}

func readFile[T any](path string, read func(io.Reader) (T, error)) (T, error) {
	f, err := os.Open(path)
	if err != nil {
		var zero T
		return zero, err
	}
	defer f.Close()
	v, err := read(f)
	if err != nil {
		return v, fileError(path, err)
	}
	return v, nil
}

// queryJSON is one line of queries.jsonl.
type queryJSON struct {
	ID             string          `json:"id"`
	Query          string          `json:"query"`
	RelevantGroups [][]string      `json:"relevant_groups"`
	Relevant       []string        `json:"relevant"`
	Level          json.RawMessage `json:"level"`
	Category       json.RawMessage `json:"category"`
	Subset         json.RawMessage `json:"subset"`
}

// readQueries reads queries.jsonl, checking that every relevant id names a
// tool in ids.
func readQueries(r io.Reader, ids map[string]bool) ([]Query, error) {
	var qs []Query
	err := ScanJSONL(r, func(line []byte) error {
		var j queryJSON
		if err := json.Unmarshal(line, &j); err != nil {
			return fmt.Errorf("not a query object: %v", err)
		}
		if strings.TrimSpace(j.Query) == "" {
			return errors.New(`query has no "query" text`)
		}
		groups := j.RelevantGroups
		if groups == nil {
			// Without groups, each relevant tool is needed on its own.
			for _, r := range j.Relevant {
				groups = append(groups, []string{r})
			}
		}
		for _, g := range groups {
			if len(g) == 0 {
				return errors.New("a relevant group is empty")
			}
			for _, id := range g {
				if !ids[id] {
					return fmt.Errorf("relevant tool %q is not in tools.jsonl", id)
				}
			}
		}
		q := Query{ID: j.ID, Text: j.Query, Groups: groups}
		for _, l := range []struct {
			name string
			raw  json.RawMessage
		}{{"level", j.Level}, {"category", j.Category}, {"subset", j.Subset}} {
			if v, ok := labelValue(l.raw); ok {
				q.Labels = append(q.Labels, l.name+"="+v)
			}
		}
		qs = append(qs, q)
		return nil
	})
	return qs, err
}

// labelValue renders a label field: a string as is, a number as written.
func labelValue(raw json.RawMessage) (string, bool) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", false
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, s != ""
	}
	return string(raw), true
}
