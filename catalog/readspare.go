package catalog

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
)

// readSpare reads r whole, leaving out on the way the spaces, tabs and
// carriage returns between JSON tokens (kept inside strings, and one
// kept where two bare words or numbers would otherwise run together, so
// that what was invalid stays invalid). Newlines are kept, so a line
// named in an error is the file's line. A catalog file is indented JSON,
// often a third spaces, and it is held whole while its tools are read:
// the spaces are never held.
//
// The buffer is sized from r's size (a file) and what its first block
// keeps, and cut to size at the end when much of it is left over.
func readSpare(r io.Reader) ([]byte, error) {
	size := int64(-1)
	if st, ok := r.(interface{ Stat() (fs.FileInfo, error) }); ok {
		if fi, err := st.Stat(); err == nil && fi.Mode().IsRegular() {
			size = fi.Size()
		}
	} else if l, ok := r.(interface{ Len() int }); ok { // bytes.Reader, strings.Reader
		size = int64(l.Len())
	}
	var w spareWriter
	var out []byte
	block := make([]byte, 256<<10)
	for {
		n, err := r.Read(block)
		if n > 0 && out == nil && size > 0 {
			// Sized from the first block's share of what is kept.
			first := w.write(nil, block[:n])
			share := float64(len(first)+1) / float64(n)
			out = append(make([]byte, 0, int64(float64(size)*share*1.02)+4096), first...)
		} else if n > 0 {
			out = w.write(out, block[:n])
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
	}
	out = w.flush(out)
	if cap(out)-len(out) > len(out)/8 {
		out = bytes.Clone(out)
	}
	return out, nil
}

// spareWriter is readSpare's state between blocks.
type spareWriter struct {
	inString, escaped bool
	spaces, newlines  int  // a run of whitespace not yet written
	last              byte // the last byte written outside whitespace
}

// write appends block to out, whitespace between tokens left out.
func (w *spareWriter) write(out, block []byte) []byte {
	for i := 0; i < len(block); i++ {
		c := block[i]
		if w.inString {
			// Copy up to the next quote or backslash at once.
			j := bytes.IndexAny(block[i:], "\"\\")
			if w.escaped {
				j = 0
			}
			if j < 0 {
				out = append(out, block[i:]...)
				w.last = block[len(block)-1]
				return out
			}
			out = append(out, block[i:i+j+1]...)
			i += j
			switch {
			case w.escaped:
				w.escaped = false
			case block[i] == '\\':
				w.escaped = true
			default:
				w.inString = false
			}
			w.last = block[i]
			continue
		}
		switch c {
		case ' ', '\t', '\r':
			w.spaces++
			continue
		case '\n':
			w.newlines++
			continue
		}
		out = w.flushBefore(out, c)
		out = append(out, c)
		w.last = c
		w.inString = c == '"'
	}
	return out
}

// flushBefore writes the pending whitespace that must stay before c: its
// newlines, or one space between two bare words.
func (w *spareWriter) flushBefore(out []byte, c byte) []byte {
	for ; w.newlines > 0; w.newlines-- {
		out = append(out, '\n')
		w.spaces = 0
	}
	if w.spaces > 0 && bare(w.last) && bare(c) {
		out = append(out, ' ')
	}
	w.spaces = 0
	return out
}

// flush writes what whitespace is pending at the end.
func (w *spareWriter) flush(out []byte) []byte {
	return w.flushBefore(out, '\n')
}

// bare reports whether c may be part of a bare JSON word or number (or of
// something that is not JSON): whitespace between two such must stay.
func bare(c byte) bool {
	switch c {
	case '{', '}', '[', ']', ',', ':', '"', 0:
		return false
	}
	return true
}
