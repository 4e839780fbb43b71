//go:build !unix

package main

// noFollow: see nofollow_unix.go; elsewhere the file is opened as it is.
const noFollow = 0
