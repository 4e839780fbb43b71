package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// expander expands ${VAR}, ${VAR:-default} and ${file:PATH} in
// configuration strings.
// It remembers the first variable that is unset and has no default; the
// error names the variable and where it was used, never a value.
type expander struct {
	getenv func(string) string
	err    error
	// values are what references expanded to, for redaction, and vars
	// the names of the variables they came from, which no other server
	// may inherit.
	values []string
	vars   []string
	// dir anchors a relative ${file:PATH}; files are the files read.
	dir   string
	files []string
}

// maxSecretFile bounds a secret file: a token, a URL or a key, never
// more.
const maxSecretFile = 64 << 10

// ReadSecretFile reads a secret from a file ("${file:PATH}", and the
// command's --auth-token-file and $..._FILE): its content without the
// trailing newline that editors and echo add, at most 64 KiB. The error
// names the file, never its content.
func ReadSecretFile(name string) (string, error) {
	f, err := os.Open(name)
	if err != nil {
		return "", err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxSecretFile+1))
	switch {
	case err != nil:
		return "", fmt.Errorf("reading %s: %v", name, err)
	case len(data) > maxSecretFile:
		return "", fmt.Errorf("%s is larger than %d KiB; a secret file holds one value", name, maxSecretFile>>10)
	}
	return strings.TrimRight(string(data), "\r\n"), nil
}

// readFile expands ${file:PATH}: the file's content without its trailing
// newline. PATH may start with ~/ (the home folder); a relative one is
// relative to the configuration's folder. The file is a secret's, so the value is one too.
func (x *expander) readFile(name, where string) string {
	if name == "" {
		x.fail(fmt.Errorf("${file:} names no file (used in %s)", where))
		return ""
	}
	name = secretFilePath(name, x.dir)
	v, err := ReadSecretFile(name)
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err // the path is said already
		}
		x.fail(fmt.Errorf("${file:%s} (used in %s): %v", name, where, err))
		return ""
	}
	x.files = append(x.files, name)
	if v != "" {
		x.values = append(x.values, v)
	}
	return v
}

// secretFilePath is where ${file:name} reads, in a configuration in dir.
func secretFilePath(name, dir string) string {
	if rest, ok := strings.CutPrefix(name, "~/"); ok {
		if home, err := os.UserHomeDir(); err == nil {
			name = filepath.Join(home, rest)
		}
	}
	if !filepath.IsAbs(name) && dir != "" {
		name = filepath.Join(dir, name)
	}
	return name
}

// FileRefs returns the files every ${file:PATH} of a configuration's
// strings names (its data, read from file), whether or not they can be
// read: what a program that follows the configuration also follows. Data
// that is not JSON names none.
func FileRefs(data []byte, file string) []string {
	var doc any
	if json.Unmarshal(data, &doc) != nil {
		return nil
	}
	dir, err := filepath.Abs(filepath.Dir(file)) // as Parse anchors them
	if err != nil {
		return nil
	}
	var out []string
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case string:
			for rest := v; ; {
				i := strings.Index(rest, "${file:")
				if i < 0 {
					return
				}
				rest = rest[i+len("${file:"):]
				end := strings.IndexByte(rest, '}')
				if end < 0 {
					return
				}
				if name := rest[:end]; name != "" {
					out = append(out, secretFilePath(name, dir))
				}
				rest = rest[end:]
			}
		case []any:
			for _, e := range v {
				walk(e)
			}
		case map[string]any:
			for _, k := range slices.Sorted(maps.Keys(v)) {
				walk(k)
				walk(v[k])
			}
		}
	}
	walk(doc)
	return out
}

func (x *expander) fail(err error) {
	if x.err == nil {
		x.err = err
	}
}

func (x *expander) expand(s, where string) string {
	if !strings.Contains(s, "${") {
		return s
	}
	var b strings.Builder
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		end := strings.IndexByte(s[i:], '}')
		if end < 0 {
			b.WriteString(s) // an unclosed ${ is left as written
			return b.String()
		}
		b.WriteString(s[:i])
		expr := s[i+2 : i+end]
		name, def, hasDef := strings.Cut(expr, ":-")
		if file, ok := strings.CutPrefix(expr, "file:"); ok {
			b.WriteString(x.readFile(file, where))
		} else if !validVarName(name) {
			b.WriteString(s[i : i+end+1]) // not a variable reference
		} else if v := x.getenv(name); v != "" {
			b.WriteString(v)
			x.values = append(x.values, v)
			x.vars = append(x.vars, name)
		} else if hasDef {
			b.WriteString(def)
		} else if x.err == nil {
			x.err = fmt.Errorf("environment variable %s is not set (used in %s; write ${%s:-default} to give a default)", name, where, name)
		}
		s = s[i+end+1:]
	}
}

func validVarName(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		if !(r == '_' || r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || i > 0 && r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}
