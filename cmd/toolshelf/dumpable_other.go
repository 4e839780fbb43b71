//go:build !linux

package main

// hideFromSameUser does nothing where there is no PR_SET_DUMPABLE.
func hideFromSameUser() error { return nil }
