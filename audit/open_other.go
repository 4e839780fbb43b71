//go:build !unix

package audit

// noFollow: see open_unix.go; elsewhere the log is opened as it is.
const noFollow = 0
