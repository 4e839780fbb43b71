package evaluate

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/toolshelf/toolshelf/catalog"
)

// maxLine bounds one JSONL record; the largest tool in the datasets is far
// smaller, and a bound keeps a corrupt file from exhausting memory.
const maxLine = 16 << 20

// ScanJSONL calls fn with every non-blank line of r and its 1-based line
// number. An error from fn is returned as a catalog.FileError at that
// line.
func ScanJSONL(r io.Reader, fn func(line []byte) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), maxLine)
	n := 0
	for sc.Scan() {
		n++
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		if err := fn(line); err != nil {
			var le *catalog.FileError
			if errors.As(err, &le) {
				le.Line += n - 1
				return le
			}
			return &catalog.FileError{Line: n, Err: err}
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return &catalog.FileError{Line: n + 1, Err: fmt.Errorf("line longer than %d bytes", maxLine)}
		}
		return err
	}
	return nil
}

// datasetTool is one line of a dataset's tools.jsonl.
type datasetTool struct {
	ID          string          `json:"id"`
	Server      string          `json:"server"`
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"input_schema"`
}

// ReadTools reads a retrieval dataset's tools.jsonl: one object per
// line with "id", "server", "name", "description" and "input_schema". Each
// becomes an entry whose Raw is the equivalent MCP tool object and whose ID
// is the dataset's id (the name when id is absent).
func ReadTools(r io.Reader) ([]catalog.Entry, error) {
	var entries []catalog.Entry
	seen := make(map[string]bool)
	err := ScanJSONL(r, func(line []byte) error {
		var t datasetTool
		if err := json.Unmarshal(line, &t); err != nil {
			return catalog.JSONError(line, err)
		}
		if t.Name == "" {
			return errors.New(`tool has no "name"`)
		}
		if t.ID == "" {
			t.ID = t.Name
		}
		if seen[t.ID] {
			return fmt.Errorf("duplicate tool id %q", t.ID)
		}
		seen[t.ID] = true
		raw, err := json.Marshal(struct {
			Name        string          `json:"name"`
			Description string          `json:"description,omitempty"`
			InputSchema json.RawMessage `json:"inputSchema,omitempty"`
		}{t.Name, t.Description, t.InputSchema})
		if err != nil {
			return fmt.Errorf("input_schema: %v", err)
		}
		e, err := catalog.ParseTool(t.Server, raw)
		if err != nil {
			return err
		}
		e.ID = t.ID
		entries = append(entries, e)
		return nil
	})
	return entries, err
}

// ReadServers reads a dataset's optional servers.jsonl: one object
// per line with "server" and "description" (and fields not used here).
func ReadServers(r io.Reader) ([]catalog.Server, error) {
	var servers []catalog.Server
	err := ScanJSONL(r, func(line []byte) error {
		var s struct {
			Server      string `json:"server"`
			Description string `json:"description"`
		}
		if err := json.Unmarshal(line, &s); err != nil {
			return catalog.JSONError(line, err)
		}
		if s.Server == "" {
			return errors.New(`server has no "server" name`)
		}
		servers = append(servers, catalog.Server{Name: s.Server, Description: s.Description})
		return nil
	})
	return servers, err
}
