package main

import (
	"os"
	"path/filepath"

	"github.com/toolshelf/toolshelf/catalog"
	"github.com/toolshelf/toolshelf/evaluate"
)

// loadCatalogFile reads a catalog file, or the tools of a dataset folder
// (one with tools.jsonl). Problems with the file's content are usage
// errors naming the file and line.
func loadCatalogFile(path string) (*catalog.Catalog, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, usagef("catalog: %v", err)
	}
	if fi.IsDir() {
		if _, err := os.Stat(filepath.Join(path, "tools.jsonl")); err != nil {
			return nil, usagef("catalog %s is a folder without tools.jsonl", path)
		}
		f, err := os.Open(filepath.Join(path, "tools.jsonl"))
		if err != nil {
			return nil, err
		}
		defer f.Close()
		entries, err := evaluate.ReadTools(f)
		if err != nil {
			return nil, fileError(filepath.Join(path, "tools.jsonl"), err)
		}
		return catalog.New(entries, nil), nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, usagef("catalog: %v", err)
	}
	defer f.Close()
	c, err := catalog.Decode(f)
	if err != nil {
		return nil, fileError(path, err)
	}
	return c, nil
}

// fileError names the file (and line) a content error was found in.
func fileError(path string, err error) error {
	return &usageError{catalog.InFile(path, err)}
}

// loadDataset reads a dataset folder; its problems are usage errors.
func loadDataset(dir string) (*evaluate.Dataset, error) {
	ds, err := evaluate.Load(dir)
	return ds, badInput(err)
}
