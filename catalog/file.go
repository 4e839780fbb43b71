package catalog

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/toolshelf/toolshelf/internal/jsonscan"
)

// A FileError reports malformed input in a file (a catalog, a server
// configuration, a dataset), at a line when it is known: the one error
// type toolshelf uses for a position in a file, printed as file:line:
// message. Decoders that read a stream leave File empty; the caller who
// opened the file sets it.
type FileError struct {
	File string
	Line int // 0 when not known
	Err  error
}

func (e *FileError) Error() string {
	switch {
	case e.File != "" && e.Line > 0:
		return fmt.Sprintf("%s:%d: %v", e.File, e.Line, e.Err)
	case e.File != "":
		return fmt.Sprintf("%s: %v", e.File, e.Err)
	case e.Line > 0:
		return fmt.Sprintf("line %d: %v", e.Line, e.Err)
	}
	return e.Err.Error()
}

func (e *FileError) Unwrap() error { return e.Err }

// InFile returns err as a FileError of file: a FileError without a file
// gets it, any other error is wrapped.
func InFile(file string, err error) error {
	if err == nil {
		return nil
	}
	var fe *FileError
	if errors.As(err, &fe) {
		if fe.File == "" {
			c := *fe
			c.File = file
			return &c
		}
		return err
	}
	return &FileError{File: file, Err: err}
}

// ErrorAt returns a FileError for a problem at a byte offset of a file's
// data; a negative offset names no line.
func ErrorAt(file string, data []byte, offset int, err error) *FileError {
	e := &FileError{File: file, Err: err}
	if offset >= 0 {
		e.Line = lineAt(data, int64(offset))
	}
	return e
}

// KeyOffset returns the offset in data of the JSON key `"key":` at or
// after from, or -1: where a hand-written file's problem is, for
// ErrorAt.
func KeyOffset(data []byte, from int, key string) int {
	q, _ := json.Marshal(key)
	for i := from; i < len(data); {
		j := bytes.Index(data[i:], q)
		if j < 0 {
			return -1
		}
		j += i
		rest := bytes.TrimLeft(data[j+len(q):], " \t\r\n")
		if len(rest) > 0 && rest[0] == ':' {
			return j
		}
		i = j + 1
	}
	return -1
}

// lineAt returns the 1-based line of a byte offset in data.
func lineAt(data []byte, offset int64) int {
	if offset > int64(len(data)) {
		offset = int64(len(data))
	}
	return bytes.Count(data[:offset], []byte("\n")) + 1
}

// JSONError turns a decoding error of data into a FileError at the line
// where the JSON package reports an offset.
func JSONError(data []byte, err error) error {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return &FileError{Line: lineAt(data, syn.Offset), Err: err}
	case errors.As(err, &typ):
		return &FileError{Line: lineAt(data, typ.Offset), Err: fmt.Errorf("%s has the wrong type: want %v, got a JSON %s", fieldName(typ.Field), typ.Type, typ.Value)}
	case errors.Is(err, io.ErrUnexpectedEOF):
		return &FileError{Line: lineAt(data, int64(len(data))), Err: errors.New("unexpected end of JSON input")}
	}
	return err
}

func fieldName(f string) string {
	if f == "" {
		return "value"
	}
	return fmt.Sprintf("%q", f)
}

// fileJSON is the catalog file format: every server with its tools exactly
// as tools/list returned them.
type fileJSON struct {
	Servers []serverJSON `json:"servers"`
}

type serverJSON struct {
	Server
	Tools []rawRef `json:"tools"`
}

// rawRef is a JSON value's bytes in the data being decoded, not a copy:
// a catalog file's tools are parsed (and compacted into their own
// memory) before Decode returns, so copying each first only cost time.
// encoding/json hands UnmarshalJSON a slice of the data given to
// json.Unmarshal; rawRef must not be used with a json.Decoder, which
// reuses its buffer.
type rawRef []byte

func (r *rawRef) UnmarshalJSON(b []byte) error { *r = b; return nil }

func (r rawRef) MarshalJSON() ([]byte, error) { return r, nil }

var newline = []byte{'\n'}

// Decode reads a catalog file:
//
//	{"servers": [{"name": "github", "protocolVersion": "...", "instructions": "...",
//	              "tools": [<tool objects as tools/list returned them>]}]}
//
// Errors carry the line they were found at ([FileError]).
func Decode(r io.Reader) (*Catalog, error) {
	data, err := readSpare(r)
	if err != nil {
		return nil, err
	}
	f, fast := decodeValid(data)
	if !fast {
		if err := decodeSlow(data, &f); err != nil {
			return nil, err
		}
	}
	if f.Servers == nil {
		return nil, &FileError{Line: 1, Err: errors.New(`no "servers" array`)}
	}
	n := 0
	for _, s := range f.Servers {
		n += len(s.Tools)
	}
	entries := make([]Entry, 0, n)
	servers := make([]Server, 0, len(f.Servers))
	// A tool is kept compacted (a file's spaces are often a third of it).
	// Read the fast way, its bytes are a slice of data, and it is
	// compacted where it lies: data is read front to back and the
	// compacted tools written behind the reading, at w, so the entries
	// keep slices of the one buffer already held rather than copies as
	// large as the rest. What lies before w is overwritten, so a tool's
	// line is counted before it is compacted. Read the slow way, a tool's
	// bytes are a copy, compacted into a buffer of its own.
	w, read, line := 0, 0, 1
	for i, s := range f.Servers {
		if s.Name == "" {
			return nil, fmt.Errorf("server %d has no name", i+1)
		}
		servers = append(servers, s.Server)
		for j, raw := range s.Tools {
			var dst []byte
			if fast {
				start := cap(data) - cap(raw) // raw is data[start:...]
				line += bytes.Count(data[read:start], newline)
				read, dst = start+len(raw), data[w:w]
			}
			compact := jsonscan.Compact(dst, raw)
			e, err := parseCompact(s.Name, compact[:len(compact):len(compact)])
			if err != nil {
				if !fast {
					line = lineAt(data, int64(bytes.Index(data, raw)))
				}
				return nil, &FileError{Line: line, Err: fmt.Errorf("server %q, tool %d: %v", s.Name, j+1, err)}
			}
			if fast {
				line += bytes.Count(raw, newline)
				w += len(compact)
			}
			entries = append(entries, e)
		}
	}
	return newCatalog(entries[:0], entries, servers), nil // entries are Decode's own
}

// decodeValid reads a catalog file of the usual shape in one walk, after
// one validation, with jsonscan: a file of 100,000 tools is hundreds of
// megabytes, and encoding/json was most of reading it. ok is false when
// the file is not valid JSON or not of the usual shape (an unknown field,
// a value of the wrong type, null); decodeSlow then decodes it, and says
// what is wrong.
func decodeValid(data []byte) (f fileJSON, ok bool) {
	if !jsonscan.Valid(data) {
		return f, false
	}
	s := jsonscan.New(data)
	ok = true
	isObject := s.Object(func(key string) {
		if !ok || !strings.EqualFold(key, "servers") {
			ok = false
			return
		}
		f.Servers = []serverJSON{}
		ok = s.Array(func() {
			if !ok {
				return
			}
			var sv serverJSON
			isObject := s.Object(func(key string) {
				if !ok {
					return
				}
				if strings.EqualFold(key, "tools") {
					sv.Tools = []rawRef{}
					ok = s.Array(func() { sv.Tools = append(sv.Tools, rawRef(s.Value())) })
					return
				}
				p := sv.Server.field(key)
				if p == nil {
					ok = false
					return
				}
				*p, ok = s.String()
			})
			ok = ok && isObject
			f.Servers = append(f.Servers, sv)
		}) && ok
	})
	return f, ok && isObject && f.Servers != nil
}

// decodeSlow decodes a catalog file with encoding/json, for the files
// decodeValid leaves, and names what is wrong with one.
func decodeSlow(data []byte, f *fileJSON) error {
	if err := json.Unmarshal(data, f); err != nil {
		if end := firstValueEnd(data); end < len(data) && json.Valid(data[:end]) {
			return &FileError{Line: lineAt(data, int64(end)), Err: errors.New("data after the catalog object")}
		}
		return JSONError(data, err)
	}
	if field := unknownField(data); field != "" {
		q, _ := json.Marshal(field)
		at := max(bytes.Index(data, q), 0)
		return &FileError{Line: lineAt(data, int64(at)), Err: fmt.Errorf("unknown field %s (a catalog file has \"servers\", each with \"name\" and \"tools\")", q)}
	}
	return nil
}

// Encode writes the catalog in the format Decode reads. Tools are written
// as received, grouped by server in server order, each server's tools in
// qualified-name order. Tools without a server are not written.
func (c *Catalog) Encode(w io.Writer) error {
	var f fileJSON
	idx := make(map[string]int)
	for _, s := range c.servers {
		idx[s.Name] = len(f.Servers)
		f.Servers = append(f.Servers, serverJSON{Server: s, Tools: []rawRef{}})
	}
	for i := range c.entries {
		e := &c.entries[i]
		if e.Server == "" || e.Unverified {
			continue
		}
		j, ok := idx[e.Server]
		if !ok {
			j = len(f.Servers)
			idx[e.Server] = j
			f.Servers = append(f.Servers, serverJSON{Server: Server{Name: e.Server}})
		}
		f.Servers[j].Tools = append(f.Servers[j].Tools, rawRef(e.Raw))
	}
	if f.Servers == nil {
		f.Servers = []serverJSON{}
	}
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(f)
}
